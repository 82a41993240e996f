import { describe, expect, it } from "vitest";

import { tickLabel, timeTicks } from "./ticks";

describe("tickLabel", () => {
  it.each([
    [0, 1_000_000, "0 s"],
    [2_500_000, 500_000, "2.5 s"],
    [2_500_000, 100_000, "2.5 s"],
    [2_000_000, 1_000_000, "2 s"],
    [1_250_000, 50_000, "1.25 s"],
    [1_250_100, 100, "1.2501 s"],
    [900_000, 50_000, "900 ms"],
    [1_500, 500, "1.5 ms"],
    [1_500, 100, "1.5 ms"],
    [1_520, 20, "1520 µs"],
    [15, 5, "15 µs"],
    [1.5, 0.5, "1.5 µs"],
    [90_000_000, 60_000_000, "1:30"],
    [3_723_000_000, 600_000_000, "1:02:03"],
    [0, 60_000_000, "0:00"],
    [30_000_000, 10_000_000, "30 s"],
    [-2_000_000, 1_000_000, "-2 s"],
  ])("%s µs at a step of %s µs reads %s", (offset, step, label) => {
    expect(tickLabel(offset, step)).toBe(label);
  });

  it("reads a whole axis in seconds once it reaches one second", () => {
    expect(tickLabel(900_000, 50_000, 1_100_000)).toBe("0.90 s");
  });
});

describe("timeTicks", () => {
  it.each([
    ["10 s over 1000 px", { t0: 0, t1: 10_000_000 }, 1_000, 0, 1_000_000, ["0 s", "1 s", "2 s"]],
    ["10 s over 300 px", { t0: 0, t1: 10_000_000 }, 300, 0, 2_000_000, ["0 s", "2 s", "4 s"]],
    ["1 ms over 1000 px", { t0: 0, t1: 1_000 }, 1_000, 0, 100, ["0.0 ms", "0.1 ms", "0.2 ms"]],
    ["relative to the origin", { t0: 5_000_000, t1: 6_000_000 }, 1_000, 4_000_000, 100_000, ["1.0 s", "1.1 s"]],
    ["past a second, in seconds", { t0: 1_000_000, t1: 1_400_000 }, 1_200, 0, 20_000, ["1.00 s", "1.02 s"]],
    ["an hour over 800 px", { t0: 0, t1: 3_600_000_000 }, 800, 0, 300_000_000, ["0:00", "5:00", "10:00"]],
    ["a minute over 1000 px", { t0: 0, t1: 60_000_000 }, 1_000, 0, 5_000_000, ["0 s", "5 s", "10 s"]],
  ])("%s", (_name, window, width, origin, step, firstLabels) => {
    const { step: chosen, ticks } = timeTicks(window, width, origin);
    expect(chosen).toBe(step);
    expect(ticks.slice(0, firstLabels.length).map((t) => t.label)).toEqual(firstLabels);
  });

  it("reads deep zooms into a long trace from a base tick shown once", () => {
    const origin = 1_700_000_000_000_000;
    const window = { t0: origin + 987_654_321, t1: origin + 987_654_421 };
    // At 150 px, full labels ("987654400 µs") leave room for one tick only.
    const { ticks, base, step } = timeTicks(window, 150, origin);
    expect(step).toBe(50);
    expect(base?.label).toBe("987.65430 s");
    expect(ticks.map((t) => t.label)).toEqual(["+50 µs", "+100 µs"]);
  });

  it.each([
    [{ t0: 1_700_000_000_000_000, t1: 1_700_000_000_000_000 }, 500],
    [{ t0: 0, t1: 1_000 }, 0],
  ])("no ticks for an empty window or canvas", (window, width) => {
    expect(timeTicks(window, width, 0).ticks).toEqual([]);
  });

  // The property the axis relies on, over many windows: labels never overlap and every tick is on screen.
  it("never lets two labels overlap", () => {
    const charPx = 6.5;
    let seed = 7;
    const random = (): number => {
      seed = (seed * 16_807) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    for (let run = 0; run < 500; run += 1) {
      const origin = 1_700_000_000_000_000;
      const t0 = origin + random() * 1e9;
      const span = 10 ** (1 + random() * 9);
      const width = 80 + random() * 2_000;
      const { ticks } = timeTicks({ t0, t1: t0 + span }, width, origin, { charPx, gapPx: 16 });
      expect(ticks.length).toBeGreaterThan(0);
      for (let i = 1; i < ticks.length; i += 1) {
        const previous = ticks[i - 1];
        const current = ticks[i];
        if (previous === undefined || current === undefined) throw new Error("unreachable");
        const room = Math.max(previous.label.length, current.label.length) * charPx + 16;
        expect(current.x - previous.x).toBeGreaterThanOrEqual(room - 1e-6);
      }
      for (const tick of ticks) {
        expect(tick.x).toBeGreaterThanOrEqual(-1e-6);
        expect(tick.x).toBeLessThanOrEqual(width + 1e-6);
      }
    }
  });
});
