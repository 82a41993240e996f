/** The trends charts' data: runs as points per method, the domains and the colours. Pure; the components draw. */

export interface RunLike {
  job_id: number | null;
  at: string;
  status: string;
  method: string;
  duration_s: number | null;
  mb_per_s: number | null;
  regression: boolean;
  drill: boolean;
}

export type Metric = "duration" | "throughput";

export interface ChartPoint {
  x: number; // ms since the epoch
  y: number;
  method: string;
  failed: boolean;
  regression: boolean;
  drill: boolean;
  jobId: number | null;
}

/** Points of one metric: durations of every run that has one (failed ones marked), throughput of successful
 * runs only (a failed run moved a part of its bytes, which is no throughput). Oldest first. */
export function chartPoints(runs: readonly RunLike[], metric: Metric): ChartPoint[] {
  const points: ChartPoint[] = [];
  for (const run of runs) {
    const failed = run.status !== "succeeded";
    const y = metric === "duration" ? run.duration_s : failed ? null : run.mb_per_s;
    if (y === null || !Number.isFinite(y)) continue;
    points.push({
      x: Date.parse(run.at),
      y,
      method: run.method,
      failed,
      regression: run.regression,
      drill: run.drill,
      jobId: run.job_id,
    });
  }
  return points.sort((a, b) => a.x - b.x);
}

/** Methods, the most used first (ties by name), so colours stay put as runs are added. */
export function methodsOf(runs: readonly RunLike[]): string[] {
  const counts = new Map<string, number>();
  for (const run of runs) counts.set(run.method, (counts.get(run.method) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([method]) => method);
}

/** Successful points of each method in time order: the lines of the chart. */
export function linesOf(points: readonly ChartPoint[]): Map<string, ChartPoint[]> {
  const lines = new Map<string, ChartPoint[]>();
  for (const point of points) {
    if (point.failed) continue;
    const line = lines.get(point.method) ?? [];
    line.push(point);
    lines.set(point.method, line);
  }
  return lines;
}

/** From zero to a little above the highest value (or the reference line, such as the RTO), never empty. */
export function yDomain(points: readonly ChartPoint[], reference?: number | null): [number, number] {
  const highest = Math.max(0, ...points.map((p) => p.y), reference ?? 0);
  return [0, highest > 0 ? highest * 1.1 : 1];
}

/** The window the charts show: `days` back from `now`, narrowed to the runs when they all fall in a small part
 * of it (runs of the last hour spread over the chart instead of piling up at its right edge), with a margin of a
 * tenth of their span, a minute at least. */
export function timeDomain(now: number, days: number, points: readonly ChartPoint[] = []): [number, number] {
  const start = now - days * 86_400_000;
  if (points.length === 0) return [start, now];
  const earliest = Math.min(...points.map((p) => p.x));
  const margin = Math.max((now - earliest) * 0.1, 60_000);
  return [Math.max(start, earliest - margin), now];
}

// Colour-blind-safe (Okabe-Ito), readable on both themes; failures use the theme's --bad instead.
const METHOD_COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"];

export function methodColour(index: number): string {
  return METHOD_COLOURS[index % METHOD_COLOURS.length] ?? "#999999";
}

export function pointTitle(point: ChartPoint, value: string): string {
  const what = point.jobId === null ? "drill without a job" : `${point.drill ? "drill" : "restore"} #${String(point.jobId)}`;
  const flags = [point.failed ? "failed" : null, point.regression ? "regression" : null].filter((f) => f !== null);
  const when = new Date(point.x).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
  return `${what} · ${point.method} · ${value} · ${when}${flags.length > 0 ? ` · ${flags.join(", ")}` : ""}`;
}
