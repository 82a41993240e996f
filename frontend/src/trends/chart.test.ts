import { describe, expect, it } from "vitest";

import { type RunLike, chartPoints, linesOf, methodColour, methodsOf, timeDomain, yDomain } from "./chart";

function run(jobId: number | null, at: string, fields: Partial<RunLike> = {}): RunLike {
  return {
    job_id: jobId,
    at,
    status: "succeeded",
    method: "loader · mysqldump",
    duration_s: 10,
    mb_per_s: 50,
    regression: false,
    drill: true,
    ...fields,
  };
}

const RUNS = [
  run(3, "2026-03-03T00:00:00Z", { duration_s: 30, mb_per_s: 20, regression: true }),
  run(1, "2026-03-01T00:00:00Z"),
  run(2, "2026-03-02T00:00:00Z", { status: "failed", duration_s: 4, mb_per_s: null }),
  run(null, "2026-03-02T12:00:00Z", { status: "failed", duration_s: null, mb_per_s: null }),
  run(4, "2026-03-04T00:00:00Z", { method: "mysql · mysqldump", duration_s: 60, mb_per_s: 8 }),
];

describe("chartPoints", () => {
  it("durations of every run that has one, failed ones marked, oldest first", () => {
    expect(chartPoints(RUNS, "duration").map((p) => [p.jobId, p.y, p.failed, p.regression])).toEqual([
      [1, 10, false, false],
      [2, 4, true, false],
      [3, 30, false, true],
      [4, 60, false, false],
    ]);
  });

  it("throughput of successful runs only", () => {
    expect(chartPoints(RUNS, "throughput").map((p) => [p.jobId, p.y])).toEqual([
      [1, 50],
      [3, 20],
      [4, 8],
    ]);
  });
});

describe("methods and lines", () => {
  it("the most used method first, so it keeps the first colour", () => {
    expect(methodsOf(RUNS)).toEqual(["loader · mysqldump", "mysql · mysqldump"]);
  });

  it("lines join the successful runs of each method", () => {
    const lines = linesOf(chartPoints(RUNS, "duration"));
    expect([...lines].map(([method, points]) => [method, points.map((p) => p.jobId)])).toEqual([
      ["loader · mysqldump", [1, 3]],
      ["mysql · mysqldump", [4]],
    ]);
  });

  it("colours cycle", () => {
    expect(methodColour(0)).toBe(methodColour(8));
    expect(methodColour(0)).not.toBe(methodColour(1));
  });
});

describe("domains", () => {
  it.each([
    [[10, 60], undefined, [0, 66]],
    [[10, 60], 120, [0, 132]],
    [[], null, [0, 1]],
    [[0], undefined, [0, 1]],
  ] as const)("values %j with reference %s -> %j", (values, reference, domain) => {
    const points = values.map((y, i) => ({ x: i, y, method: "m", failed: false, regression: false, drill: false, jobId: i }));
    const [low, high] = yDomain(points, reference);
    expect(low).toBe(domain[0]);
    expect(high).toBeCloseTo(domain[1]);
  });

  const now = Date.parse("2026-03-31T00:00:00Z");
  const at = (iso: string) => ({ x: Date.parse(iso), y: 1, method: "m", failed: false, regression: false, drill: false, jobId: 1 });

  it.each([
    // No run: the whole window, ending now.
    [[], "2026-03-01T00:00:00.000Z"],
    // Runs spread over the window keep it whole.
    [[at("2026-03-02T00:00:00Z")], "2026-03-01T00:00:00.000Z"],
    // Runs of the last 10 hours: the chart starts an hour (a tenth) before the first.
    [[at("2026-03-30T14:00:00Z"), at("2026-03-30T20:00:00Z")], "2026-03-30T13:00:00.000Z"],
    // Runs of the last minute: at least a minute of margin.
    [[at("2026-03-30T23:59:50Z")], "2026-03-30T23:58:50.000Z"],
  ])("runs %j -> from %s", (points, start) => {
    const [from, to] = timeDomain(now, 30, points);
    expect(new Date(from).toISOString()).toBe(start);
    expect(to).toBe(now);
  });
});
