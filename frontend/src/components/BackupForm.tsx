import { useQuery } from "@tanstack/react-query";
import { type SyntheticEvent, useState } from "react";
import { Link, useNavigate } from "react-router-dom";

import { ApiError } from "../api/errors";
import { type BackupRequest, useCreateBackup } from "../queries/backupJobs";
import { backupRootsQuery } from "../queries/backups";
import { targetsQuery } from "../queries/targets";
import { COMPRESSIONS, type BackupTool, type Compression, TOOLS, compressionFor, databasesValue, levelValue } from "./backupJob";
import { ErrorMessage } from "./common";
import { Field } from "./Field";
import { NoSavedServers, SavedServerSelect } from "./SavedServerSelect";
import { threadsValue } from "./runners";

const PLACED_FIELDS = ["source", "tool", "databases", "threads", "compression", "level", "destination"];

/** The launch page's Backup kind: a saved server, a tool, what to back up and where to write it. */
export function BackupForm() {
  const navigate = useNavigate();
  const targets = useQuery(targetsQuery());
  const roots = useQuery(backupRootsQuery());
  const create = useCreateBackup();

  const [targetId, setTargetId] = useState("");
  const [tool, setTool] = useState<BackupTool>("mysqldump");
  const [databases, setDatabases] = useState("");
  const [threads, setThreads] = useState("");
  const [compression, setCompression] = useState<Compression>("zstd");
  const [level, setLevel] = useState("");
  const [destination, setDestination] = useState("");

  const apiError = create.error instanceof ApiError ? create.error : null;
  const fieldError = (field: string): string | undefined => apiError?.fieldMessage(field);
  const unplaced = apiError?.fields.filter((e) => !PLACED_FIELDS.some((f) => e.field === f || e.field.startsWith(`${f}.`)));
  const rootList = roots.data?.join(", ") ?? "the backup roots";

  // The server's default database is a suggestion for an empty Databases field, never over what was typed.
  const chooseServer = (id: string): void => {
    setTargetId(id);
    const suggested = targets.data?.data.find((t) => String(t.id) === id)?.default_database;
    if (suggested && databases.trim() === "") setDatabases(suggested);
  };

  const chooseTool = (next: BackupTool): void => {
    setTool(next);
    setCompression((current) => compressionFor(next, current));
  };

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    const body: BackupRequest = {
      // An unchosen server goes as 0, so the API's message shows under the select.
      source: { kind: "saved", target_id: Number(targetId || 0) },
      tool,
      databases: databasesValue(databases),
      threads: threadsValue(threads),
      compression,
      level: levelValue(level),
      destination: destination.trim(),
    };
    create.mutate(body, { onSuccess: (job) => void navigate(`/jobs/${String(job.id)}`) });
  };

  return (
    <form onSubmit={submit} noValidate aria-label="New backup">
      {create.isError && (
        <ErrorMessage error={create.error} title="The backup was not started">
          {unplaced && unplaced.length > 0 ? null : <div>Fix the fields marked below and launch again.</div>}
        </ErrorMessage>
      )}
      <div className="panel">
        <h2>1. Source</h2>
        <Field
          label="Saved server"
          error={fieldError("source.target_id") ?? fieldError("source")}
          hint={
            targets.data?.data.length === 0 ? (
              <NoSavedServers />
            ) : (
              "Its password reaches the tool through a private option file, never its command line."
            )
          }
        >
          {(props) => (
            <SavedServerSelect fieldProps={props} targets={targets.data?.data} value={targetId} onChange={chooseServer} />
          )}
        </Field>
      </div>
      <div className="panel">
        <h2>2. Backup</h2>
        <div className="grid-3">
          <Field label="Tool" error={fieldError("tool")} hint="--tab and mariabackup need the server on the worker's host.">
            {(props) => (
              <select {...props} value={tool} onChange={(event) => chooseTool(event.target.value as BackupTool)}>
                {TOOLS.map((t) => (
                  <option key={t.value} value={t.value}>
                    {t.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field
            label="Databases"
            error={fieldError("databases")}
            hint={tool === "mariabackup" ? "mariabackup copies the whole server: leave empty." : "Separated by commas or spaces; empty: every database but the system ones."}
          >
            {(props) => (
              <input {...props} value={databases} onChange={(event) => setDatabases(event.target.value)} placeholder="(all)" />
            )}
          </Field>
          <Field
            label="Threads"
            error={fieldError("threads")}
            hint="mydumper -t, mariabackup --parallel and the compressor's threads, 1 – 64; empty: the worker's CPU count."
          >
            {(props) => (
              <input {...props} inputMode="numeric" value={threads} onChange={(event) => setThreads(event.target.value)} placeholder="CPU count" />
            )}
          </Field>
          <Field
            label="Compression"
            error={fieldError("compression")}
            hint={tool === "mariabackup" ? "mariabackup backups stay uncompressed directories, ready to prepare." : tool === "mydumper" ? "gzip and pigz use mydumper's own -c; zstd compresses each file after." : undefined}
          >
            {(props) => (
              <select
                {...props}
                value={compression}
                disabled={tool === "mariabackup"}
                onChange={(event) => setCompression(event.target.value as Compression)}
              >
                {COMPRESSIONS.map((c) => (
                  <option key={c.value} value={c.value} disabled={c.disabled}>
                    {c.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Level" error={fieldError("level")} hint="zstd 1 – 19, gzip and pigz 1 – 9; empty: the compressor's default.">
            {(props) => (
              <input
                {...props}
                inputMode="numeric"
                value={level}
                disabled={compression === "none"}
                onChange={(event) => setLevel(event.target.value)}
                placeholder="default"
              />
            )}
          </Field>
        </div>
      </div>
      <div className="panel">
        <h2>3. Destination</h2>
        <Field
          label="Directory"
          error={fieldError("destination")}
          hint={`A new directory under ${rootList} (relative to the first root, or absolute); an existing one that is not empty is never overwritten.`}
        >
          {(props) => (
            <input
              {...props}
              value={destination}
              onChange={(event) => setDestination(event.target.value)}
              placeholder="e.g. nightly/2026-11-23"
              style={{ maxWidth: 420 }}
            />
          )}
        </Field>
      </div>
      <div className="page-head">
        <button type="submit" className="primary" disabled={create.isPending || destination.trim() === ""}>
          {create.isPending ? "Launching…" : "Launch backup"}
        </button>
        {destination.trim() === "" && <span className="sub">Name a destination directory first.</span>}
        <span className="spacer" />
        <Link to="/">Cancel</Link>
      </div>
    </form>
  );
}
