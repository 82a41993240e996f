import { useQuery } from "@tanstack/react-query";
import { Fragment, useState } from "react";
import { Link, useNavigate, useParams } from "react-router-dom";

import { ApiError, errorMessage } from "../api/errors";
import { AdvisorPanel } from "../components/AdvisorPanel";
import { canOperate } from "../auth/roles";
import { Empty, ErrorMessage, Loading, ProgressBar, StatusBadge } from "../components/common";
import { BACKUP_PHASES, backupFacts } from "../components/backupJob";
import { backupText, captureText, drillText, phaseText, targetText } from "../components/jobText";
import { restorePhases, runnerText } from "../components/runners";
import { LogTail } from "../components/LogTail";
import { ServerState } from "../components/ServerState";
import { useCurrentUser } from "../queries/auth";
import { backupRootsQuery } from "../queries/backups";
import { traceQuery } from "../queries/traces";
import { type JobDetail, isActive, jobQuery, useCancelJob, useJobEvents, useRetryJob } from "../queries/jobs";
import { formatBytes, formatCount, formatPercent, formatRate, formatRowsPerSecond, formatSeconds } from "../timeline/format";

function Phases({ job }: { job: JobDetail }) {
  const PHASES = job.kind === "backup" ? BACKUP_PHASES : restorePhases(job.parameters);
  const wayIn = ["queued", "waiting_for_target", "preparing", "starting_server", "connecting", "restoring", "backing_up", "verifying"];
  const lastWayIn = Math.max(
    wayIn.includes(job.phase) ? PHASES.indexOf(job.phase) : -1,
    ...wayIn.filter((phase) => job.phase_times[phase] !== undefined).map((phase) => PHASES.indexOf(phase)),
  );
  return (
    <div className="phases" aria-label="Phases">
      {PHASES.filter((p) => p !== "waiting_for_target" || job.phase_times[p] !== undefined).map((phase) => {
        // Done means the phase ran: it has times, or a later phase of the way in has (connecting leaves
        // none of its own). Phases after the last one that ran (verifying, after a cancel) were skipped.
        const index = PHASES.indexOf(phase);
        const ran = job.phase_times[phase] !== undefined || index < lastWayIn;
        const state = phase === job.phase ? "current" : ran ? "done" : "";
        const times = job.phase_times[phase];
        const took =
          times?.[0] && times[1] ? ` ${formatSeconds((Date.parse(times[1]) - Date.parse(times[0])) / 1000)}` : "";
        return (
          <span key={phase} className={state}>
            {phaseText(phase)}
            {took}
          </span>
        );
      })}
    </div>
  );
}

function Progress({ job }: { job: JobDetail }) {
  return (
    <div className="panel">
      <div className="page-head" style={{ marginBottom: 4 }}>
        <h2 style={{ margin: 0 }}>Progress</h2>
        <span className="sub">phase: {phaseText(job.phase)}</span>
      </div>
      <Phases job={job} />
      <ProgressBar percent={job.percent} status={job.status} />
      <div className="stats">
        <div className="stat">
          <div className="value" data-testid="percent">
            {formatPercent(job.percent)}
          </div>
          <div className="label">{job.kind === "backup" ? "of the source's table data written (estimate)" : "of the backup read"}</div>
        </div>
        <div className="stat">
          <div className="value">{formatRate(job.mb_per_s)}</div>
          <div className="label">throughput</div>
        </div>
        {job.kind !== "backup" && (
          <div className="stat">
            <div className="value">{formatRowsPerSecond(job.rows_per_s)}</div>
            <div className="label">rows</div>
          </div>
        )}
        <div className="stat">
          <div className="value">{isActive(job.status) ? formatSeconds(job.eta_s) : "–"}</div>
          <div className="label">time left</div>
        </div>
        <div className="stat">
          <div className="value">
            {formatBytes(job.bytes_done)} / {formatBytes(job.bytes_total)}
          </div>
          <div className="label">bytes</div>
        </div>
        {job.kind !== "backup" && (
          <div className="stat">
            <div className="value">{formatCount(job.rows_done)}</div>
            <div className="label">rows restored</div>
          </div>
        )}
        <div className="stat">
          <div className="value">{formatSeconds(job.duration_s)}</div>
          <div className="label">elapsed</div>
        </div>
      </div>
    </div>
  );
}

function Verification({ job }: { job: JobDetail }) {
  if (job.verification.length === 0) {
    const why = isActive(job.status)
      ? "Row counts are compared once the restore has finished."
      : job.parameters.verify === false
        ? "Verification was turned off for this job."
        : "No table was verified.";
    return <Empty title="No verification yet">{why}</Empty>;
  }
  const failed = job.verification.filter((v) => !v.ok).length;
  return (
    <>
      <p className={failed > 0 ? "field-error" : "sub"} style={{ marginTop: 0 }}>
        {failed > 0 ? `${String(failed)} of ${String(job.verification.length)} checks failed.` : `All ${String(job.verification.length)} checks passed.`}
      </p>
      <div className="scroll" style={{ maxHeight: 320 }}>
        <table className="data" aria-label="Verification">
          <thead>
            <tr>
              <th>Table</th>
              <th>Check</th>
              <th className="num">Expected</th>
              <th className="num">Actual</th>
              <th>Result</th>
            </tr>
          </thead>
          <tbody>
            {job.verification.map((v) => (
              <tr key={`${v.database}.${v.table}.${v.check}`}>
                <td className="mono">
                  {v.database}.{v.table}
                </td>
                <td>{checkText(v.check)}</td>
                <td className="num">{checkValue(v.check, v.expected)}</td>
                <td className="num">{checkValue(v.check, v.actual)}</td>
                <td>
                  <span className={`badge ${v.ok ? "ok" : "bad"}`}>{v.ok ? "ok" : "mismatch"}</span>
                  {v.detail && <span className="sub"> {v.detail}</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** "row count", "check table", and "checksum vs source": the source's CHECKSUM TABLE against the restored one. */
function checkText(check: string): string {
  return check === "checksum" ? "checksum vs source" : check.replaceAll("_", " ");
}

/** Row counts read as counts; a checksum (expected: the source's, actual: the restored table's) as the number
 * CHECKSUM TABLE printed, so it can be compared with the server's own output. */
function checkValue(check: string, value: number | null): string {
  if (check === "checksum") return value === null ? "missing" : String(value);
  return formatCount(value);
}

/** A long message (a tool's whole output) shows its start, with the rest a click away. */
function LongText({ text, limit = 400 }: { text: string; limit?: number }) {
  const [open, setOpen] = useState(false);
  if (text.length <= limit) return <>{text}</>;
  return (
    <>
      {open ? text : `${text.slice(0, limit)}…`}{" "}
      <button className="small" onClick={() => setOpen(!open)}>
        {open ? "Show less" : "Show all"}
      </button>
    </>
  );
}

/** What the job's IO trace holds, kept fresh while it records, with the way to the timeline. */
function TraceFacts({ jobId, active }: { jobId: number; active: boolean }) {
  const trace = useQuery(traceQuery(jobId, active));
  if (trace.isPending) return <span className="sub">…</span>;
  if (trace.isError) {
    return <span className="sub">{trace.error instanceof ApiError && trace.error.status === 404 ? (active ? "starts with the restore" : "none recorded") : errorMessage(trace.error)}</span>;
  }
  const summary = trace.data;
  return (
    <span>
      <StatusBadge status={summary.status} /> {summary.backend}
      {summary.aio_mode ? ` (AIO ${summary.aio_mode})` : ""} · {formatCount(summary.operations)} operations on {summary.lanes.length} threads ·{" "}
      <Link to={`/jobs/${String(jobId)}/timeline`}>open the timeline</Link>
    </span>
  );
}

function Facts({ job }: { job: JobDetail }) {
  const target = job.parameters.target as { options?: Record<string, unknown> } | undefined;
  // Settings actually set: None means "the server's default", and an empty extra dict says nothing.
  const options = Object.entries(target?.options ?? {})
    .filter(([, value]) => value !== null && !(typeof value === "object" && Object.keys(value).length === 0))
    .map(([name, value]) => `${name}=${typeof value === "string" ? value : JSON.stringify(value)}`);
  const time = (iso: string | null): string => (iso ? new Date(iso).toLocaleString([], { hour12: false }) : "–");
  return (
    <dl className="facts">
      <dt>Backup</dt>
      <dd>
        <span className="mono">{job.backup_path ?? "–"}</span>
        {job.backup_verdict === "restores" && (
          <span className="badge ok" title="This run restored the backup and verified every table">
            restores
          </span>
        )}
        {job.backup_verdict === "does_not_restore" && (
          <span
            className="badge bad"
            title="The backup could not be read, a fresh sandbox rejected it, or it came back different: see the error"
          >
            does not restore
          </span>
        )}
      </dd>
      {job.kind === "backup" ? (
        backupFacts(job.parameters).map(([label, text]) => (
          <Fragment key={label}>
            <dt>{label}</dt>
            <dd className={label === "Destination" ? "mono" : undefined}>{text}</dd>
          </Fragment>
        ))
      ) : (
        <>
          <dt>Target</dt>
          <dd>{targetText(job)}</dd>
        </>
      )}
      {options.length > 0 && (
        <>
          <dt>Settings</dt>
          <dd className="mono">{options.join(" ")}</dd>
        </>
      )}
      {drillText(job.parameters) !== null && (
        <>
          <dt>Drill</dt>
          <dd>
            <Link to="/protected">{drillText(job.parameters)}</Link>
          </dd>
        </>
      )}
      {runnerText(job.parameters) !== null && (
        <>
          <dt>Runner</dt>
          <dd>{runnerText(job.parameters)}</dd>
        </>
      )}
      {captureText(job) !== null && (
        <>
          <dt>Capture</dt>
          <dd>{captureText(job)}</dd>
        </>
      )}
      {job.kind !== "backup" && (
        <>
          <dt>IO trace</dt>
          <dd>
            <TraceFacts jobId={job.id} active={isActive(job.status)} />
          </dd>
        </>
      )}
      <dt>Server</dt>
      <dd>{job.server_version ? `${job.server_flavour ?? ""} ${job.server_version}` : "–"}</dd>
      {job.sandbox_port !== null && (
        <>
          <dt>Sandbox</dt>
          <dd className="mono">
            port {job.sandbox_port}
            {job.sandbox_kept && job.sandbox_dir ? ` · kept in ${job.sandbox_dir}` : ""}
          </dd>
        </>
      )}
      <dt>Created</dt>
      <dd>{time(job.created_at)}</dd>
      <dt>Started</dt>
      <dd>{time(job.started_at)}</dd>
      <dt>Finished</dt>
      <dd>{time(job.finished_at)}</dd>
      <dt>Started by</dt>
      <dd>{job.started_by ?? "–"}</dd>
      <dt>Worker</dt>
      <dd className="mono">{job.worker ?? "–"}</dd>
      {job.parent_id !== null && (
        <>
          <dt>Re-run of</dt>
          <dd>
            <Link to={`/jobs/${String(job.parent_id)}`}>job #{job.parent_id}</Link> ·{" "}
            <Link to={`/compare?a=${String(job.parent_id)}&b=${String(job.id)}`}>compare</Link>
          </dd>
        </>
      )}
    </dl>
  );
}

export function RunPage() {
  const jobId = Number(useParams().jobId);
  const navigate = useNavigate();
  const job = useQuery(jobQuery(jobId));
  const events = useJobEvents(jobId);
  const cancel = useCancelJob(jobId);
  const retry = useRetryJob(jobId);
  const roots = useQuery(backupRootsQuery());
  const operator = canOperate(useCurrentUser().role);

  if (!Number.isSafeInteger(jobId)) return <Empty title="That is not a job number" />;
  if (job.isPending) return <Loading what={`job #${String(jobId)}`} />;
  if (job.isError) {
    return (
      <ErrorMessage error={job.error} title={`Could not read job #${String(jobId)}`}>
        <div>
          <Link to="/">Back to the jobs</Link>
        </div>
      </ErrorMessage>
    );
  }
  const data = job.data;
  const active = isActive(data.status);
  const serverStarted = data.started_at !== null && data.phase !== "starting_server" && data.phase !== "queued";

  return (
    <>
      <div className="page-head">
        <h1>
          {data.kind === "import" ? "Import" : data.kind === "backup" ? "Backup" : "Restore"} #{data.id}
        </h1>
        <StatusBadge status={data.status} />
        {data.cancel_requested && active && <span className="badge warn">cancelling</span>}
        <span className="sub mono" title={data.backup_path ?? undefined}>
          {backupText(data, roots.data ?? [])}
        </span>
        <span className="spacer" />
        {data.kind !== "backup" && (
          <Link className="button" to={`/jobs/${String(jobId)}/timeline`}>
            IO timeline
          </Link>
        )}
        {operator && active && (
          <button
            className="danger"
            disabled={cancel.isPending || data.cancel_requested}
            onClick={() => {
              const removed = data.kind === "backup" ? "its partial files removed" : "its sandbox removed";
              if (window.confirm(`Cancel job #${String(jobId)}? Its processes are killed and ${removed}.`)) cancel.mutate();
            }}
          >
            Cancel
          </button>
        )}
        {/* A finished backup is not taken again into the same directory: that retry would be refused. */}
        {operator && !active && (data.kind === "restore" || (data.kind === "backup" && data.status !== "succeeded")) && (
          <button disabled={retry.isPending} onClick={() => retry.mutate(undefined, { onSuccess: (next) => void navigate(`/jobs/${String(next.id)}`) })}>
            Retry
          </button>
        )}
      </div>
      {cancel.isError && <ErrorMessage error={cancel.error} title="Could not cancel" />}
      {retry.isError && <ErrorMessage error={retry.error} title="Could not retry" />}
      {data.error && (
        <div className={`message ${data.status === "cancelled" ? "warn" : "error"}`} role="alert">
          <strong>{data.status === "cancelled" ? "The job was cancelled" : "The job failed"}</strong>
          <LongText text={data.error} />
        </div>
      )}
      {data.status === "queued" && (
        <div className="message info">Waiting for a worker to pick the job up. The health dot at the top says whether one is running.</div>
      )}
      {(data.kind === "restore" || data.kind === "backup") && <Progress job={data} />}
      {(data.kind === "restore" || data.kind === "import") && (
        <div className="panel">
          <h2>Advisor</h2>
          <AdvisorPanel
            jobId={jobId}
            canRerun={data.kind === "restore" && operator}
            onShow={(suggestion) => void navigate(`/jobs/${String(jobId)}/timeline?advice=${suggestion.rule}`)}
          />
        </div>
      )}
      <div className="grid-2">
        <div className="panel">
          <h2>Log {events.streaming && <span className="badge running">live</span>}</h2>
          <LogTail lines={events.lines} streaming={events.streaming} />
        </div>
        <div className="panel">
          <h2>Details</h2>
          <Facts job={data} />
        </div>
      </div>
      {data.kind === "restore" && (
        <>
          <div className="panel">
            <h2>Verification</h2>
            <Verification job={data} />
          </div>
          <div className="panel">
            <h2>Server settings used</h2>
            <ServerState jobId={jobId} enabled={serverStarted || !active} active={active} />
          </div>
        </>
      )}
    </>
  );
}
