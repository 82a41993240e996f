/** Hit testing for the lanes canvas: which lane is under y, and which bar is under x. Pure, for tests. */

import type { LaneBox } from "./lanes";

/** The lane whose box (including half the gap around it) holds y, by binary search; null between none. */
export function laneAt(boxes: readonly LaneBox[], y: number, slackPx = 2): LaneBox | null {
  let low = 0;
  let high = boxes.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const box = boxes[middle];
    if (box === undefined) return null;
    if (y < box.y - slackPx) high = middle - 1;
    else if (y > box.y + box.height + slackPx) low = middle + 1;
    else return box;
  }
  return null;
}

export interface Span1D {
  x: number;
  w: number;
}

/**
 * The index of the bar (sorted by x, not overlapping) under x, or the nearest one within tolerancePx
 * so that a 1 px fsync can be hovered; -1 when none is close.
 */
export function barAt(bars: readonly Span1D[], x: number, tolerancePx = 3): number {
  // Last bar starting at or before x.
  let low = 0;
  let high = bars.length - 1;
  let candidate = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const bar = bars[middle];
    if (bar === undefined) break;
    if (bar.x <= x) {
      candidate = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  const distance = (index: number): number => {
    const bar = bars[index];
    if (bar === undefined) return Number.POSITIVE_INFINITY;
    if (x < bar.x) return bar.x - x;
    if (x > bar.x + bar.w) return x - (bar.x + bar.w);
    return 0;
  };
  let best = -1;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const index of [candidate, candidate + 1]) {
    const d = distance(index);
    if (d < bestDistance) [best, bestDistance] = [index, d];
  }
  return bestDistance <= tolerancePx ? best : -1;
}
