import { describe, expect, it } from "vitest";

import {
  type Bounds,
  type TimeWindow,
  clampWindow,
  panByFraction,
  panByPixels,
  rangeFromPixels,
  timeToX,
  toApiWindow,
  wheelZoomFactor,
  xToTime,
  zoomAround,
} from "./viewport";

const bounds: Bounds = { min: 1_000, max: 11_000 };
const w = (t0: number, t1: number): TimeWindow => ({ t0, t1 });

describe("timeToX and xToTime", () => {
  it.each([
    [1_000, w(1_000, 2_000), 100, 0],
    [1_500, w(1_000, 2_000), 100, 50],
    [2_000, w(1_000, 2_000), 100, 100],
    [500, w(1_000, 2_000), 100, -50],
    [1_500, w(1_000, 1_000), 100, 0],
  ])("t=%s in %o over %s px is x=%s", (t, window, width, x) => {
    expect(timeToX(t, window, width)).toBe(x);
    if (window.t1 > window.t0) expect(xToTime(x, window, width)).toBe(t);
  });
});

describe("clampWindow", () => {
  it.each([
    ["inside stays", w(2_000, 3_000), w(2_000, 3_000)],
    ["left of the trace moves right", w(0, 1_000), w(1_000, 2_000)],
    ["right of the trace moves left", w(10_500, 12_500), w(9_000, 11_000)],
    ["wider than the trace is the trace", w(-5_000, 50_000), w(1_000, 11_000)],
    ["narrower than 10 µs widens around its centre", w(5_000, 5_002), w(4_996, 5_006)],
    ["reversed ends are put in order", w(3_000, 2_000), w(2_000, 3_000)],
  ])("%s", (_name, input, expected) => {
    expect(clampWindow(input, bounds)).toEqual(expected);
  });

  it("centres a trace shorter than the smallest span", () => {
    expect(clampWindow(w(0, 1), { min: 100, max: 102 })).toEqual(w(96, 106));
  });
});

describe("zoomAround", () => {
  it.each([
    ["in x2 at the centre", w(1_000, 11_000), 6_000, 2, w(3_500, 8_500)],
    ["in x2 at the left edge keeps the edge", w(1_000, 11_000), 1_000, 2, w(1_000, 6_000)],
    ["in x2 at a quarter keeps the quarter", w(2_000, 6_000), 3_000, 2, w(2_500, 4_500)],
    ["out x2 stops at the trace", w(2_000, 6_000), 4_000, 0.5, w(1_000, 9_000)],
    ["out past the whole trace is the whole trace", w(1_000, 11_000), 6_000, 0.1, w(1_000, 11_000)],
    ["in x1000 stops at 10 µs", w(1_000, 11_000), 6_000, 1_000, w(5_995, 6_005)],
    ["a zero factor changes nothing", w(2_000, 6_000), 3_000, 0, w(2_000, 6_000)],
  ])("%s", (_name, window, anchor, factor, expected) => {
    expect(zoomAround(window, anchor, factor, bounds)).toEqual(expected);
  });

  it("keeps the time under the cursor at the same pixel", () => {
    const window = w(2_000, 10_000);
    const x = 300;
    const anchor = xToTime(x, window, 800);
    const zoomed = zoomAround(window, anchor, 1.7, bounds);
    expect(timeToX(anchor, zoomed, 800)).toBeCloseTo(x, 6);
  });
});

describe("panning", () => {
  it.each([
    ["drag right shows earlier time", w(5_000, 7_000), 100, 1_000, w(4_800, 6_800)],
    ["drag left shows later time", w(5_000, 7_000), -100, 1_000, w(5_200, 7_200)],
    ["stops at the start", w(1_500, 3_500), 1_000, 1_000, w(1_000, 3_000)],
    ["stops at the end", w(8_000, 10_000), -2_000, 1_000, w(9_000, 11_000)],
    ["no width, no move", w(5_000, 7_000), 100, 0, w(5_000, 7_000)],
  ])("%s", (_name, window, dx, width, expected) => {
    expect(panByPixels(window, dx, width, bounds)).toEqual(expected);
  });

  it.each([
    [w(5_000, 7_000), 0.25, w(5_500, 7_500)],
    [w(5_000, 7_000), -0.25, w(4_500, 6_500)],
    [w(1_000, 3_000), -0.5, w(1_000, 3_000)],
  ])("%o moved by %s of its span is %o", (window, fraction, expected) => {
    expect(panByFraction(window, fraction, bounds)).toEqual(expected);
  });
});

describe("rangeFromPixels", () => {
  it.each([
    [100, 300, w(100, 300)],
    [300, 100, w(100, 300)],
    [-50, 2_000, w(0, 1_000)],
  ])("x %s..%s is %o", (a, b, expected) => {
    expect(rangeFromPixels(a, b, w(0, 1_000), 1_000)).toEqual(expected);
  });
});

describe("wheelZoomFactor", () => {
  it.each([
    ["no movement", 0, 0, false, 1],
    ["one mouse notch down zooms out", 100, 0, false, Math.exp(-0.2)],
    ["one mouse notch up zooms in", -100, 0, false, Math.exp(0.2)],
    ["three lines up zoom in", -3, 1, false, Math.exp(99 * 0.002)],
    ["a pinch is stronger", -10, 0, true, Math.exp(0.1)],
    ["a flung wheel is capped", -100_000, 0, false, Math.exp(1.2)],
  ])("%s", (_name, deltaY, mode, ctrl, factor) => {
    expect(wheelZoomFactor(deltaY, mode, ctrl)).toBeCloseTo(factor, 9);
  });
});

describe("toApiWindow", () => {
  it.each([
    [w(1.5, 9.2), { t0_us: 1, t1_us: 10 }],
    [w(5, 5), { t0_us: 5, t1_us: 6 }],
  ])("%o -> %o", (window, expected) => {
    expect(toApiWindow(window)).toEqual(expected);
  });
});
