/**
 * Viewport math for the timeline: a window [t0, t1] of trace time (integer microseconds since the epoch)
 * drawn across widthPx pixels. Pure functions, so zoom and pan are tested with plain numbers.
 */

export interface TimeWindow {
  t0: number;
  t1: number;
}

/** The whole trace: the window never leaves it (unless the trace is shorter than the smallest span). */
export interface Bounds {
  min: number;
  max: number;
}

/** The narrowest window: 10 µs across the canvas is already far below what any capture resolves. */
export const MIN_SPAN_US = 10;

export function spanOf(window: TimeWindow): number {
  return window.t1 - window.t0;
}

export function timeToX(t: number, window: TimeWindow, widthPx: number): number {
  const span = spanOf(window);
  return span <= 0 ? 0 : ((t - window.t0) / span) * widthPx;
}

export function xToTime(x: number, window: TimeWindow, widthPx: number): number {
  return widthPx <= 0 ? window.t0 : window.t0 + (x / widthPx) * spanOf(window);
}

/**
 * The window moved and resized as little as possible to fit the bounds: at least minSpan wide, at most the
 * whole trace, and inside it. A trace shorter than minSpan gets a window of minSpan centred on it.
 */
export function clampWindow(window: TimeWindow, bounds: Bounds, minSpan: number = MIN_SPAN_US): TimeWindow {
  const boundsSpan = bounds.max - bounds.min;
  if (boundsSpan <= minSpan) {
    const centre = (bounds.min + bounds.max) / 2;
    return { t0: centre - minSpan / 2, t1: centre + minSpan / 2 };
  }
  let { t0, t1 } = window;
  if (!(t1 > t0)) [t0, t1] = [Math.min(t0, t1), Math.max(t0, t1)];
  let span = t1 - t0;
  if (span < minSpan) {
    const centre = (t0 + t1) / 2;
    t0 = centre - minSpan / 2;
    span = minSpan;
  }
  span = Math.min(span, boundsSpan);
  t0 = Math.min(Math.max(t0, bounds.min), bounds.max - span);
  return { t0, t1: t0 + span };
}

/**
 * Zoom by factor (> 1 zooms in) keeping the time under the cursor where it is on screen, as Perfetto and
 * maps do. When the clamp stops the zoom, the anchor may move a little: the bounds win.
 */
export function zoomAround(
  window: TimeWindow,
  anchor: number,
  factor: number,
  bounds: Bounds,
  minSpan: number = MIN_SPAN_US,
): TimeWindow {
  if (!(factor > 0)) return window;
  const span = spanOf(window);
  const newSpan = Math.max(span / factor, minSpan);
  const share = span > 0 ? (anchor - window.t0) / span : 0.5;
  const t0 = anchor - share * newSpan;
  return clampWindow({ t0, t1: t0 + newSpan }, bounds, minSpan);
}

/** Drag by dxPx pixels: dragging right shows earlier time. */
export function panByPixels(window: TimeWindow, dxPx: number, widthPx: number, bounds: Bounds): TimeWindow {
  if (widthPx <= 0) return window;
  const shift = (-dxPx / widthPx) * spanOf(window);
  return clampWindow({ t0: window.t0 + shift, t1: window.t1 + shift }, bounds);
}

/** Move by a share of the window (keyboard A/D move by a fraction of what is on screen). */
export function panByFraction(window: TimeWindow, fraction: number, bounds: Bounds): TimeWindow {
  const shift = fraction * spanOf(window);
  return clampWindow({ t0: window.t0 + shift, t1: window.t1 + shift }, bounds);
}

/** The time range between two x positions, in either order, clipped to the canvas. */
export function rangeFromPixels(xA: number, xB: number, window: TimeWindow, widthPx: number): TimeWindow {
  const [left, right] = xA <= xB ? [xA, xB] : [xB, xA];
  const clip = (x: number): number => Math.min(Math.max(x, 0), widthPx);
  return { t0: xToTime(clip(left), window, widthPx), t1: xToTime(clip(right), window, widthPx) };
}

/**
 * Zoom factor of one wheel event. Mouse wheels send ~100 px per notch (or lines), trackpads send many
 * small deltas, and a pinch arrives as a wheel event with ctrlKey: each notch zooms about 20 %.
 */
export function wheelZoomFactor(deltaY: number, deltaMode: number, ctrlKey: boolean): number {
  const pixels = deltaMode === 1 ? deltaY * 33 : deltaMode === 2 ? deltaY * 800 : deltaY;
  const sensitivity = ctrlKey ? 0.01 : 0.002;
  const clamped = Math.max(-600, Math.min(600, pixels));
  return Math.exp(-clamped * sensitivity);
}

/** Whole microseconds for the API (it takes integers). */
export function toApiWindow(window: TimeWindow): { t0_us: number; t1_us: number } {
  const t0 = Math.floor(window.t0);
  return { t0_us: t0, t1_us: Math.max(Math.ceil(window.t1), t0 + 1) };
}
