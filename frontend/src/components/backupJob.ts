/** Backup jobs: the launch form's choices, and how a backup job's parameters read on the run page. */

import type { BackupRequest } from "../queries/backupJobs";
import { savedServerText } from "./jobText";

export type BackupTool = BackupRequest["tool"];
export type Compression = NonNullable<BackupRequest["compression"]>;

export const TOOLS: { value: BackupTool; label: string }[] = [
  { value: "mysqldump", label: "mysqldump: one .sql file, compressed as it is written" },
  { value: "mysqldump-tab", label: "mysqldump --tab: a directory of .sql + .txt per table (one database; server on this host)" },
  { value: "mydumper", label: "mydumper: a directory dumped by several threads" },
  { value: "mariabackup", label: "mariabackup --backup: a physical copy of the whole server (server on this host)" },
];

export const COMPRESSIONS: { value: Compression; label: string; disabled?: boolean }[] = [
  { value: "zstd", label: "zstd (multi-threaded, fast)" },
  { value: "pigz", label: "pigz (gzip, multi-threaded)" },
  { value: "gzip", label: "gzip (one thread)" },
  { value: "none", label: "none" },
  { value: "pbzip2", label: "pbzip2 (bzip2, multi-threaded; smallest, slowest to restore)" },
];

/** "shop, crm" or "shop crm" as a list; empty means every database. */
export function databasesValue(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** The compression a tool gets when the user switches to it: mariabackup writes uncompressed directories. */
export function compressionFor(tool: BackupTool, current: Compression): Compression {
  if (tool === "mariabackup") return "none";
  return current === "none" ? "zstd" : current;
}

/** The level field: empty is the compressor's default; text that is not a number goes as typed. */
export function levelValue(text: string): number | null {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  const value = Number(trimmed);
  return Number.isInteger(value) ? value : (trimmed as unknown as number);
}

/** The phases a backup job goes through, in order, as the run page lists them. */
export const BACKUP_PHASES = ["queued", "connecting", "backing_up", "verifying", "cleaning_up", "done"];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** The facts of a backup job for the run page, as [label, text] rows. */
export function backupFacts(parameters: Record<string, unknown>): [string, string][] {
  const source = isRecord(parameters.source) ? parameters.source : {};
  const databases = Array.isArray(parameters.databases) ? parameters.databases.map(String) : [];
  const tool = typeof parameters.tool === "string" ? parameters.tool : "–";
  const compression = typeof parameters.compression === "string" ? parameters.compression : "none";
  const level = typeof parameters.level === "number" ? ` level ${String(parameters.level)}` : "";
  const threads = typeof parameters.threads === "number" ? String(parameters.threads) : "the worker's CPU count";
  return [
    ["Source", typeof source.target_id === "number" ? savedServerText(source) : "–"],
    ["Tool", tool],
    ["Databases", databases.length > 0 ? databases.join(", ") : tool === "mariabackup" ? "the whole server" : "every database"],
    ["Threads", threads],
    ["Compression", compression === "none" ? "none" : `${compression}${level}`],
    ["Destination", typeof parameters.destination === "string" ? parameters.destination : "–"],
  ];
}
