import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router-dom";

import { canOperate } from "../auth/roles";
import { Empty, ErrorMessage, Loading, StatusBadge } from "../components/common";
import { ProtectedForm } from "../components/trends/ProtectedForm";
import { useNow } from "../components/useNow";
import { useCurrentUser } from "../queries/auth";
import { healthQuery } from "../queries/health";
import {
  type Drill,
  type Notification,
  type Protected,
  drillsQuery,
  notificationsQuery,
  protectedQuery,
  useDeleteProtected,
  useStartDrill,
  useTestNotification,
} from "../queries/protected";
import { formatBytes } from "../timeline/format";
import { formatDurationText, relativeTime } from "../trends/duration";

function ProtectedCard({
  item,
  smtpConfigured,
  now,
  operator,
}: {
  item: Protected;
  smtpConfigured: boolean;
  now: number;
  operator: boolean;
}) {
  const [editing, setEditing] = useState(false);
  const drill = useStartDrill();
  const test = useTestNotification();
  const remove = useDeleteProtected();
  const { status } = item;
  const backup = status.latest_backup;
  const running = status.active_drill_job_id;

  return (
    <section className="panel" aria-label={`Protected database ${item.name}`}>
      <div className="page-head" style={{ marginBottom: 8 }}>
        <h2 style={{ margin: 0 }}>{item.name}</h2>
        <span className="sub mono">{item.database}</span>
        {status.rto_state === "over" && <span className="badge bad">over RTO</span>}
        {status.overdue_since != null && <span className="badge bad">drill overdue</span>}
        <span className="spacer" />
        {operator && (
          <>
            <button
              className="primary"
              onClick={() => drill.mutate(item.id)}
              disabled={drill.isPending || running !== null}
              title={running !== null ? `A drill is running (job ${String(running)})` : "Restore and verify the latest backup in a sandbox now"}
            >
              {running !== null ? "Drill running…" : "Run drill now"}
            </button>
            <button onClick={() => test.mutate(item.id)} disabled={test.isPending || (!item.webhook && item.email_to.length === 0)}>
              Send test notification
            </button>
            <button onClick={() => setEditing(!editing)} aria-expanded={editing}>
              {editing ? "Close" : "Edit"}
            </button>
            <button
              className="danger"
              onClick={() => {
                if (window.confirm(`Stop protecting ${item.name}? Its drill records and notifications go; its jobs stay.`)) remove.mutate(item.id);
              }}
            >
              Delete
            </button>
          </>
        )}
        {!operator && running !== null && <span className="badge running">drill running</span>}
      </div>
      {drill.isError && <ErrorMessage error={drill.error} title="The drill did not start" />}
      {remove.isError && <ErrorMessage error={remove.error} title="Not deleted" />}
      {test.isError && <ErrorMessage error={test.error} title="The test was not sent" />}
      {test.data && (
        <div className={`message ${test.data.data.every((n) => n.status === "sent") ? "info" : "warn"}`} role="status">
          {test.data.data.map((n) => (
            <div key={n.id}>
              {n.channel} to {n.destination}: {n.status}
              {n.last_error ? ` (${n.last_error})` : ""}
            </div>
          ))}
        </div>
      )}
      <dl className="facts">
        <dt>RTO</dt>
        <dd>{formatDurationText(item.rto_s)}</dd>
        <dt>Backups</dt>
        <dd>
          {status.backups} found{item.backup_glob ? ` matching ${item.backup_glob}` : ""}
          {backup && (
            <span className="sub">
              {" "}
              · latest <span className="mono">{backup.path}</span> ({formatBytes(backup.size_bytes)}, {relativeTime(backup.modified_at, now)})
              {backup.missing && <span className="badge bad">gone from disk</span>}
            </span>
          )}
        </dd>
        <dt>Estimated restore</dt>
        <dd>
          {status.estimate ? `${formatDurationText(status.estimate.seconds)} (${status.estimate.measured_method})` : "not measured yet"}
        </dd>
        <dt>Drills</dt>
        <dd>
          {status.schedule_text ?? "by hand only"}
          {status.next_drill_at != null && <span className="sub"> · next {relativeTime(status.next_drill_at, now)}</span>}
          {status.overdue_since != null && <span className="sub"> · the one due {relativeTime(status.overdue_since, now)} has not started</span>}
        </dd>
        <dt>Notifications</dt>
        <dd>
          {[item.webhook ? `webhook ${item.webhook}${item.has_webhook_secret ? " (signed)" : ""}` : null, item.email_to.length > 0 ? `e-mail ${item.email_to.join(", ")}` : null]
            .filter((x) => x !== null)
            .join(" · ") || "none"}
          {item.email_to.length > 0 && !smtpConfigured && <span className="badge warn">SMTP not configured</span>}
        </dd>
      </dl>
      {editing && (
        <div style={{ marginTop: 10 }}>
          <ProtectedForm existing={item} smtpConfigured={smtpConfigured} onDone={() => setEditing(false)} />
        </div>
      )}
    </section>
  );
}

function DrillRows({ drills, now }: { drills: Drill[]; now: number }) {
  return (
    <table className="data" aria-label="Drills">
      <thead>
        <tr>
          <th>When</th>
          <th>Database</th>
          <th>Trigger</th>
          <th>Status</th>
          <th className="num">Duration</th>
          <th>Backup</th>
          <th>Outcome</th>
        </tr>
      </thead>
      <tbody>
        {drills.map((d) => (
          <tr key={d.id} data-testid={`drill-${String(d.id)}`}>
            <td title={new Date(d.created_at).toLocaleString()}>{relativeTime(d.created_at, now)}</td>
            <td>{d.protected_database_name}</td>
            <td>
              {d.trigger}
              {d.scheduled_for && <div className="sub">due {new Date(d.scheduled_for).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}</div>}
            </td>
            <td>
              <StatusBadge status={d.status} />
            </td>
            <td className="num">{formatDurationText(d.duration_s)}</td>
            <td className="mono">{d.backup_path?.split("/").slice(-2).join("/") ?? "–"}</td>
            <td>
              {d.job_id !== null && <Link to={`/jobs/${String(d.job_id)}`}>job #{d.job_id}</Link>}{" "}
              {d.backup_verdict === "restores" && <span className="badge ok">restores</span>}
              {d.backup_verdict === "does_not_restore" && <span className="badge bad">does not restore</span>}
              {d.error && <div className="sub">{d.error}</div>}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function NotificationRows({ notifications, now }: { notifications: Notification[]; now: number }) {
  return (
    <table className="data" aria-label="Notifications">
      <thead>
        <tr>
          <th>When</th>
          <th>Event</th>
          <th>Channel</th>
          <th>Status</th>
          <th className="num">Attempts</th>
          <th>Problem</th>
        </tr>
      </thead>
      <tbody>
        {notifications.map((n) => (
          <tr key={n.id}>
            <td title={new Date(n.created_at).toLocaleString()}>{relativeTime(n.created_at, now)}</td>
            <td>
              {n.summary}
              <div className="sub">{n.event}</div>
            </td>
            <td>
              {n.channel}
              <div className="sub">{n.destination}</div>
            </td>
            <td>
              <span className={`badge ${n.status === "sent" ? "ok" : n.status === "failed" ? "bad" : "warn"}`}>{n.status}</span>
              {n.next_attempt_at != null && <div className="sub">next try {relativeTime(n.next_attempt_at, now)}</div>}
            </td>
            <td className="num">{n.attempts}</td>
            <td>{n.last_error ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ProtectedPage() {
  const [adding, setAdding] = useState(false);
  // Viewers read; changing a database, starting a drill or a test needs an operator (the API says 403 otherwise).
  const operator = canOperate(useCurrentUser().role);
  const protectedList = useQuery(protectedQuery());
  const drills = useQuery(drillsQuery(null));
  const notifications = useQuery(notificationsQuery(null));
  const health = useQuery(healthQuery());
  const now = useNow();
  const items = protectedList.data?.data ?? [];
  const smtp = protectedList.data?.smtp_configured ?? false;
  const scheduled = items.some((p) => p.drill_schedule);

  return (
    <>
      <div className="page-head">
        <h1>Protected databases</h1>
        <span className="sub">target restore times, drills and who hears about problems</span>
        <span className="spacer" />
        <Link className="button" to="/trends">
          Trends
        </Link>
        {operator && (
          <button className="primary" onClick={() => setAdding(!adding)} aria-expanded={adding}>
            {adding ? "Close" : "Protect a database"}
          </button>
        )}
      </div>
      {scheduled && health.data && health.data.schedulers.length === 0 && (
        <div className="message warn" role="alert">
          <strong>No scheduler is running</strong>
          Scheduled drills do not start and overdue drills are not told until Celery beat runs (make run starts it).
        </div>
      )}
      {adding && operator && (
        <div className="panel">
          <h2>Protect a database</h2>
          <ProtectedForm smtpConfigured={smtp} onDone={() => setAdding(false)} />
        </div>
      )}
      {protectedList.isPending && <Loading what="protected databases" />}
      {protectedList.isError && <ErrorMessage error={protectedList.error} title="Could not read the protected databases" />}
      {protectedList.data && items.length === 0 && !adding && (
        <Empty title="No protected database yet">
          {operator ? "Protect one" : "An operator can protect one"} to give it a target restore time (RTO), drills on a
          schedule and notifications.
        </Empty>
      )}
      {items.map((item) => (
        <ProtectedCard key={item.id} item={item} smtpConfigured={smtp} now={now} operator={operator} />
      ))}
      {items.length > 0 && (
        <div className="panel">
          <h2>Drills</h2>
          {drills.isError && <ErrorMessage error={drills.error} title="Could not read the drills" />}
          {drills.data && drills.data.data.length === 0 && <div className="sub">No drill yet.</div>}
          {drills.data && drills.data.data.length > 0 && (
            <div className="scroll">
              <DrillRows drills={drills.data.data} now={now} />
            </div>
          )}
        </div>
      )}
      {items.length > 0 && (
        <div className="panel">
          <h2>Notifications</h2>
          {notifications.isError && <ErrorMessage error={notifications.error} title="Could not read the notifications" />}
          {notifications.data && notifications.data.data.length === 0 && <div className="sub">Nothing told yet.</div>}
          {notifications.data && notifications.data.data.length > 0 && (
            <div className="scroll">
              <NotificationRows notifications={notifications.data.data} now={now} />
            </div>
          )}
        </div>
      )}
    </>
  );
}
