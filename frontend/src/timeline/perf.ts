/**
 * Performance marks for measuring the timeline (bench/browser_timeline.py reads them with
 * performance.getEntriesByType). Instrumentation only: nothing drawn depends on them.
 *
 * - "timeline:drawn", a mark: the first time the lanes were drawn with window data (one per page load).
 * - "timeline:draw", a measure per canvas draw, only while `window.restorescopePerf` is true (set by the
 *   benchmark), so a page left open for hours does not fill the performance buffer.
 */

export const DRAWN_MARK = "timeline:drawn";
export const DRAW_MEASURE = "timeline:draw";

declare global {
  interface Window {
    restorescopePerf?: boolean;
  }
}

/** When a draw started, in performance.now() milliseconds. */
export function drawStarted(): number {
  return performance.now();
}

/** Records the draw that began at `started`; `withData`: it drew window data, not empty lanes. */
export function drawFinished(started: number, withData: boolean): void {
  if (withData && performance.getEntriesByName(DRAWN_MARK, "mark").length === 0) performance.mark(DRAWN_MARK);
  if (window.restorescopePerf === true) performance.measure(DRAW_MEASURE, { start: started, end: performance.now() });
}
