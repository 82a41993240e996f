import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";

import { jobServerQuery } from "../queries/jobs";
import { formatBytes, formatCount } from "../timeline/format";
import { Empty, ErrorMessage, Loading } from "./common";

// What a DBA checks first after a restore; shown at the top of the variables table.
const KEY_VARIABLES = [
  "version",
  "innodb_buffer_pool_size",
  "innodb_log_file_size",
  "innodb_doublewrite",
  "innodb_flush_log_at_trx_commit",
  "innodb_flush_method",
  "innodb_use_native_aio",
  "innodb_linux_aio",
  "innodb_io_capacity",
  "innodb_autoinc_lock_mode",
  "log_bin",
  "sync_binlog",
  "performance_schema",
];

/** A variable's value; sizes in bytes also in binary units ("2147483648 · 2 GiB"). */
function valueText(name: string, value: string | undefined): string {
  if (value === undefined) return "–";
  const bytes = Number(value);
  return name.endsWith("_size") && /^\d+$/.test(value) && bytes >= 1024 ? `${value} · ${formatBytes(bytes)}` : value;
}

/** SHOW GLOBAL VARIABLES at start and end, and the STATUS counters that moved during the job. */
export function ServerState({ jobId, enabled, active }: { jobId: number; enabled: boolean; active: boolean }) {
  const state = useQuery(jobServerQuery(jobId, enabled));
  const [filter, setFilter] = useState("");

  const variables = useMemo(() => {
    const snapshots = state.data?.snapshots ?? [];
    const start = snapshots.find((s) => s.moment === "start") ?? snapshots[0];
    const end = snapshots.find((s) => s.moment === "end");
    const names = Object.keys(start?.variables ?? end?.variables ?? {});
    const rank = (name: string): number => {
      const index = KEY_VARIABLES.indexOf(name);
      return index === -1 ? KEY_VARIABLES.length : index;
    };
    names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    return names.map((name) => ({ name, start: start?.variables[name], end: end?.variables[name] }));
  }, [state.data]);

  const deltas = useMemo(
    () =>
      Object.entries(state.data?.status_delta ?? {})
        .filter(([, value]) => value !== 0)
        .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])),
    [state.data],
  );

  if (!enabled) return <Empty title="Server settings appear once the server has started" />;
  if (state.isPending) return <Loading what="server settings" />;
  if (state.isError) return <ErrorMessage error={state.error} title="Could not read the server's settings" />;
  if (state.data.snapshots.length === 0) {
    return <Empty title="No snapshot of the server was taken">The job ended before its server was up.</Empty>;
  }
  const needle = filter.trim().toLowerCase();
  const match = (name: string): boolean => needle === "" || name.toLowerCase().includes(needle);
  const hasEnd = state.data.snapshots.some((s) => s.moment === "end");

  return (
    <>
      <div className="filters" style={{ marginBottom: 8 }}>
        <input placeholder="Filter by name, e.g. innodb_log" aria-label="Filter server settings" value={filter} onChange={(event) => setFilter(event.target.value)} />
        <span className="sub">
          {state.data.snapshots.map((s) => `${s.moment} ${new Date(s.taken_at).toLocaleTimeString([], { hour12: false })}`).join(" · ")}
        </span>
      </div>
      <div className="grid-2">
        <div className="scroll" style={{ maxHeight: 360 }}>
          <table className="data fixed" aria-label="Server variables">
            <thead>
              <tr>
                <th style={{ width: hasEnd ? "40%" : "50%" }}>Variable</th>
                <th>At start</th>
                {hasEnd && <th>At end</th>}
              </tr>
            </thead>
            <tbody>
              {variables
                .filter((v) => match(v.name))
                .map((v) => (
                  <tr key={v.name} className={hasEnd && v.start !== v.end ? "changed" : ""}>
                    <td className="mono">{v.name}</td>
                    <td className="mono">{valueText(v.name, v.start)}</td>
                    {hasEnd && <td className="mono">{valueText(v.name, v.end)}</td>}
                  </tr>
                ))}
            </tbody>
          </table>
        </div>
        <div className="scroll" style={{ maxHeight: 360 }}>
          <table className="data" aria-label="Status counter deltas">
            <thead>
              <tr>
                <th>Status counter</th>
                <th className="num">Change during the job</th>
              </tr>
            </thead>
            <tbody>
              {deltas.length === 0 && (
                <tr>
                  <td colSpan={2} className="sub">
                    {hasEnd
                      ? "No counter moved."
                      : active
                        ? "Deltas appear when the job ends (the end snapshot)."
                        : "No end snapshot: the job stopped before its server could be read again."}
                  </td>
                </tr>
              )}
              {deltas
                .filter(([name]) => match(name))
                .map(([name, value]) => (
                  <tr key={name}>
                    <td className="mono">{name}</td>
                    <td className="num">{value > 0 ? "+" : ""}{formatCount(value)}</td>
                  </tr>
                ))}
            </tbody>
          </table>
        </div>
      </div>
    </>
  );
}
