/** How a job's parameters read in a table cell. */

import type { Job } from "../queries/jobs";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** "sandbox · fast-restore", "saved server #3", or the imported file's name. */
export function targetText(job: Job): string {
  const target = job.parameters.target;
  if (!isRecord(target)) return job.kind === "import" ? "—" : "–";
  if (target.kind === "saved") return `saved server #${String(target.target_id)}`;
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
