/** Human-readable numbers for DBAs: durations from microseconds, sizes in binary units, rates in MB/s. */

const DURATION_UNITS: readonly [number, string][] = [
  [3_600_000_000, "h"],
  [60_000_000, "min"],
  [1_000_000, "s"],
  [1_000, "ms"],
  [1, "µs"],
];

/** Three significant digits at most, no trailing zeros: 1.25, 12.5, 125. */
function significant(value: number): string {
  const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return String(Number(value.toFixed(digits)));
}

/** 0 -> "0 µs", 1500 -> "1.5 ms", 90_000_000 -> "1.5 min". */
export function formatDuration(us: number): string {
  if (!Number.isFinite(us)) return "–";
  const sign = us < 0 ? "-" : "";
  const magnitude = Math.abs(us);
  if (magnitude < 1) return `${sign}${significant(magnitude)} µs`;
  for (const [size, unit] of DURATION_UNITS) {
    if (magnitude >= size) return `${sign}${significant(magnitude / size)} ${unit}`;
  }
  return `${sign}${significant(magnitude)} µs`;
}

/** Seconds as "1 h 02 min", "3 min 05 s", "42 s", for job durations and ETAs. */
export function formatSeconds(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const total = Math.max(0, Math.round(seconds));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const rest = total % 60;
  const two = (n: number): string => String(n).padStart(2, "0");
  if (hours > 0) return `${hours} h ${two(minutes)} min`;
  if (minutes > 0) return `${minutes} min ${two(rest)} s`;
  return `${rest} s`;
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 0 -> "0 B", 16384 -> "16 KiB", 1_500_000 -> "1.43 MiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return "–";
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = unit === 0 ? String(Math.round(value)) : significant(value);
  return `${bytes < 0 ? "-" : ""}${text} ${BYTE_UNITS[unit] ?? "B"}`;
}

/** MB/s (10^6 bytes), as the API reports them. */
export function formatRate(mbPerS: number | null | undefined): string {
  if (mbPerS === null || mbPerS === undefined || !Number.isFinite(mbPerS)) return "–";
  return `${significant(mbPerS)} MB/s`;
}

// One formatter for every call: toLocaleString builds a new one per call, which made the tables of counts
// re-rendered on each frame of a zoom the largest cost of that frame.
const COUNT_FORMAT = new Intl.NumberFormat("en-US");

/** 1234567 -> "1,234,567". */
export function formatCount(count: number | null | undefined): string {
  if (count === null || count === undefined || !Number.isFinite(count)) return "–";
  return COUNT_FORMAT.format(Math.round(count));
}

/** 12.345 -> "12.3 %"; values are already percentages. */
export function formatPercent(percent: number | null | undefined): string {
  if (percent === null || percent === undefined || !Number.isFinite(percent)) return "–";
  return `${percent >= 10 || percent === 0 ? percent.toFixed(0) : percent.toFixed(1)} %`;
}

/** A file offset as bytes with its binary size beside it: "16384 (16 KiB)". */
export function formatOffset(offset: number | null | undefined): string {
  if (offset === null || offset === undefined) return "–";
  return offset < 1024 ? String(offset) : `${String(offset)} (${formatBytes(offset)})`;
}

/** Rows per second, rounded: "12,345 rows/s". */
export function formatRowsPerSecond(rows: number | null | undefined): string {
  if (rows === null || rows === undefined || !Number.isFinite(rows)) return "–";
  return `${formatCount(rows)} rows/s`;
}

/** The directory every path shares ("/srv/x/data/"), shown once above the table instead of on every row. */
export function commonDirectory(paths: readonly string[]): string {
  const first = paths[0];
  if (first === undefined || paths.length < 2) return "";
  let prefix = first;
  for (const path of paths) {
    while (!path.startsWith(prefix)) prefix = prefix.slice(0, -1);
  }
  return prefix.slice(0, prefix.lastIndexOf("/") + 1);
}

// System paths a server also touches; leaving them out finds the datadir the real files share.
const SYSTEM_PREFIXES = ["/proc/", "/sys/", "/dev/", "/etc/", "/usr/", "/lib/"];

/** The directory the data files share, ignoring system files and sockets; "" when it is only "/". */
export function dataDirectory(paths: readonly string[]): string {
  const data = paths.filter((path) => path.startsWith("/") && !SYSTEM_PREFIXES.some((prefix) => path.startsWith(prefix)));
  const directory = commonDirectory(data);
  return directory === "/" ? "" : directory;
}
