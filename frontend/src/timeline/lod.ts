/**
 * Level of detail: what the API sends (per-bucket summaries or raw operations) turned into rectangles in
 * pixel space, merged so that a lane never draws more rectangles than the canvas has pixel columns.
 */

import { type Kind, asKind } from "./kinds";
import { type TimeWindow, timeToX } from "./viewport";

/** One drawable bar: x and width in CSS pixels, what it shows, and which input items it covers. */
export interface Bar {
  x: number;
  w: number;
  kind: Kind;
  /** 0..1: how much of the bar the thread was inside an operation (1 for raw operations). */
  busy: number;
  count: number;
  bytes: number;
  /** Index of the first input item, so a hover over a single operation can show it. */
  first: number;
}

export interface BucketLike {
  i: number;
  busy: number;
  kind: string;
  count: number;
  bytes: number;
}

export interface OperationLike {
  start_us: number;
  duration_us: number;
  kind: string;
  size?: number | null;
}

/** Bars narrower than this are widened so a 3 µs fsync stays visible. */
export const MIN_BAR_PX = 1;

/**
 * Merge bars (sorted by x) so that at most one bar starts in each pixel column, and bars of the same kind
 * that touch become one. Merged bars take the kind that covers the most width, and a busy share weighted
 * by the widths of the bars merged. Bars are clipped to [0, widthPx] first; bars entirely outside are dropped.
 */
export function mergeBars(bars: readonly Bar[], widthPx: number): Bar[] {
  const out: Bar[] = [];
  let current: Bar | null = null;
  let weights = new Map<Kind, number>();
  let busyWeight = 0;
  let totalWeight = 0;

  const flush = (): void => {
    if (current === null) return;
    let best: Kind = current.kind;
    let bestWeight = -1;
    for (const [kind, weight] of weights) {
      if (weight > bestWeight) [best, bestWeight] = [kind, weight];
    }
    out.push({ ...current, kind: best, busy: totalWeight > 0 ? busyWeight / totalWeight : current.busy });
  };

  for (const bar of bars) {
    const x0 = Math.max(bar.x, 0);
    const x1 = Math.min(bar.x + bar.w, widthPx);
    if (x1 < x0 || x0 >= widthPx || bar.x + bar.w < 0) continue;
    const clipped: Bar = { ...bar, x: x0, w: x1 - x0 };
    if (current !== null) {
      const end = current.x + current.w;
      const sameColumn = Math.floor(clipped.x) <= Math.floor(current.x);
      const touchingSameKind = clipped.kind === current.kind && clipped.x - end < MIN_BAR_PX;
      const subPixelClutter = Math.floor(clipped.x) <= Math.floor(end) && (clipped.w < 2 || current.w < 2);
      if (sameColumn || touchingSameKind || subPixelClutter) {
        const newEnd = Math.max(end, x1);
        weights.set(clipped.kind, (weights.get(clipped.kind) ?? 0) + clipped.w);
        busyWeight += clipped.busy * clipped.w;
        totalWeight += clipped.w;
        // current is our own copy (made by the clip below), so it is safe to grow in place.
        current.w = newEnd - current.x;
        current.count += clipped.count;
        current.bytes += clipped.bytes;
        continue;
      }
      flush();
    }
    current = clipped;
    weights = new Map([[clipped.kind, clipped.w]]);
    busyWeight = clipped.busy * clipped.w;
    totalWeight = clipped.w;
  }
  flush();
  return out;
}

/** Per-bucket summaries as bars: bucket i spans [t0 + i * bucketUs, t0 + (i + 1) * bucketUs). */
export function bucketBars(
  buckets: readonly BucketLike[],
  windowStart: number,
  bucketUs: number,
  view: TimeWindow,
  widthPx: number,
): Bar[] {
  const bars: Bar[] = [];
  buckets.forEach((bucket, index) => {
    const start = windowStart + bucket.i * bucketUs;
    const x = timeToX(start, view, widthPx);
    const w = Math.max(timeToX(start + bucketUs, view, widthPx) - x, MIN_BAR_PX);
    bars.push({ x, w, kind: asKind(bucket.kind), busy: bucket.busy, count: bucket.count, bytes: bucket.bytes, first: index });
  });
  bars.sort((a, b) => a.x - b.x);
  return mergeBars(bars, widthPx);
}

/** Raw operations as bars, each at least MIN_BAR_PX wide, merged per pixel column. */
export function operationBars(operations: readonly OperationLike[], view: TimeWindow, widthPx: number): Bar[] {
  const bars: Bar[] = operations.map((op, index) => {
    const x = timeToX(op.start_us, view, widthPx);
    const w = Math.max(timeToX(op.start_us + op.duration_us, view, widthPx) - x, MIN_BAR_PX);
    return { x, w, kind: asKind(op.kind), busy: 1, count: 1, bytes: op.size ?? 0, first: index };
  });
  bars.sort((a, b) => a.x - b.x);
  return mergeBars(bars, widthPx);
}

/** Spans (CPU state) as coloured segments, merged per pixel column like bars. */
export interface Segment {
  x: number;
  w: number;
  label: string;
}

export function spanSegments(
  spans: readonly { start_us: number; duration_us: number; label: string }[],
  view: TimeWindow,
  widthPx: number,
): Segment[] {
  const sorted = [...spans].sort((a, b) => a.start_us - b.start_us);
  const out: Segment[] = [];
  for (const span of sorted) {
    const x0 = Math.max(timeToX(span.start_us, view, widthPx), 0);
    const x1 = Math.min(timeToX(span.start_us + span.duration_us, view, widthPx), widthPx);
    if (x1 <= 0 || x0 >= widthPx) continue;
    const w = Math.max(x1 - x0, MIN_BAR_PX);
    const last = out[out.length - 1];
    if (last !== undefined && Math.floor(x0) <= Math.floor(last.x + last.w) && (last.label === span.label || w < 1)) {
      last.w = Math.max(last.x + last.w, x0 + w) - last.x;
      continue;
    }
    out.push({ x: x0, w, label: span.label });
  }
  return out;
}

/** Counter points thinned to at most two per pixel column (min and max), for the counter tracks. */
export function thinPoints(
  points: readonly (readonly number[])[],
  view: TimeWindow,
  widthPx: number,
): [number, number][] {
  const out: [number, number][] = [];
  let column = Number.NaN;
  let low: [number, number] | null = null;
  let high: [number, number] | null = null;
  const flush = (): void => {
    if (low === null || high === null) return;
    if (low === high) out.push(low);
    else if (low[0] <= high[0]) out.push(low, high);
    else out.push(high, low);
  };
  for (const point of points) {
    const t = point[0];
    const value = point[1];
    if (t === undefined || value === undefined) continue;
    const x = timeToX(t, view, widthPx);
    const c = Math.floor(x);
    if (c !== column) {
      flush();
      column = c;
      low = [x, value];
      high = low;
      continue;
    }
    if (low !== null && value < low[1]) low = [x, value];
    if (high !== null && value > high[1]) high = [x, value];
  }
  flush();
  return out;
}
