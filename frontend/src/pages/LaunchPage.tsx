import { useQuery } from "@tanstack/react-query";
import { type SyntheticEvent, useMemo, useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router-dom";

import { ApiError } from "../api/errors";
import { BackupForm } from "../components/BackupForm";
import { Empty, ErrorMessage, Loading } from "../components/common";
import { Field } from "../components/Field";
import { RequireRole } from "../components/RequireLogin";
import { NoSavedServers, SavedServerSelect } from "../components/SavedServerSelect";
import { relativeToRoots } from "../components/jobText";
import {
  DEFAULT_CHUNK_MIB,
  type Runner,
  chunkSizeBytes,
  isPhysical,
  runnerMismatch,
  runnersFor,
  threadsValue,
  memoryValue,
} from "../components/runners";
import { type Backup, backupsQuery } from "../queries/backups";
import { type RestoreRequest, useCreateRestore } from "../queries/jobs";
import { type ServerOptions, presetsQuery } from "../queries/presets";
import { targetsQuery } from "../queries/targets";
import { formatBytes } from "../timeline/format";

type Capture = RestoreRequest["capture"];
const CAPTURES: { value: Capture; label: string }[] = [
  { value: "auto", label: "auto: eBPF when it can run here, else strace" },
  { value: "ebpf", label: "eBPF (sees io_uring page IO; needs root)" },
  { value: "strace", label: "strace (attached to the server; io_uring page IO shows without file/offset)" },
  { value: "fuse", label: "FUSE passthrough over the datadir (sees every page write; slower)" },
  { value: "none", label: "none: no IO timeline" },
];

/** The path under its root ("demo/shop.sql.gz"), which is what a DBA recognises. */
function relativePath(backup: Backup): string {
  return relativeToRoots(backup.path, [backup.root]);
}

/** Why a backup cannot be restored, in the words the API would use. */
function notRestorableReason(backup: Backup): string | null {
  if (backup.missing) return "the file is gone from disk";
  if (backup.restorable) return null;
  if (backup.format === "sql") return "no mysqldump header found: restorescope restores mysqldump files";
  const problems = backup.details.problems;
  if (Array.isArray(problems) && problems.length > 0) return problems.map(String).join("; ");
  return `a ${backup.format} backup: restorescope restores mysqldump files, --tab, mydumper and MySQL Shell dumps, and mariabackup directories`;
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

/** What the newest restore of this backup showed: a warning when it did not restore, a quiet tick when it did. */
function LastRestore({ backup }: { backup: Backup }) {
  const last = backup.last_restore;
  if (!last) return null;
  const to = `/jobs/${String(last.job_id)}`;
  if (last.verdict === "does_not_restore") {
    return (
      <>
        {" "}
        <Link to={to} onClick={(event) => event.stopPropagation()} className="badge bad" title={last.error ?? "The last restore of this backup failed because of the backup"}>
          does not restore
        </Link>
      </>
    );
  }
  return (
    <>
      {" "}
      <Link to={to} onClick={(event) => event.stopPropagation()} className="sub" title="The last restore of this backup restored and verified every table">
        restored ✓
      </Link>
    </>
  );
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
          Put mysqldump files (.sql, .sql.gz, .sql.zst, .sql.bz2) or dump directories (mysqldump --tab, mydumper, MySQL Shell)
          under <code>{roots}</code>, then reload this page.
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
                    <td>
                      {reason === null ? <span className="badge ok">yes</span> : <span className="sub">{reason}</span>}
                      <LastRestore backup={backup} />
                    </td>
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

type LaunchKind = "restore" | "backup";

/** New restore or new backup: the kind is in the URL (?kind=backup), so either form can be linked to. */
export function LaunchPage() {
  const [search, setSearch] = useSearchParams();
  // Held here too: the radio flips at once, and the URL follows (a router navigation lands a moment later).
  const [kind, setKind] = useState<LaunchKind>(search.get("kind") === "backup" ? "backup" : "restore");
  const choose = (next: LaunchKind): void => {
    setKind(next);
    setSearch(next === "backup" ? { kind: "backup" } : {}, { replace: true });
  };
  return (
    <>
      <div className="page-head">
        <h1>{kind === "backup" ? "New backup" : "New restore"}</h1>
        <div className="filters" role="radiogroup" aria-label="Job kind">
          <label>
            <input type="radio" name="job-kind" checked={kind === "restore"} onChange={() => choose("restore")} /> Restore
          </label>
          <label>
            <input type="radio" name="job-kind" checked={kind === "backup"} onChange={() => choose("backup")} /> Backup
          </label>
        </div>
        <span className="sub">
          {kind === "backup"
            ? "Back up a saved server into a new directory under a backup root; the backup is listed for restores."
            : "Restore a backup into a scratch server started for the job, or into a saved server."}
        </span>
      </div>
      <RequireRole role="operator" what={kind === "backup" ? "backing up" : "launching restores"}>
        {kind === "backup" ? <BackupForm /> : <RestoreForm />}
      </RequireRole>
    </>
  );
}

function RestoreForm() {
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
  const [checksumSourceId, setChecksumSourceId] = useState("");
  const [capture, setCapture] = useState<Capture>("auto");
  const [runner, setRunner] = useState<Runner>("auto");
  const [threads, setThreads] = useState("");
  const [chunkMib, setChunkMib] = useState(String(DEFAULT_CHUNK_MIB));
  const [useMemory, setUseMemory] = useState("");
  const [readIoThreads, setReadIoThreads] = useState("");
  const [writeIoThreads, setWriteIoThreads] = useState("");
  const backups = useQuery(backupsQuery());
  const chosenBackup = backups.data?.data.find((b) => b.path === backupPath);
  // A physical backup offers auto and its own tool; a runner chosen for a dump before falls back to auto.
  const physical = isPhysical(chosenBackup?.format);
  const offeredRunners = runnersFor(chosenBackup?.format);
  const chosenRunner: Runner = offeredRunners.some((r) => r.value === runner) ? runner : "auto";

  const presetOptions = useMemo(() => presets.data?.find((p) => p.name === preset), [presets.data, preset]);
  const apiError = create.error instanceof ApiError ? create.error : null;
  const fieldError = (field: string): string | undefined => apiError?.fieldMessage(field);
  const unplacedErrors = apiError?.fields.filter(
    (e) =>
      ![
        "backup_path",
        "target",
        "database",
        "verify",
        "checksum_source_id",
        "capture",
        "runner",
        "threads",
        "chunk_size",
        "use_memory",
        "read_io_threads",
        "write_io_threads",
      ].some(
        (f) => e.field === f || e.field.startsWith(`${f}.`),
      ),
  );

  const submit = (event: SyntheticEvent): void => {
    event.preventDefault();
    const body: RestoreRequest = {
      backup_path: backupPath,
      target:
        targetKind === "sandbox"
          ? { kind: "sandbox", preset, options: optionsBody(overrides), keep }
          : { kind: "saved", target_id: Number(targetId) },
      database: physical ? null : database.trim() || null, // a physical backup restores the whole server
      verify,
      // Only a logical restore's verification compares checksums (the API refuses it otherwise).
      checksum_source_id: !physical && verify && checksumSourceId !== "" ? Number(checksumSourceId) : null,
      capture,
      runner: chosenRunner,
      threads: physical ? null : threadsValue(threads),
      chunk_size: chunkSizeBytes(chunkMib),
      ...(physical
        ? {
            use_memory: memoryValue(useMemory),
            read_io_threads: threadsValue(readIoThreads),
            write_io_threads: threadsValue(writeIoThreads),
          }
        : {}),
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
    <form onSubmit={submit} noValidate aria-label="New restore">
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
                <NoSavedServers />
              ) : undefined
            }
          >
            {(props) => (
              <SavedServerSelect fieldProps={props} targets={targets.data?.data} value={targetId} onChange={setTargetId} />
            )}
          </Field>
        )}
      </div>
      <div className="panel">
        <h2>3. Options</h2>
        <div className="grid-3">
          {!physical && (
            <Field
              label="Database"
              hint="Restore into this database; needed when the dump has no CREATE DATABASE / USE of its own."
              error={fieldError("database")}
            >
              {(props) => <input {...props} value={database} onChange={(event) => setDatabase(event.target.value)} placeholder="(from the dump)" />}
            </Field>
          )}
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
          <Field
            label="Runner"
            hint={
              (chosenBackup && runnerMismatch(chosenRunner, chosenBackup.format)) ??
              (physical
                ? "A physical backup: mariabackup prepares a copy (applies its redo log), moves it into a new sandbox's datadir, starts the sandbox and checks every table. Sandbox targets only."
                : "What reads the backup and sends it to the server.")
            }
            error={fieldError("runner")}
          >
            {(props) => (
              <select {...props} value={chosenRunner} onChange={(event) => setRunner(event.target.value as Runner)}>
                {offeredRunners.map((r) => (
                  <option key={r.value} value={r.value}>
                    {r.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
          {physical ? (
            <>
              <Field
                label="Prepare memory (--use-memory)"
                hint="Buffer pool for applying the redo log, e.g. 1G; empty: 96M. Redo that does not fit takes several recovery batches."
                error={fieldError("use_memory")}
              >
                {(props) => <input {...props} value={useMemory} onChange={(event) => setUseMemory(event.target.value)} placeholder="96M" />}
              </Field>
              <Field label="Prepare read IO threads" hint="--innodb-read-io-threads, 1 – 64; empty: mariabackup's default." error={fieldError("read_io_threads")}>
                {(props) => (
                  <input {...props} inputMode="numeric" value={readIoThreads} onChange={(event) => setReadIoThreads(event.target.value)} placeholder="default" />
                )}
              </Field>
              <Field label="Prepare write IO threads" hint="--innodb-write-io-threads, 1 – 64; empty: mariabackup's default." error={fieldError("write_io_threads")}>
                {(props) => (
                  <input {...props} inputMode="numeric" value={writeIoThreads} onChange={(event) => setWriteIoThreads(event.target.value)} placeholder="default" />
                )}
              </Field>
            </>
          ) : (
            <>
              <Field
                label="Threads"
                hint="Connections loading in parallel (loader, myloader, mysqlimport), 1 – 64; empty: the worker's CPU count."
                error={fieldError("threads")}
              >
                {(props) => (
                  <input
                    {...props}
                    inputMode="numeric"
                    value={threads}
                    onChange={(event) => setThreads(event.target.value)}
                    placeholder="CPU count"
                  />
                )}
              </Field>
              <Field
                label="Chunk size (MiB)"
                hint="How much of a table the loader commits at a time, 0.0625 (64 KiB) – 1024 MiB."
                error={fieldError("chunk_size")}
              >
                {(props) => (
                  <input
                    {...props}
                    inputMode="decimal"
                    value={chunkMib}
                    onChange={(event) => setChunkMib(event.target.value)}
                  />
                )}
              </Field>
            </>
          )}
          <div className="field">
            <span className="label">Verification</span>
            <label>
              <input type="checkbox" checked={verify} onChange={(event) => setVerify(event.target.checked)} />{" "}
              {physical
                ? "CHECK TABLE every table of the restored server (off: count rows only)"
                : "Compare per-table row counts with the dump afterwards"}
            </label>
          </div>
          {!physical && verify && (
            <Field
              label="Compare checksums with"
              error={fieldError("checksum_source_id")}
              hint="A saved server holding the data the backup was taken from, unchanged since: CHECKSUM TABLE of every table there and here must match. It reads every row of both (slow on big tables)."
            >
              {(props) => (
                <select {...props} value={checksumSourceId} onChange={(event) => setChecksumSourceId(event.target.value)}>
                  <option value="">(row counts only)</option>
                  {targets.data?.data.map((target) => (
                    <option key={target.id} value={target.id}>
                      {target.name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          )}
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
