/**
 * Time-axis ticks that never overlap: steps of 1, 2 or 5 x 10^k microseconds, the smallest whose labels
 * (estimated at charPx per character plus a gap) fit between two ticks. Labels are relative to an origin
 * (the trace's first operation), which is what a DBA reads: "12.5 s into the restore".
 */

import { type TimeWindow, timeToX } from "./viewport";

export interface Tick {
  t: number;
  x: number;
  label: string;
}

export interface Ticks {
  step: number;
  ticks: Tick[];
  /**
   * Set when the window is so deep inside a long trace that full labels ("1234.567891 s") would not fit:
   * the ticks then read "+20 µs" from this tick, which the axis shows once in full.
   */
  base: Tick | null;
}

export interface TickOptions {
  /** Average width of one label character in CSS pixels (11 px UI font: ~6.5). */
  charPx?: number;
  /** Space kept free between two labels. */
  gapPx?: number;
}

const NICE = [1, 2, 5] as const;
const SECOND = 1_000_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
// From ten seconds on, steps a clock reader expects (30 s, 5 min, 15 min...) instead of 50 s or 500 s.
const CLOCK_STEPS = [
  10 * SECOND, 20 * SECOND, 30 * SECOND,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR,
];

/** The nice steps from small to large, from the first one at least `from`. */
function* niceSteps(from: number): Generator<number> {
  let power = 10 ** Math.floor(Math.log10(Math.max(from, 1e-3)));
  while (power < 10 * SECOND) {
    for (const m of NICE) {
      const step = m * power;
      if (step >= from && step < 10 * SECOND) yield step;
    }
    power *= 10;
  }
  for (const step of CLOCK_STEPS) if (step >= from) yield step;
  for (let days = 2; ; days *= 2) yield days * 24 * HOUR;
}

/** Decimals needed to tell apart ticks `step` apart when shown in `unit`. */
function decimalsFor(step: number, unit: number): number {
  return Math.max(0, Math.ceil(-Math.log10(step / unit) - 1e-9));
}

/**
 * A tick label for `offsetUs` from the origin, as precise as the step needs and no more. `reachUs` is the
 * largest offset on the same axis: from one second on, the whole axis reads in seconds ("1.05 s"), so
 * the unit does not change halfway along it.
 */
export function tickLabel(offsetUs: number, stepUs: number, reachUs: number = Math.abs(offsetUs)): string {
  const value = Math.abs(offsetUs) < stepUs / 1e6 ? 0 : offsetUs;
  if (stepUs >= MINUTE) {
    const totalSeconds = Math.round(value / 1e6);
    const sign = totalSeconds < 0 ? "-" : "";
    const abs = Math.abs(totalSeconds);
    const hours = Math.floor(abs / 3600);
    const minutes = Math.floor((abs % 3600) / 60);
    const seconds = String(abs % 60).padStart(2, "0");
    return hours > 0
      ? `${sign}${hours}:${String(minutes).padStart(2, "0")}:${seconds}`
      : `${sign}${minutes}:${seconds}`;
  }
  if (stepUs >= 100_000 || reachUs >= SECOND) return `${(value / 1e6).toFixed(Math.min(decimalsFor(stepUs, 1e6), 6))} s`;
  if (stepUs >= 100) return `${(value / 1e3).toFixed(decimalsFor(stepUs, 1e3))} ms`;
  return `${value.toFixed(decimalsFor(stepUs, 1))} µs`;
}

function labelWidth(label: string, charPx: number): number {
  return label.length * charPx;
}

interface LabelledTicks {
  step: number;
  ticks: Tick[];
}

/** The smallest nice step whose labels (from `label`) fit between two ticks. */
function fitTicks(
  window: TimeWindow,
  widthPx: number,
  origin: number,
  charPx: number,
  gapPx: number,
  label: (offsetUs: number, step: number) => string,
): LabelledTicks {
  const usPerPx = (window.t1 - window.t0) / widthPx;
  // Start from the spacing a short label ("0 s") needs, then grow until the longest label fits.
  for (const step of niceSteps(usPerPx * (3 * charPx + gapPx))) {
    const first = Math.ceil((window.t0 - origin) / step) * step + origin;
    const ticks: Tick[] = [];
    let widest = 0;
    for (let i = 0; ; i += 1) {
      const t = first + i * step;
      if (t > window.t1) break;
      const text = label(t - origin, step);
      widest = Math.max(widest, labelWidth(text, charPx));
      ticks.push({ t, x: timeToX(t, window, widthPx), label: text });
    }
    if (step / usPerPx >= widest + gapPx) return { step, ticks };
  }
  return { step: 0, ticks: [] };
}

/** Ticks of the smallest nice step whose labels do not overlap (see Ticks.base for deep zooms). */
export function timeTicks(window: TimeWindow, widthPx: number, origin: number, options: TickOptions = {}): Ticks {
  const charPx = options.charPx ?? 6.5;
  const gapPx = options.gapPx ?? 16;
  if (!(window.t1 - window.t0 > 0) || widthPx <= 0) return { step: 0, ticks: [], base: null };
  const reach = Math.max(Math.abs(window.t0 - origin), Math.abs(window.t1 - origin));
  const full = fitTicks(window, widthPx, origin, charPx, gapPx, (offset, step) => tickLabel(offset, step, reach));
  if (full.ticks.length >= 2) return { ...full, base: null };
  // Labels relative to the window's first whole tick, which is shown once in full.
  const probe = fitTicks(window, widthPx, window.t0, charPx, gapPx, (offset, step) => `+${tickLabel(offset, step)}`);
  const baseTime = Math.floor((window.t0 - origin) / Math.max(probe.step, 1)) * probe.step + origin;
  const relative = fitTicks(window, widthPx, baseTime, charPx, gapPx, (offset, step) => `+${tickLabel(offset, step)}`);
  const base = { t: baseTime, x: timeToX(baseTime, window, widthPx), label: `${((baseTime - origin) / SECOND).toFixed(decimalsFor(relative.step, SECOND))} s` };
  return { ...relative, base };
}
