/** Saved servers on the page: the add/edit form's values, the bodies it sends, and how a server and its check read. */

import type { Schemas } from "../api/client";

export type Target = Schemas["TargetPublic"];
export type TargetCheck = Schemas["TargetCheck"];
export type TargetCreate = Schemas["TargetCreate"];
export type TargetUpdate = Schemas["TargetUpdate"];

export interface ServerForm {
  name: string;
  connectVia: "tcp" | "socket";
  host: string;
  port: string;
  socket: string;
  user: string;
  /** Empty on an edit: the stored password is kept. */
  password: string;
  /** On an edit: forget the stored password (an account that logs in without one). */
  removePassword: boolean;
  defaultDatabase: string;
  notes: string;
}

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 3306;

export function emptyForm(): ServerForm {
  return {
    name: "",
    connectVia: "tcp",
    host: DEFAULT_HOST,
    port: String(DEFAULT_PORT),
    socket: "",
    user: "",
    password: "",
    removePassword: false,
    defaultDatabase: "",
    notes: "",
  };
}

/** The form for editing a saved server: everything as saved, the password empty (kept unless one is typed). */
export function formOf(target: Target): ServerForm {
  return {
    name: target.name,
    connectVia: target.socket === null ? "tcp" : "socket",
    host: target.host,
    port: String(target.port),
    socket: target.socket ?? "",
    user: target.user,
    password: "",
    removePassword: false,
    defaultDatabase: target.default_database ?? "",
    notes: target.notes ?? "",
  };
}

/** The port field: digits go as a number; other text goes as typed, for the API to say what is wrong. */
export function portValue(text: string): number {
  const trimmed = text.trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : (trimmed as unknown as number);
}

function optional(text: string): string | null {
  return text.trim() === "" ? null : text.trim();
}

/** A new server's body: host and port, or a socket (the host and port then stay as typed, unused). */
export function createBody(form: ServerForm): TargetCreate {
  return {
    name: form.name.trim(),
    host: form.host.trim(),
    port: portValue(form.port),
    socket: form.connectVia === "socket" ? form.socket.trim() : null,
    user: form.user,
    password: form.password === "" ? null : form.password,
    default_database: optional(form.defaultDatabase),
    notes: optional(form.notes),
  };
}

/**
 * An edit's body: only what differs from the saved server, so the audit log names what really changed. The
 * password goes only when one was typed (or removing it was asked): an empty password field keeps the stored one.
 */
export function updateBody(form: ServerForm, target: Target): TargetUpdate {
  const wanted = createBody(form);
  const body: TargetUpdate = {};
  if (wanted.name !== target.name) body.name = wanted.name;
  if (wanted.host !== target.host) body.host = wanted.host;
  if (wanted.port !== target.port) body.port = wanted.port;
  if ((wanted.socket ?? null) !== target.socket) body.socket = wanted.socket ?? null;
  if (wanted.user !== target.user) body.user = wanted.user;
  if ((wanted.default_database ?? null) !== target.default_database) body.default_database = wanted.default_database ?? null;
  if ((wanted.notes ?? null) !== target.notes) body.notes = wanted.notes ?? null;
  if (form.password !== "") body.password = form.password;
  else if (form.removePassword && target.has_password) body.password = null;
  return body;
}

/** Where a server listens: its socket, or host:port. */
export function whereText(target: Pick<Target, "socket" | "host" | "port">): string {
  return target.socket ?? `${target.host}:${String(target.port)}`;
}

/** The check in a few words for the table: "MariaDB 10.11.19-MariaDB-0+deb12u1" or the kind of failure. */
export function checkSummary(check: TargetCheck): string {
  if (!check.ok) return PROBLEM_WORDS[check.problem ?? "other"];
  const flavour = check.server_flavour === "mariadb" ? "MariaDB" : check.server_flavour === "mysql" ? "MySQL" : "";
  return [flavour, check.server_version].filter((part) => part).join(" ");
}

const PROBLEM_WORDS: Record<NonNullable<TargetCheck["problem"]>, string> = {
  wrong_password: "wrong password or user",
  tls_required: "TLS required",
  unreachable: "unreachable",
  unknown_database: "no such database",
  not_allowed: "not allowed from here",
  other: "cannot connect",
};

/** Whether mysqldump --tab and mariabackup can back it up, in words for the table. */
export function workerHostText(check: TargetCheck): string | null {
  if (!check.ok) return null;
  if (check.on_worker_host === true) return "on the worker's host";
  if (check.on_worker_host === false) return "not on a worker's host";
  return "worker's host unknown";
}

/** What the delete confirmation says: what goes, and what the jobs that used the server keep. */
export function deleteQuestion(target: Target): string {
  const lines = [`Delete the saved server ${target.name} (${whereText(target)})?`];
  if (target.active_job_ids.length > 0) {
    const jobs = target.active_job_ids.map((id) => `#${String(id)}`).join(", ");
    lines.push(`Queued or running jobs use it (${jobs}): it cannot be deleted until they end or are cancelled.`);
  }
  if (target.job_count > 0) {
    const count = target.job_count === 1 ? "1 job used it" : `${String(target.job_count)} jobs used it`;
    lines.push(`${count}: they keep their logs, results and its name, but cannot be retried.`);
  } else {
    lines.push("No job has used it.");
  }
  lines.push("Its stored password is erased. New jobs can no longer choose it.");
  return lines.join("\n");
}
