import { useQuery } from "@tanstack/react-query";
import { Link, useSearchParams } from "react-router-dom";

import { Empty, ErrorMessage, Loading, StatusBadge } from "../components/common";
import { useNow } from "../components/useNow";
import { MethodLegend, RunChart } from "../components/trends/RunChart";
import { StatusStrip } from "../components/trends/StatusStrip";
import { type DatabaseTrend, WINDOWS, runsCsvUrl, trendsQuery } from "../queries/trends";
import { formatBytes, formatRate } from "../timeline/format";
import { chartPoints, methodColour, methodsOf, timeDomain } from "../trends/chart";
import { formatDurationText, relativeTime } from "../trends/duration";

function fileName(path: string): string {
  return path.split("/").slice(-2).join("/");
}

function RtoVerdict({ trend }: { trend: DatabaseTrend }) {
  const state = trend.status.rto_state;
  if (state === "over") return <span className="badge bad">over RTO</span>;
  if (state === "within") return <span className="badge ok">within RTO</span>;
  return (
    <span className="badge warn" title="No successful restore of this database has been measured yet: run a drill">
      not measured
    </span>
  );
}

function EstimateCell({ trend }: { trend: DatabaseTrend }) {
  const estimate = trend.status.estimate;
  if (estimate === null) {
    return <span className="sub">{trend.status.latest_backup ? "no measured run yet: run a drill" : "no backup found"}</span>;
  }
  const runs = estimate.job_ids.length;
  return (
    <>
      <strong data-testid="estimate">{formatDurationText(estimate.seconds)}</strong>
      <div className="sub">
        {formatRate(estimate.mb_per_s)} + {formatDurationText(estimate.overhead_s)} start and checks · median of {runs} run
        {runs === 1 ? "" : "s"} of {estimate.measured_method}
        {estimate.measured_method !== estimate.method && ` (none yet of ${estimate.method})`}
      </div>
    </>
  );
}

function DrillCell({ trend, now }: { trend: DatabaseTrend; now: number }) {
  const { last_drill: last, next_drill_at: next, overdue_since: overdue } = trend.status;
  return (
    <>
      {overdue !== null && (
        <div>
          <span className="badge bad" title={`The drill due ${new Date(overdue).toLocaleString()} has not started`}>
            drill overdue
          </span>{" "}
          <span className="sub">due {relativeTime(overdue, now)}</span>
        </div>
      )}
      {last !== null ? (
        <div>
          <StatusBadge status={last.status} />{" "}
          {last.job_id !== null ? <Link to={`/jobs/${String(last.job_id)}`}>{relativeTime(last.created_at, now)}</Link> : relativeTime(last.created_at, now)}
        </div>
      ) : (
        <div className="sub">no drill yet</div>
      )}
      <div className="sub">{next !== null ? `next ${relativeTime(next, now)}` : "not scheduled"}</div>
    </>
  );
}

function RtoTable({ trends, now }: { trends: DatabaseTrend[]; now: number }) {
  return (
    <div className="panel">
      <h2>Can each database be restored in time?</h2>
      <div className="scroll">
        <table className="data" aria-label="Restore time objectives">
          <thead>
            <tr>
              <th>Database</th>
              <th className="num">RTO</th>
              <th>Latest backup</th>
              <th>Estimated restore</th>
              <th>Verdict</th>
              <th>Drills</th>
              <th className="num">Regressions</th>
            </tr>
          </thead>
          <tbody>
            {trends.map((trend) => {
              const backup = trend.status.latest_backup;
              return (
                <tr key={trend.protected_database_id} data-testid={`rto-${trend.name}`} className={trend.status.rto_state === "over" ? "flagged" : ""}>
                  <td>
                    <strong>{trend.name}</strong>
                    <div className="sub mono">{trend.database}</div>
                  </td>
                  <td className="num">{formatDurationText(trend.rto_s)}</td>
                  <td>
                    {backup ? (
                      <>
                        <span className="mono" title={backup.path}>
                          {fileName(backup.path)}
                        </span>{" "}
                        {backup.missing && <span className="badge bad">gone from disk</span>}
                        <div className="sub">
                          {formatBytes(backup.size_bytes)} · {relativeTime(backup.modified_at, now)}
                        </div>
                      </>
                    ) : (
                      <span className="sub">none found</span>
                    )}
                  </td>
                  <td>
                    <EstimateCell trend={trend} />
                  </td>
                  <td>
                    <RtoVerdict trend={trend} />
                  </td>
                  <td>
                    <DrillCell trend={trend} now={now} />
                  </td>
                  <td className="num">{trend.regressions > 0 ? <span className="badge warn">{trend.regressions}</span> : "0"}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function DatabasePanel({ trend, days, now }: { trend: DatabaseTrend; days: number; now: number }) {
  const colours = new Map(methodsOf(trend.runs).map((method, index) => [method, methodColour(index)]));
  const durations = chartPoints(trend.runs, "duration");
  const rates = chartPoints(trend.runs, "throughput");
  // Both charts share the time axis: fitted to the runs of either.
  const domain = timeDomain(now, days, durations.length > 0 ? durations : rates);
  const regressions = trend.runs.filter((run) => run.regression);
  return (
    <section className="panel" aria-label={`Trends of ${trend.name}`}>
      <div className="page-head" style={{ marginBottom: 6 }}>
        <h2 style={{ margin: 0 }}>{trend.name}</h2>
        <span className="sub">
          {trend.runs.length} run{trend.runs.length === 1 ? "" : "s"} in {days} days · days in {trend.timezone}
        </span>
      </div>
      <StatusStrip days={trend.days} name={trend.name} />
      {trend.runs.length === 0 ? (
        <Empty title="No restore in this window">Run a drill, or restore one of its backups, to see how long it takes.</Empty>
      ) : (
        <>
          <div className="grid-2">
            <div>
              <h3>Restore duration</h3>
              <RunChart
                label={`Restore duration of ${trend.name}`}
                points={durations}
                colours={colours}
                domain={domain}
                format={formatDurationText}
                reference={{ value: trend.rto_s, label: `RTO ${formatDurationText(trend.rto_s)}` }}
              />
            </div>
            <div>
              <h3>Throughput</h3>
              <RunChart label={`Throughput of ${trend.name}`} points={rates} colours={colours} domain={domain} format={formatRate} />
            </div>
          </div>
          <MethodLegend colours={colours} />
          {regressions.length > 0 && (
            <div className="message warn" style={{ marginTop: 8, marginBottom: 0 }}>
              <strong>Slower than usual</strong>
              {regressions.map((run) => (
                <div key={run.job_id ?? run.at}>
                  {run.job_id !== null && <Link to={`/jobs/${String(run.job_id)}`}>#{run.job_id}</Link>} {run.method}:{" "}
                  {formatRate(run.mb_per_s)} against a median of {formatRate(run.baseline_mb_per_s)} ({relativeTime(run.at, now)})
                </div>
              ))}
            </div>
          )}
        </>
      )}
    </section>
  );
}

export function TrendsPage() {
  const [params, setParams] = useSearchParams();
  const asked = Number(params.get("days"));
  const days = (WINDOWS as readonly number[]).includes(asked) ? asked : 30;
  const trends = useQuery(trendsQuery(days));
  const now = useNow();
  const databases = trends.data?.databases ?? [];

  return (
    <>
      <div className="page-head">
        <h1>Trends</h1>
        <span className="sub">restore time per protected database, from every restore and drill</span>
        <span className="spacer" />
        <label className="sub" htmlFor="window">
          Window
        </label>
        <select
          id="window"
          value={days}
          onChange={(event) => setParams(event.target.value === "30" ? {} : { days: event.target.value }, { replace: true })}
        >
          {WINDOWS.map((w) => (
            <option key={w} value={w}>
              {w} days
            </option>
          ))}
        </select>
        <a className="button" href={runsCsvUrl(days)} download>
          Export CSV
        </a>
        <Link className="button" to="/protected">
          Protected databases
        </Link>
      </div>
      {trends.isPending && <Loading what="trends" />}
      {trends.isError && <ErrorMessage error={trends.error} title="Could not read the trends" />}
      {trends.data && databases.length === 0 && (
        <Empty title="No protected database yet">
          <Link to="/protected">Protect a database</Link>: give it a target restore time and a drill schedule, and its
          restores show up here.
        </Empty>
      )}
      {databases.length > 0 && (
        <>
          <RtoTable trends={databases} now={now} />
          <p className="sub" style={{ marginTop: -4 }}>
            Regression: {trends.data?.regression_rule}.
          </p>
          {databases.map((trend) => (
            <DatabasePanel key={trend.protected_database_id} trend={trend} days={days} now={now} />
          ))}
        </>
      )}
    </>
  );
}
