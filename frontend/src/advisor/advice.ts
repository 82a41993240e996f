/** The advisor's words and numbers as the pages show them, and where on the timeline a suggestion points (pure). */

import type { Bounds, TimeWindow } from "../timeline/viewport";

export interface Setting {
  option: string;
  value: unknown;
  previous: unknown;
}

export interface Outcome {
  speedup: number | null;
  verdict: "measuring" | "helped" | "no_effect" | "slower" | "failed";
  child_status: string;
}

export interface Record {
  applied: number;
  measured: number;
  helped: number;
  median_speedup: number | null;
}

/** An option as a DBA names it: server options without the request's path. */
export function optionName(option: string): string {
  return option.replace(/^target\.options\.(extra\.)?/, "");
}

/** A setting's value: booleans as the server shows them, nothing as the default. */
export function valueText(value: unknown): string {
  if (value === null || value === undefined) return "default";
  if (typeof value === "boolean") return value ? "ON" : "OFF";
  if (typeof value === "string" || typeof value === "number") return String(value);
  return JSON.stringify(value);
}

/** "runner: mysql → loader"; a path keeps its last part ("backup_path: …/shop-tab"). */
export function settingText(setting: Setting): string {
  const short = (value: unknown): string => {
    const text = valueText(value);
    return setting.option === "backup_path" && text.includes("/") ? `…/${text.split("/").pop() ?? text}` : text;
  };
  return `${optionName(setting.option)}: ${short(setting.previous)} → ${short(setting.value)}`;
}

export function speedupText(speedup: number): string {
  return `${speedup.toFixed(2)}x`;
}

/** What a re-run measured, in words: "1.74x faster", "no difference (0.98x)". */
export function verdictText(outcome: Outcome): string {
  if (outcome.verdict === "measuring") return outcome.child_status === "queued" ? "queued" : "running…";
  if (outcome.verdict === "failed" || outcome.speedup === null) return `re-run ${outcome.child_status}`;
  const ratio = speedupText(outcome.speedup);
  if (outcome.verdict === "helped") return `${ratio} faster`;
  if (outcome.verdict === "slower") return `slower (${ratio})`;
  return `no difference (${ratio})`;
}

export function verdictClass(outcome: Outcome): string {
  return { helped: "ok", no_effect: "warn", slower: "bad", failed: "bad", measuring: "running" }[outcome.verdict];
}

/** The rule's score over every re-run: "re-run 3 times: 2 helped, median 1.62x". */
export function recordText(record: Record): string | null {
  if (record.applied === 0) return null;
  const times = record.applied === 1 ? "once" : `${String(record.applied)} times`;
  if (record.measured === 0) return `re-run ${times}, nothing measured yet`;
  const median = record.median_speedup === null ? "" : `, median ${speedupText(record.median_speedup)}`;
  return `re-run ${times}: ${String(record.helped)} of ${String(record.measured)} helped${median}`;
}

/** The window that shows every highlighted range with a margin on each side, inside the trace. */
export function highlightWindow(ranges: readonly TimeWindow[], bounds: Bounds, margin = 0.05): TimeWindow | null {
  if (ranges.length === 0) return null;
  const t0 = Math.max(Math.min(...ranges.map((r) => r.t0)), bounds.min);
  const t1 = Math.min(Math.max(...ranges.map((r) => r.t1)), bounds.max);
  if (t1 <= t0) return null;
  const pad = (t1 - t0) * margin;
  return { t0: Math.max(bounds.min, t0 - pad), t1: Math.min(bounds.max, t1 + pad) };
}

/** Two runs on one time scale: a window relative to each run's start, in each run's own time. */
export function shiftedWindow(relative: TimeWindow, start: number): TimeWindow {
  return { t0: start + relative.t0, t1: start + relative.t1 };
}
