/** Durations a manager types and reads: "90s", "15 min", "1h 30m" <-> seconds. */

const UNITS: Record<string, number> = {
  s: 1,
  sec: 1,
  secs: 1,
  second: 1,
  seconds: 1,
  m: 60,
  min: 60,
  mins: 60,
  minute: 60,
  minutes: 60,
  h: 3600,
  hr: 3600,
  hrs: 3600,
  hour: 3600,
  hours: 3600,
  d: 86400,
  day: 86400,
  days: 86400,
};

export type Parsed = { seconds: number } | { error: string };

/** "15m" -> 900, "1h 30m" -> 5400, "90 s" -> 90; a number without a unit, an unknown unit or junk is an error. */
export function parseDuration(text: string): Parsed {
  const trimmed = text.trim().toLowerCase();
  if (trimmed === "") return { error: "is empty: write a time such as 15m, 1h 30m or 90s" };
  const parts = /^(?:\s*\d+(?:\.\d+)?\s*[a-z]+\s*)+$/.exec(trimmed);
  if (parts === null) return { error: `'${text.trim()}' is not a time: write it with units, such as 15m, 1h 30m or 90s` };
  let seconds = 0;
  for (const match of trimmed.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]+)/g)) {
    const unit = UNITS[match[2] ?? ""];
    if (unit === undefined) return { error: `'${match[2] ?? ""}' is not a unit: use s, m, h or d` };
    seconds += Number(match[1]) * unit;
  }
  return { seconds: Math.round(seconds) };
}

/** 900 -> "15 min", 5400 -> "1 h 30 min", 90 -> "1 min 30 s", 86400 -> "1 d". */
export function formatDurationText(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  if (seconds < 10) return `${String(Number(seconds.toFixed(1)))} s`;
  let rest = Math.round(seconds);
  const parts: string[] = [];
  for (const [size, unit] of [
    [86400, "d"],
    [3600, "h"],
    [60, "min"],
    [1, "s"],
  ] as const) {
    if (rest >= size) {
      parts.push(`${String(Math.floor(rest / size))} ${unit}`);
      rest %= size;
    }
  }
  return parts.slice(0, 2).join(" ");
}

/** The same duration as an input shows it: 5400 -> "1h 30m". */
export function durationInput(seconds: number): string {
  const parts: string[] = [];
  let rest = seconds;
  for (const [size, unit] of [
    [86400, "d"],
    [3600, "h"],
    [60, "m"],
    [1, "s"],
  ] as const) {
    if (rest >= size) {
      parts.push(`${String(Math.floor(rest / size))}${unit}`);
      rest %= size;
    }
  }
  return parts.join(" ") || "0s";
}

/** When, relative to now: "just now", "5 min ago", "in 2 h", "3 d ago". */
export function relativeTime(at: string | number, now: number): string {
  const seconds = ((typeof at === "number" ? at : Date.parse(at)) - now) / 1000;
  if (!Number.isFinite(seconds)) return "–";
  if (Math.abs(seconds) < 45) return "just now";
  const magnitude = Math.abs(seconds);
  const [size, unit] = magnitude < 3600 ? [60, "min"] : magnitude < 86400 ? [3600, "h"] : [86400, "d"];
  const text = `${String(Math.round(magnitude / size))} ${unit}`;
  return seconds < 0 ? `${text} ago` : `in ${text}`;
}
