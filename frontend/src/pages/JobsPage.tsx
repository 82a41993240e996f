import { useQuery } from "@tanstack/react-query";
import { Link, useNavigate, useSearchParams } from "react-router-dom";

import { canOperate } from "../auth/roles";
import { Empty, ErrorMessage, Loading, ProgressBar, StatusBadge } from "../components/common";
import { backupText, phaseText, targetText } from "../components/jobText";
import { useCurrentUser } from "../queries/auth";
import { backupRootsQuery } from "../queries/backups";
import { JOBS_PER_PAGE, JOB_STATUSES, type Job, isActive, jobsQuery } from "../queries/jobs";
import { formatRate, formatSeconds } from "../timeline/format";

const KINDS = ["restore", "backup", "import"];

function startedText(job: Job): string {
  const when = new Date(job.created_at);
  const today = new Date().toDateString() === when.toDateString();
  return today
    ? when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : when.toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}

function JobRow({ job, roots }: { job: Job; roots: string[] }) {
  const navigate = useNavigate();
  const href = `/jobs/${String(job.id)}`;
  return (
    <tr className="clickable" onClick={() => void navigate(href)} data-testid={`job-row-${String(job.id)}`}>
      <td className="num">
        <Link to={href} onClick={(event) => event.stopPropagation()}>
          #{job.id}
        </Link>
      </td>
      <td>
        <StatusBadge status={job.status} />
        {isActive(job.status) && <div className="sub">{phaseText(job.phase)}</div>}
      </td>
      <td>{job.kind}</td>
      <td className="mono" title={job.backup_path ?? undefined}>
        {backupText(job, roots)}
      </td>
      <td>{targetText(job)}</td>
      <td>{startedText(job)}</td>
      <td className="num">{formatSeconds(job.duration_s)}</td>
      <td style={{ minWidth: 120 }}>
        {job.kind === "restore" || job.kind === "backup" ? (
          <>
            <ProgressBar percent={job.percent} status={job.status} small />
            <span className="sub">{job.percent === null ? "–" : `${job.percent.toFixed(0)} %`}</span>
          </>
        ) : (
          "–"
        )}
      </td>
      <td className="num">{formatRate(job.mb_per_s)}</td>
      <td>{job.started_by ?? <span className="sub">–</span>}</td>
    </tr>
  );
}

export function JobsPage() {
  const [params, setParams] = useSearchParams();
  const status = params.getAll("status");
  const kind = params.get("kind") ?? "";
  const offset = Math.max(0, Number(params.get("offset") ?? 0) || 0);
  const jobs = useQuery(jobsQuery({ status, kind, offset }));
  const roots = useQuery(backupRootsQuery());
  const operator = canOperate(useCurrentUser().role);

  const setOffset = (value: number): void => {
    const next = new URLSearchParams(params);
    if (value > 0) next.set("offset", String(value));
    else next.delete("offset");
    setParams(next, { replace: true });
  };
  const toggleStatus = (value: string): void => {
    const next = new URLSearchParams(params);
    next.delete("offset");
    next.delete("status");
    for (const s of status.includes(value) ? status.filter((x) => x !== value) : [...status, value]) next.append("status", s);
    setParams(next, { replace: true });
  };
  const setKind = (value: string): void => {
    const next = new URLSearchParams(params);
    next.delete("offset");
    if (value) next.set("kind", value);
    else next.delete("kind");
    setParams(next, { replace: true });
  };
  const filtered = status.length > 0 || kind !== "";
  const active = jobs.data?.data.filter((job) => isActive(job.status)).length ?? 0;

  return (
    <>
      <div className="page-head">
        <h1>Jobs</h1>
        {jobs.data && (
          <span className="sub">
            {jobs.data.count} job{jobs.data.count === 1 ? "" : "s"}
            {active > 0 && ` · ${String(active)} active, updating live`}
          </span>
        )}
        <span className="spacer" />
        {operator && (
          <>
            <Link className="button" to="/import">
              Import a trace
            </Link>
            <Link className="button primary" to="/launch">
              New restore
            </Link>
          </>
        )}
      </div>
      <div className="panel">
        <div className="filters" style={{ marginBottom: 10 }}>
          <span className="sub">Status</span>
          {JOB_STATUSES.map((s) => (
            <button key={s} className="toggle small" aria-pressed={status.includes(s)} onClick={() => toggleStatus(s)}>
              {s}
            </button>
          ))}
          <span className="sub" style={{ marginLeft: 12 }}>
            Kind
          </span>
          <select aria-label="Kind" value={kind} onChange={(event) => setKind(event.target.value)}>
            <option value="">all</option>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
          {filtered && (
            <button className="small" onClick={() => setParams(new URLSearchParams(), { replace: true })}>
              Clear filters
            </button>
          )}
        </div>
        {jobs.isPending && <Loading what="jobs" />}
        {jobs.isError && <ErrorMessage error={jobs.error} title="Could not read the jobs" />}
        {jobs.data && jobs.data.data.length === 0 && (
          <Empty title={filtered ? "No job matches these filters" : "No jobs yet"}>
            {filtered ? (
              "Clear the filters to see every job."
            ) : !operator ? (
              "Jobs that operators launch show here."
            ) : (
              <>
                <Link to="/launch">Launch a restore</Link> of a backup, or <Link to="/import">import a trace</Link> you
                captured elsewhere.
              </>
            )}
          </Empty>
        )}
        {jobs.data && jobs.data.data.length > 0 && (
          <div className="scroll">
            <table className="data">
              <thead>
                <tr>
                  <th className="num">Job</th>
                  <th>Status</th>
                  <th>Kind</th>
                  <th>Backup</th>
                  <th>Target</th>
                  <th>Created</th>
                  <th className="num">Duration</th>
                  <th>Progress</th>
                  <th className="num">MB/s</th>
                  <th>Started by</th>
                </tr>
              </thead>
              <tbody>
                {jobs.data.data.map((job) => (
                  <JobRow key={job.id} job={job} roots={roots.data ?? []} />
                ))}
              </tbody>
            </table>
            {jobs.data.count > JOBS_PER_PAGE && (
              <div className="filters" style={{ marginTop: 8 }}>
                <span className="sub">
                  {offset + 1}–{offset + jobs.data.data.length} of {jobs.data.count}
                </span>
                <button className="small" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - JOBS_PER_PAGE))}>
                  Newer
                </button>
                <button
                  className="small"
                  disabled={offset + JOBS_PER_PAGE >= jobs.data.count}
                  onClick={() => setOffset(offset + JOBS_PER_PAGE)}
                >
                  Older
                </button>
              </div>
            )}
          </div>
        )}
      </div>
    </>
  );
}
