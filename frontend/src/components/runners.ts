/** What restores a backup: the choices of the launch form, and how a job's choice reads on the run page. */

import type { RestoreRequest } from "../queries/jobs";

export type Runner = RestoreRequest["runner"];

const MIB = 1 << 20;
export const DEFAULT_CHUNK_MIB = 64;

/** Physical backups (directories of a server's files): prepared on a copy and copied back into a new sandbox. */
export const PHYSICAL_FORMATS: readonly string[] = ["mariabackup", "xtrabackup"];
const PHYSICAL_RUNNERS: readonly string[] = ["mariabackup", "xtrabackup"];

export function isPhysical(format: string | undefined): boolean {
  return format !== undefined && PHYSICAL_FORMATS.includes(format);
}

/** The runners, each with the one line the launch form shows, and the formats it reads (as the API checks). */
export const RUNNERS: { value: Runner; label: string; formats: readonly string[] }[] = [
  {
    value: "auto",
    label: "auto: restorescope's loader for a dump (it reads every format and is the fastest), mariabackup for a physical backup",
    formats: ["mysqldump", "mysqldump-tab", "mydumper", "mysqlsh", ...PHYSICAL_FORMATS],
  },
  {
    value: "loader",
    label: "restorescope's loader: parallel, resumable; mysqldump, --tab, mydumper and MySQL Shell dumps",
    formats: ["mysqldump", "mysqldump-tab", "mydumper", "mysqlsh"],
  },
  { value: "mysql", label: "mysql client: the dump piped into one connection, as `mysql < dump.sql`", formats: ["mysqldump"] },
  { value: "myloader", label: "myloader: mydumper's own loader, for mydumper directories", formats: ["mydumper"] },
  { value: "mysqlimport", label: "mysqlimport: LOAD DATA per file, for mysqldump --tab directories", formats: ["mysqldump-tab"] },
  {
    value: "mariabackup",
    label: "mariabackup: prepare a copy, put it into a new sandbox's datadir, start it and check every table",
    formats: ["mariabackup"],
  },
  { value: "xtrabackup", label: "xtrabackup: the same for Percona XtraBackup (untested)", formats: ["xtrabackup"] },
];

/** The runners the launch form offers for the chosen backup: for a physical backup auto and its own tool, for a
 * dump (or no backup yet) the runners that read dumps. */
export function runnersFor(format: string | undefined): typeof RUNNERS {
  if (isPhysical(format)) return RUNNERS.filter((r) => r.value === "auto" || r.formats.includes(format ?? ""));
  return RUNNERS.filter((r) => !PHYSICAL_RUNNERS.includes(r.value));
}

/** The hint under the runner select when the runner cannot read the chosen backup. */
export function runnerMismatch(runner: Runner, format: string): string | null {
  if (runnerReads(runner, format)) return null;
  return isPhysical(format)
    ? `a physical backup (${format}) is restored by its own tool: choose auto or ${format}`
    : `cannot read this backup (${format}): choose auto or the loader`;
}

/** The form's use-memory ("1G"): empty is mariabackup's default (96M); the API checks the rest. */
export function memoryValue(text: string): string | null {
  const trimmed = text.trim();
  return trimmed === "" ? null : trimmed;
}

const RESTORE_PHASES = ["queued", "waiting_for_target", "starting_server", "connecting", "restoring", "verifying", "cleaning_up", "done"];
const PHYSICAL_PHASES = ["queued", "preparing", "starting_server", "verifying", "cleaning_up", "done"];

/** The phases a restore job goes through: a physical restore prepares, then starts the server on the files. */
export function restorePhases(parameters: Record<string, unknown>): string[] {
  return typeof parameters.runner === "string" && PHYSICAL_RUNNERS.includes(parameters.runner) ? PHYSICAL_PHASES : RESTORE_PHASES;
}

const NAMES: Record<string, string> = {
  loader: "restorescope's loader",
  mysql: "mysql client",
  myloader: "myloader",
  mysqlimport: "mysqlimport",
  mariabackup: "mariabackup",
  xtrabackup: "xtrabackup (untested)",
};

/** Whether the runner reads the backup's format; the API refuses the job otherwise. */
export function runnerReads(runner: Runner, format: string): boolean {
  return RUNNERS.find((r) => r.value === runner)?.formats.includes(format) ?? false;
}

/** The form's "64" (MiB) as bytes. Text that is not a positive number goes as typed, so the API's message
 * shows next to the field; an empty field sends the default. */
export function chunkSizeBytes(mib: string): number {
  const text = mib.trim();
  if (text === "") return DEFAULT_CHUNK_MIB * MIB;
  const value = Number(text);
  return Number.isFinite(value) && value > 0 ? Math.round(value * MIB) : (text as unknown as number);
}

/** The form's threads: empty is the worker's default (its CPU count); text that is not a number goes as typed. */
export function threadsValue(text: string): number | null {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : (trimmed as unknown as number);
}

function sizeText(bytes: number): string {
  return bytes >= MIB ? `${String(+(bytes / MIB).toFixed(2))} MiB` : `${String(+(bytes / 1024).toFixed(1))} KiB`;
}

/** "restorescope's loader · 2 threads · 64 MiB chunks", "mysql client · 1 connection", "mariabackup · --use-memory
 * 1G · 4 read / 4 write IO threads"; null for jobs without one. */
export function runnerText(parameters: Record<string, unknown>): string | null {
  const runner = parameters.runner;
  if (typeof runner !== "string") return null;
  const name = NAMES[runner] ?? runner;
  if (runner === "mysql") return `${name} · 1 connection`;
  if (PHYSICAL_RUNNERS.includes(runner)) {
    const memory = typeof parameters.use_memory === "string" ? parameters.use_memory : "the default (96M)";
    const io = (key: string, label: string): string | null =>
      typeof parameters[key] === "number" ? `${String(parameters[key])} ${label}` : null;
    const threads = [io("read_io_threads", "read"), io("write_io_threads", "write")].filter((t) => t !== null);
    return [`${name} · --use-memory ${memory}`, ...(threads.length > 0 ? [`${threads.join(" / ")} IO threads`] : [])].join(" · ");
  }
  const threads = typeof parameters.threads === "number" ? `${String(parameters.threads)} threads` : "threads: the worker's CPU count";
  if (runner !== "loader") return `${name} · ${threads}`;
  const chunk = typeof parameters.chunk_size === "number" ? ` · ${sizeText(parameters.chunk_size)} chunks` : "";
  return `${name} · ${threads}${chunk}`;
}
