/** How a job's parameters read in a table cell. */

import type { Job } from "../queries/jobs";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** "saved server replica (#3)": the name the job recorded when it was launched (jobs from before names were
 * recorded have the id only), so it still reads right once the server is renamed or deleted. */
export function savedServerText(spec: Record<string, unknown>): string {
  const id = typeof spec.target_id === "number" ? `#${String(spec.target_id)}` : "";
  return typeof spec.name === "string" ? `saved server ${spec.name}${id ? ` (${id})` : ""}` : `saved server ${id || "–"}`;
}

/** "sandbox · fast-restore", "saved server replica (#3)", or the imported file's name. */
export function targetText(job: Job): string {
  const target = job.parameters.target;
  const source = job.parameters.source;
  // A backup job reads from its source: the column says where the data came from.
  if (job.kind === "backup" && isRecord(source)) return `from ${savedServerText(source)}`;
  if (!isRecord(target)) return job.kind === "import" ? "—" : "–";
  if (target.kind === "saved") return savedServerText(target);
  const preset = typeof target.preset === "string" ? target.preset : "server-defaults";
  return `sandbox · ${preset}${target.keep === true ? " (kept)" : ""}`;
}

/** A path under one of the backup roots, from that root on ("demo/shop.sql.gz"); other paths as they are. */
export function relativeToRoots(path: string, roots: readonly string[]): string {
  for (const root of roots) {
    const prefix = root.endsWith("/") ? root : `${root}/`;
    if (path.startsWith(prefix)) return path.slice(prefix.length);
  }
  return path;
}

/** The backup as people name it (relative to its root), or the imported file's name. */
export function backupText(job: Job, roots: readonly string[] = []): string {
  if (job.backup_path) return relativeToRoots(job.backup_path, roots);
  const fileName = job.parameters.file_name;
  return typeof fileName === "string" ? fileName : "–";
}

export function captureText(job: Job): string | null {
  const capture = job.parameters.capture;
  return typeof capture === "string" ? capture : null;
}

export function phaseText(phase: string): string {
  return phase.replaceAll("_", " ");
}

/** The protected database a drill restored, from the job's parameters; null for other jobs. */
export function drillText(parameters: Record<string, unknown>): string | null {
  const drill = parameters.drill;
  if (typeof drill !== "object" || drill === null) return null;
  const name = (drill as { name?: unknown }).name;
  return typeof name === "string" ? `restore-and-verify of ${name}` : "restore-and-verify";
}
