/** Operation kinds as the trace API names them, in legend order, with their colours per theme. */

export const KINDS = ["read", "write", "fsync", "open", "close", "other"] as const;
export type Kind = (typeof KINDS)[number];

export function asKind(value: string): Kind {
  return (KINDS as readonly string[]).includes(value) ? (value as Kind) : "other";
}

export const KIND_LABELS: Record<Kind, string> = {
  read: "read",
  write: "write",
  fsync: "fsync",
  open: "open",
  close: "close",
  other: "other",
};

export type Theme = "light" | "dark";

// Chosen to stay apart for the common colour-vision deficiencies (blue/orange carry read/write) and to keep
// fsync, the usual culprit of a slow restore, the loudest.
export const KIND_COLORS: Record<Theme, Record<Kind, string>> = {
  light: {
    read: "#2f6fdf",
    write: "#e8850c",
    fsync: "#d6336c",
    open: "#2f9e44",
    close: "#1098ad",
    other: "#868e96",
  },
  dark: {
    read: "#5c9bff",
    write: "#ffa94d",
    fsync: "#ff6b9a",
    open: "#51cf66",
    close: "#3bc9db",
    other: "#adb5bd",
  },
};

const STATE_COLORS: Record<Theme, Record<string, string>> = {
  light: { running: "#37b24d", runnable: "#fab005", blocked: "#adb5bd", io_wait: "#f76707" },
  dark: { running: "#40c057", runnable: "#fcc419", blocked: "#5c636a", io_wait: "#ff922b" },
};

/** The CPU states the sampler reports (backend/app/traces/records.py CPU_STATES), in legend order. */
export const CPU_STATES = ["running", "runnable", "blocked", "io_wait"] as const;

/** A colour for a CPU/state span label; unknown labels get a stable colour from their name. */
export function stateColor(label: string, theme: Theme): string {
  const known = STATE_COLORS[theme][label.toLowerCase()];
  if (known !== undefined) return known;
  let hash = 0;
  for (const char of label) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return `hsl(${String(hash % 360)} 45% ${theme === "dark" ? "55%" : "60%"})`;
}
