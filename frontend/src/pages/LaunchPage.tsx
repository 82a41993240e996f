import { useQuery } from "@tanstack/react-query";
import { type SyntheticEvent, useMemo, useState } from "react";
import { Link, useNavigate } from "react-router-dom";

import { ApiError } from "../api/errors";
import { Empty, ErrorMessage, Loading } from "../components/common";
import { Field } from "../components/Field";
import { relativeToRoots } from "../components/jobText";
import { type Backup, backupsQuery } from "../queries/backups";
import { type RestoreRequest, useCreateRestore } from "../queries/jobs";
import { type ServerOptions, presetsQuery } from "../queries/presets";
import { targetsQuery } from "../queries/targets";
import { formatBytes } from "../timeline/format";

const STARTED_BY_KEY = "restorescope.startedBy";

type Capture = RestoreRequest["capture"];
const CAPTURES: { value: Capture; label: string }[] = [
  { value: "auto", label: "auto: eBPF when it can run here, else strace" },
  { value: "ebpf", label: "eBPF (bpftrace; sees io_uring page IO; needs root)" },
  { value: "strace", label: "strace (attached to the server; io_uring page IO shows without file/offset)" },
  { value: "fuse", label: "FUSE passthrough over the datadir (sees every page write; slower)" },
  { value: "none", label: "none: no IO timeline" },
];

/** The path under its root ("demo/shop.sql.gz"), which is what a DBA recognises. */
function relativePath(backup: Backup): string {
  return relativeToRoots(backup.path, [backup.root]);
}

/** Why a backup cannot be restored by this version, in the words the API would use. */
function notRestorableReason(backup: Backup): string | null {
  if (backup.missing) return "the file is gone from disk";
  if (backup.restorable) return null;
  if (backup.format === "sql") return "no mysqldump header found: restorescope restores mysqldump files";
  return `a ${backup.format} backup: this version restores mysqldump files (.sql, .sql.gz, .sql.zst) only`;
}

const OPTION_NAMES = [
  "innodb_buffer_pool_size",
  "innodb_log_file_size",
  "innodb_doublewrite",
  "innodb_flush_log_at_trx_commit",
  "innodb_autoinc_lock_mode",
  "aio_mode",
  "innodb_flush_method",
  "innodb_io_capacity",
  "log_bin",
  "performance_schema",
] as const;
type OptionName = (typeof OPTION_NAMES)[number];

/** What the form holds for each setting: "" keeps the preset's value; the choices come from the schema. */
type OptionOverrides = Record<OptionName, string>;

const NO_OVERRIDES = Object.fromEntries(OPTION_NAMES.map((name) => [name, ""])) as OptionOverrides;

const onOff = (value: string): boolean => value === "on";

/** Only the settings the user changed; the API merges them on top of the preset. */
function optionsBody(o: OptionOverrides): ServerOptions {
  const body: ServerOptions = {};
  if (o.innodb_buffer_pool_size) body.innodb_buffer_pool_size = o.innodb_buffer_pool_size.trim();
  if (o.innodb_log_file_size) body.innodb_log_file_size = o.innodb_log_file_size.trim();
  if (o.innodb_doublewrite) body.innodb_doublewrite = onOff(o.innodb_doublewrite);
  if (o.innodb_flush_log_at_trx_commit) body.innodb_flush_log_at_trx_commit = Number(o.innodb_flush_log_at_trx_commit) as 0 | 1 | 2;
  if (o.innodb_autoinc_lock_mode) body.innodb_autoinc_lock_mode = Number(o.innodb_autoinc_lock_mode) as 0 | 1 | 2;
  if (o.aio_mode) body.aio_mode = o.aio_mode as ServerOptions["aio_mode"];
  if (o.innodb_flush_method) body.innodb_flush_method = o.innodb_flush_method as ServerOptions["innodb_flush_method"];
  if (o.innodb_io_capacity) {
    // Text that is not a number goes as typed, so the API's validation message shows next to the field
    // (Number() would make it NaN, which JSON sends as null: "use the default", silently).
    const capacity = Number(o.innodb_io_capacity);
    body.innodb_io_capacity = Number.isFinite(capacity) ? capacity : (o.innodb_io_capacity as unknown as number);
  }
  if (o.log_bin) body.log_bin = onOff(o.log_bin);
  if (o.performance_schema) body.performance_schema = onOff(o.performance_schema);
  return body;
}

function presetValue(options: ServerOptions | undefined, name: keyof ServerOptions): string {
  const value = options?.[name];
  if (value === undefined || value === null) return "server default";
  if (typeof value === "boolean") return value ? "on" : "off";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function BackupPicker({
  selected,
  onSelect,
  error,
}: {
  selected: string;
  onSelect: (path: string) => void;
  error: string | undefined;
}) {
  const backups = useQuery(backupsQuery());
  if (backups.isPending) return <Loading what="backups" />;
  if (backups.isError) return <ErrorMessage error={backups.error} title="Could not list the backups" />;
  const roots = backups.data.roots.join(", ");
  return (
    <div className="field">
      {backups.data.data.length === 0 ? (
        <Empty title="No backups found">
          Put mysqldump files (.sql, .sql.gz, .sql.zst) under <code>{roots}</code>, then reload this page.
        </Empty>
      ) : (
        <div className="scroll" style={{ maxHeight: 260 }}>
          <table className="data" aria-label="Backups">
            <thead>
              <tr>
                <th />
                <th>Path</th>
                <th>Format</th>
                <th className="num">Size</th>
                <th>Modified</th>
                <th>Restorable</th>
              </tr>
            </thead>
            <tbody>
              {backups.data.data.map((backup) => {
                const reason = notRestorableReason(backup);
                const isSelected = backup.path === selected;
                return (
                  <tr
                    key={backup.id}
                    className={`${reason === null ? "clickable" : ""} ${isSelected ? "selected" : ""}`}
                    onClick={() => reason === null && onSelect(backup.path)}
                  >
                    <td>
                      <input
                        type="radio"
                        name="backup"
                        aria-label={relativePath(backup)}
                        checked={isSelected}
                        disabled={reason !== null}
                        onChange={() => onSelect(backup.path)}
                      />
                    </td>
                    <td className="mono" title={backup.path}>
                      {relativePath(backup)}
                    </td>
                    <td>
                      {backup.format}
                      {backup.compression ? ` · ${backup.compression}` : ""}
                    </td>
                    <td className="num">{formatBytes(backup.size_bytes)}</td>
                    <td>{new Date(backup.modified_at).toLocaleString([], { dateStyle: "short", timeStyle: "short" })}</td>
                    <td>{reason === null ? <span className="badge ok">yes</span> : <span className="sub">{reason}</span>}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <span className="hint">Backups are read from {roots}.</span>
      {error !== undefined && (
        <span className="field-error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

export function LaunchPage() {
  const navigate = useNavigate();
  const presets = useQuery(presetsQuery());
  const targets = useQuery(targetsQuery());
  const create = useCreateRestore();

  const [backupPath, setBackupPath] = useState("");
  const [targetKind, setTargetKind] = useState<"sandbox" | "saved">("sandbox");
  const [preset, setPreset] = useState("server-defaults");
  const [overrides, setOverrides] = useState<OptionOverrides>(NO_OVERRIDES);
  const [keep, setKeep] = useState(false);
  const [targetId, setTargetId] = useState("");
  const [database, setDatabase] = useState("");
  const [verify, setVerify] = useState(true);
  const [capture, setCapture] = useState<Capture>("auto");
  const [startedBy, setStartedBy] = useState(() => localStorage.getItem(STARTED_BY_KEY) ?? "");

  const presetOptions = useMemo(() => presets.data?.find((p) => p.name === preset), [presets.data, preset]);
  const apiError = create.error instanceof ApiError ? create.error : null;
  const fieldError = (field: string): string | undefined => apiError?.fieldMessage(field);
  const unplacedErrors = apiError?.fields.filter(
    (e) =>
      !["backup_path", "target", "database", "started_by", "verify", "capture"].some(
        (f) => e.field === f || e.field.startsWith(`${f}.`),
      ),
  );

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    localStorage.setItem(STARTED_BY_KEY, startedBy);
    const body: RestoreRequest = {
      backup_path: backupPath,
      target:
        targetKind === "sandbox"
          ? { kind: "sandbox", preset, options: optionsBody(overrides), keep }
          : { kind: "saved", target_id: Number(targetId) },
      database: database.trim() || null,
      verify,
      capture,
      started_by: startedBy.trim() || null,
    };
    create.mutate(body, { onSuccess: (job) => void navigate(`/jobs/${String(job.id)}`) });
  };

  const set = (name: OptionName, value: string): void => setOverrides((previous) => ({ ...previous, [name]: value }));
  const optionError = (name: string): string | undefined => fieldError(`target.options.${name}`);

  const select = (name: OptionName, label: string, choices: readonly string[]) => (
    <Field label={label} hint={`preset: ${presetValue(presetOptions?.options, name)}`} error={optionError(name)}>
      {(props) => (
        <select {...props} value={overrides[name]} onChange={(event) => set(name, event.target.value)}>
          <option value="">(preset)</option>
          {choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
  const text = (name: OptionName, label: string, placeholder: string) => (
    <Field label={label} hint={`preset: ${presetValue(presetOptions?.options, name)}`} error={optionError(name)}>
      {(props) => (
        <input {...props} value={overrides[name]} placeholder={placeholder} onChange={(event) => set(name, event.target.value)} />
      )}
    </Field>
  );

  return (
    <form onSubmit={submit} noValidate>
      <div className="page-head">
        <h1>New restore</h1>
        <span className="sub">Restore a backup into a scratch server started for the job, or into a saved server.</span>
      </div>
      {create.isError && (
        <ErrorMessage error={create.error} title="The restore was not started">
          {unplacedErrors && unplacedErrors.length > 0 ? null : <div>Fix the fields marked below and launch again.</div>}
        </ErrorMessage>
      )}
      <div className="panel">
        <h2>1. Backup</h2>
        <BackupPicker selected={backupPath} onSelect={setBackupPath} error={fieldError("backup_path")} />
      </div>
      <div className="panel">
        <h2>2. Target</h2>
        <div className="filters" style={{ marginBottom: 10 }} role="radiogroup" aria-label="Target kind">
          <label>
            <input type="radio" name="target-kind" checked={targetKind === "sandbox"} onChange={() => setTargetKind("sandbox")} />{" "}
            Sandbox server (started for this job, removed after)
          </label>
          <label>
            <input type="radio" name="target-kind" checked={targetKind === "saved"} onChange={() => setTargetKind("saved")} /> Saved
            server
          </label>
        </div>
        {targetKind === "sandbox" ? (
          <>
            <Field
              label="Preset"
              hint={presetOptions?.description}
              error={fieldError("target.preset")}
            >
              {(props) => (
                <select {...props} value={preset} onChange={(event) => setPreset(event.target.value)} style={{ maxWidth: 320 }}>
                  {(presets.data ?? [{ name: "server-defaults" }]).map((p) => (
                    <option key={p.name} value={p.name}>
                      {p.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <details>
              <summary style={{ cursor: "pointer", marginBottom: 8 }}>Server settings on top of the preset</summary>
              <div className="grid-3">
                {text("innodb_buffer_pool_size", "innodb_buffer_pool_size", "e.g. 1G")}
                {text("innodb_log_file_size", "innodb_log_file_size", "e.g. 1G")}
                {text("innodb_io_capacity", "innodb_io_capacity", "100 – 10000000")}
                {select("innodb_doublewrite", "innodb_doublewrite", ["on", "off"])}
                {select("innodb_flush_log_at_trx_commit", "innodb_flush_log_at_trx_commit", ["0", "1", "2"])}
                {select("innodb_autoinc_lock_mode", "innodb_autoinc_lock_mode", ["0", "1", "2"])}
                {select("aio_mode", "AIO mode (io_uring, libaio, or plain pread/pwrite)", ["io_uring", "aio", "off"])}
                {select("innodb_flush_method", "innodb_flush_method", ["fsync", "O_DSYNC", "O_DIRECT", "O_DIRECT_NO_FSYNC"])}
                {select("log_bin", "log_bin (binary log)", ["on", "off"])}
                {select("performance_schema", "performance_schema", ["on", "off"])}
              </div>
            </details>
            <label style={{ display: "block", marginTop: 8 }}>
              <input type="checkbox" checked={keep} onChange={(event) => setKeep(event.target.checked)} /> Keep the sandbox
              running after the job, for inspection
            </label>
          </>
        ) : (
          <Field
            label="Saved server"
            error={fieldError("target.target_id") ?? fieldError("target")}
            hint={
              targets.data?.data.length === 0 ? (
                <>No saved servers yet: add one with POST /api/v1/targets (see the API docs at <a href="/docs">/docs</a>).</>
              ) : undefined
            }
          >
            {(props) => (
              <select {...props} value={targetId} onChange={(event) => setTargetId(event.target.value)} style={{ maxWidth: 420 }}>
                <option value="">Choose a server…</option>
                {targets.data?.data.map((target) => (
                  <option key={target.id} value={target.id}>
                    {target.name} ({target.socket ?? `${target.host}:${String(target.port)}`}, user {target.user})
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
      </div>
      <div className="panel">
        <h2>3. Options</h2>
        <div className="grid-3">
          <Field
            label="Database"
            hint="Restore into this database; needed when the dump has no CREATE DATABASE / USE of its own."
            error={fieldError("database")}
          >
            {(props) => <input {...props} value={database} onChange={(event) => setDatabase(event.target.value)} placeholder="(from the dump)" />}
          </Field>
          <Field label="Started by" hint="Shown in the job list; remembered in this browser." error={fieldError("started_by")}>
            {(props) => <input {...props} value={startedBy} onChange={(event) => setStartedBy(event.target.value)} placeholder="your name" />}
          </Field>
          <Field
            label="IO capture (for the timeline)"
            hint="Records every read, write and fsync of every server thread. An explicit choice that cannot run here fails the job."
            error={fieldError("capture")}
          >
            {(props) => (
              <select {...props} value={capture} onChange={(event) => setCapture(event.target.value as Capture)}>
                {CAPTURES.map((c) => (
                  <option key={c.value} value={c.value}>
                    {c.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <div className="field">
            <span className="label">Verification</span>
            <label>
              <input type="checkbox" checked={verify} onChange={(event) => setVerify(event.target.checked)} /> Compare per-table row counts
              with the dump afterwards
            </label>
          </div>
        </div>
      </div>
      <div className="page-head">
        <button type="submit" className="primary" disabled={create.isPending || backupPath === ""}>
          {create.isPending ? "Launching…" : "Launch restore"}
        </button>
        {backupPath === "" && <span className="sub">Choose a backup first.</span>}
        <span className="spacer" />
        <Link to="/">Cancel</Link>
      </div>
    </form>
  );
}
