import { describe, expect, it } from "vitest";

import { type Bar, bucketBars, mergeBars, operationBars, spanSegments, thinPoints } from "./lod";

const bar = (x: number, w: number, kind: Bar["kind"] = "read", busy = 1): Bar => ({
  x,
  w,
  kind,
  busy,
  count: 1,
  bytes: 10,
  first: 0,
});
const round = (n: number): number => Math.round(n * 1e6) / 1e6;
const shape = (bars: Bar[]): [number, number, string][] => bars.map((b) => [round(b.x), round(b.w), b.kind]);

describe("mergeBars", () => {
  it.each([
    ["nothing", [], []],
    ["apart bars stay apart", [bar(0, 3), bar(10, 3)], [[0, 3, "read"], [10, 3, "read"]]],
    ["touching bars of one kind join", [bar(0, 3), bar(3.5, 3)], [[0, 6.5, "read"]]],
    ["touching wide bars of two kinds stay apart", [bar(0, 3), bar(3, 3, "write")], [[0, 3, "read"], [3, 3, "write"]]],
    ["sub-pixel bars in one column join, the widest kind wins", [bar(5.1, 0.2, "write"), bar(5.4, 0.5, "fsync")], [[5.1, 0.8, "fsync"]]],
    ["a thin bar next to a wide one joins it", [bar(0, 5, "read"), bar(5.2, 0.5, "fsync")], [[0, 5.7, "read"]]],
    ["clipped to the canvas", [bar(-5, 10), bar(95, 10)], [[0, 5, "read"], [95, 5, "read"]]],
    ["outside the canvas is dropped", [bar(-20, 5), bar(100, 5), bar(150, 5)], []],
  ])("%s", (_name, input, expected) => {
    expect(shape(mergeBars(input, 100))).toEqual(expected);
  });

  it("adds up counts and bytes and weights busy by width", () => {
    const [merged] = mergeBars([bar(0, 1, "read", 1), bar(0.5, 1, "read", 0)], 10);
    expect(merged).toMatchObject({ count: 2, bytes: 20, busy: 0.5, w: 1.5 });
  });

  // The promise of level of detail: whatever comes in, no more bars than pixel columns.
  it.each([100, 1_000, 100_000])("never more bars than pixels for %s random operations", (n) => {
    let seed = n;
    const random = (): number => {
      seed = (seed * 16_807) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    const kinds: Bar["kind"][] = ["read", "write", "fsync", "open", "close", "other"];
    const input: Bar[] = [];
    for (let i = 0; i < n; i += 1) input.push(bar(random() * 300, random() * 6, kinds[i % 6]));
    input.sort((a, b) => a.x - b.x);
    const merged = mergeBars(input, 300);
    expect(merged.length).toBeLessThanOrEqual(300);
    const columns = merged.map((b) => Math.floor(b.x));
    expect(new Set(columns).size).toBe(columns.length);
  });
});

describe("bucketBars", () => {
  it("places buckets by index from the window start", () => {
    const buckets = [
      { i: 0, busy: 0.5, kind: "read", count: 3, bytes: 100 },
      { i: 4, busy: 1, kind: "fsync", count: 1, bytes: 0 },
    ];
    const bars = bucketBars(buckets, 1_000, 100, { t0: 1_000, t1: 2_000 }, 100);
    expect(bars.map((b) => [b.x, b.w, b.kind, b.busy, b.first])).toEqual([
      [0, 10, "read", 0.5, 0],
      [40, 10, "fsync", 1, 1],
    ]);
  });

  it("maps unknown kinds to other", () => {
    const bars = bucketBars([{ i: 0, busy: 1, kind: "mmap", count: 1, bytes: 0 }], 0, 10, { t0: 0, t1: 100 }, 100);
    expect(bars[0]?.kind).toBe("other");
  });
});

describe("operationBars", () => {
  it.each([
    [
      "a long and a short operation",
      [
        { start_us: 100, duration_us: 200, kind: "write", size: 16_384 },
        { start_us: 500, duration_us: 1, kind: "fsync", size: null },
      ],
      [[10, 20, "write"], [50, 1, "fsync"]],
    ],
    ["unsorted input is sorted", [
      { start_us: 500, duration_us: 100, kind: "read" },
      { start_us: 0, duration_us: 100, kind: "open" },
    ], [[0, 10, "open"], [50, 10, "read"]]],
  ])("%s", (_name, operations, expected) => {
    expect(shape(operationBars(operations, { t0: 0, t1: 1_000 }, 100))).toEqual(expected);
  });

  it("remembers which operation a lone bar is", () => {
    const bars = operationBars(
      [
        { start_us: 900, duration_us: 10, kind: "read" },
        { start_us: 100, duration_us: 10, kind: "write" },
      ],
      { t0: 0, t1: 1_000 },
      100,
    );
    expect(bars.map((b) => b.first)).toEqual([1, 0]);
  });
});

describe("spanSegments", () => {
  it.each([
    ["one state", [{ start_us: 0, duration_us: 500, label: "running" }], [[0, 50, "running"]]],
    [
      "same state back to back joins",
      [
        { start_us: 0, duration_us: 100, label: "running" },
        { start_us: 100, duration_us: 100, label: "running" },
      ],
      [[0, 20, "running"]],
    ],
    [
      "different states stay apart",
      [
        { start_us: 0, duration_us: 100, label: "running" },
        { start_us: 100, duration_us: 100, label: "sleeping" },
      ],
      [[0, 10, "running"], [10, 10, "sleeping"]],
    ],
    ["outside is dropped", [{ start_us: 2_000, duration_us: 100, label: "running" }], []],
  ])("%s", (_name, spans, expected) => {
    expect(spanSegments(spans, { t0: 0, t1: 1_000 }, 100).map((s) => [s.x, s.w, s.label])).toEqual(expected);
  });
});

describe("thinPoints", () => {
  it("keeps the lowest and highest point of each pixel column, in time order", () => {
    const points: [number, number][] = [
      [0, 5],
      [1, 9],
      [2, 1],
      [3, 4],
      [10, 7],
    ];
    expect(thinPoints(points, { t0: 0, t1: 100 }, 10)).toEqual([
      [0.1, 9],
      [0.2, 1],
      [1, 7],
    ]);
  });
});
