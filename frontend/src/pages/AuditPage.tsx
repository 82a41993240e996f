import { useQuery } from "@tanstack/react-query";
import { Link, useSearchParams } from "react-router-dom";

import { Empty, ErrorMessage, Loading } from "../components/common";
import { RequireRole } from "../components/RequireLogin";
import { whenText } from "../components/when";
import { type AuditEvent, EVENTS_PER_PAGE, auditQuery } from "../queries/audit";

function ObjectCell({ event }: { event: AuditEvent }) {
  if (event.object_type === null) return <span className="sub">–</span>;
  if (event.object_type === "job" && event.object_id !== null) return <Link to={`/jobs/${event.object_id}`}>job #{event.object_id}</Link>;
  if (event.object_type === "target" && event.object_id !== null) return <Link to="/servers">saved server #{event.object_id}</Link>;
  return (
    <>
      {event.object_type} #{event.object_id}
    </>
  );
}

function Audit() {
  const [params, setParams] = useSearchParams();
  const action = params.get("action") ?? "";
  const username = params.get("username") ?? "";
  const offset = Math.max(0, Number(params.get("offset") ?? 0) || 0);
  const events = useQuery(auditQuery({ action, username, offset }));

  const set = (name: string, value: string): void => {
    const next = new URLSearchParams(params);
    next.delete("offset");
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };
  const count = events.data?.count ?? 0;

  return (
    <>
      <div className="page-head">
        <h1>Audit log</h1>
        {events.data && <span className="sub">{count} event{count === 1 ? "" : "s"}, newest first</span>}
      </div>
      <div className="panel">
        <div className="filters" style={{ marginBottom: 10 }}>
          <span className="sub">Action</span>
          <select aria-label="Action" value={action} onChange={(event) => set("action", event.target.value)}>
            <option value="">all</option>
            {(events.data?.actions ?? []).map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
          <span className="sub" style={{ marginLeft: 12 }}>
            User
          </span>
          <input aria-label="User" value={username} placeholder="any" onChange={(event) => set("username", event.target.value)} />
        </div>
        {events.isPending && <Loading what="the audit log" />}
        {events.isError && <ErrorMessage error={events.error} title="Could not read the audit log" />}
        {events.data?.data.length === 0 && <Empty title="No event matches these filters" />}
        {events.data && events.data.data.length > 0 && (
          <div className="scroll">
            <table className="data" aria-label="Audit events">
              <thead>
                <tr>
                  <th>When</th>
                  <th>Who</th>
                  <th>Action</th>
                  <th>Object</th>
                  <th>Detail</th>
                  <th>From</th>
                </tr>
              </thead>
              <tbody>
                {events.data.data.map((event) => (
                  <tr key={event.id}>
                    <td title={event.created_at}>{whenText(event.created_at)}</td>
                    <td>{event.username ?? <span className="sub">–</span>}</td>
                    <td className="mono">{event.action}</td>
                    <td>
                      <ObjectCell event={event} />
                    </td>
                    <td>{event.detail ?? <span className="sub">–</span>}</td>
                    <td className="mono">{event.client ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {count > EVENTS_PER_PAGE && (
          <div className="filters" style={{ marginTop: 10 }}>
            <button className="small" disabled={offset === 0} onClick={() => set("offset", String(Math.max(0, offset - EVENTS_PER_PAGE)))}>
              Newer
            </button>
            <span className="sub">
              {offset + 1}–{Math.min(count, offset + EVENTS_PER_PAGE)} of {count}
            </span>
            <button className="small" disabled={offset + EVENTS_PER_PAGE >= count} onClick={() => set("offset", String(offset + EVENTS_PER_PAGE))}>
              Older
            </button>
          </div>
        )}
      </div>
    </>
  );
}

export function AuditPage() {
  return (
    <RequireRole role="admin" what="reading the audit log">
      <Audit />
    </RequireRole>
  );
}
