import { memo } from "react";

import type { TraceStats } from "../../queries/traces";
import { dataDirectory, formatBytes, formatCount, formatDuration, formatPercent, formatRate } from "../../timeline/format";
import { type Kind, asKind } from "../../timeline/kinds";
import type { Palette } from "./palette";

function Swatch({ kind, palette }: { kind: Kind; palette: Palette }) {
  return <span className="swatch" style={{ background: palette.kinds[kind], display: "inline-block", width: 10, height: 10, borderRadius: 2, marginRight: 6 }} />;
}

/** Per-kind counts, bytes, MB/s and latency percentiles of a time range. */
function KindTableView({ stats, palette, label }: { stats: TraceStats; palette: Palette; label: string }) {
  if (stats.by_kind.length === 0) return <p className="sub">No operation in this range.</p>;
  return (
    <table className="data" aria-label={label}>
      <thead>
        <tr>
          <th>Kind</th>
          <th className="num">Operations</th>
          <th className="num">Bytes</th>
          <th className="num">MB/s</th>
          <th className="num">p50</th>
          <th className="num">p95</th>
          <th className="num">p99</th>
          <th className="num">max</th>
        </tr>
      </thead>
      <tbody>
        {stats.by_kind.map((row) => (
          <tr key={row.kind} className="kind-row">
            <td>
              <Swatch kind={asKind(row.kind)} palette={palette} />
              {row.kind}
            </td>
            <td className="num">{formatCount(row.count)}</td>
            <td className="num">{formatBytes(row.bytes)}</td>
            <td className="num">{formatRate(row.mb_per_s)}</td>
            <td className="num">{formatDuration(row.latency_us.p50)}</td>
            <td className="num">{formatDuration(row.latency_us.p95)}</td>
            <td className="num">{formatDuration(row.latency_us.p99)}</td>
            <td className="num">{formatDuration(row.latency_us.max)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** One small bar chart per kind: how many operations fell under each bucket bound. */
function Histogram({
  title,
  series,
  palette,
  bound,
}: {
  title: string;
  series: { kind: string; buckets: { bound: number; count: number }[] }[];
  palette: Palette;
  bound: (value: number) => string;
}) {
  const shown = series.filter((s) => s.buckets.some((b) => b.count > 0));
  return (
    <div className="panel">
      <h3>{title}</h3>
      {shown.length === 0 && <p className="sub">Nothing to show.</p>}
      {shown.map((s) => {
        const kind = asKind(s.kind);
        const peak = Math.max(1, ...s.buckets.map((b) => b.count));
        const used = s.buckets.slice(
          Math.max(0, s.buckets.findIndex((b) => b.count > 0)),
          s.buckets.length - [...s.buckets].reverse().findIndex((b) => b.count > 0),
        );
        // At most an eighth of the width per bar, so one or two buckets read as bars, not as a filled box.
        const barWidth = Math.min(100 / Math.max(used.length, 1), 12.5);
        return (
          <div key={s.kind} style={{ marginBottom: 10 }}>
            <div className="sub" style={{ fontSize: 12 }}>
              <Swatch kind={kind} palette={palette} />
              {s.kind}
            </div>
            <svg className="hist" viewBox="0 0 100 30" preserveAspectRatio="none" height={40} role="img" aria-label={`${title}: ${s.kind}`}>
              {used.map((b, index) => {
                const h = (b.count / peak) * 28;
                return (
                  <rect key={b.bound} x={index * barWidth + 0.3} width={barWidth - 0.6} y={30 - h} height={h} fill={palette.kinds[kind]}>
                    <title>
                      ≤ {bound(b.bound)}: {formatCount(b.count)}
                    </title>
                  </rect>
                );
              })}
            </svg>
            <div className="sub" style={{ display: "flex", justifyContent: "space-between", fontSize: 10, width: `${String(Math.max(used.length * barWidth, 30))}%` }}>
              <span>≤ {used[0] ? bound(used[0].bound) : ""}</span>
              {used.length > 1 && <span>≤ {bound(used[used.length - 1]?.bound ?? 0)}</span>}
            </div>
          </div>
        );
      })}
    </div>
  );
}

/** The panels under the timeline: histograms, busy threads, files, and how sequential the IO was. */
function StatsPanelsView({ stats, palette, scope }: { stats: TraceStats; palette: Palette; scope: string }) {
  const threads = [...stats.threads].sort((a, b) => b.busy_pct - a.busy_pct).slice(0, 30);
  const files = [...stats.files].sort((a, b) => b.busy_us - a.busy_us).slice(0, 50);
  const directory = dataDirectory(files.map((f) => f.path));
  const { sequential_ops: sequential, random_ops: random, sequential_pct: sequentialPct } = stats.access;
  return (
    <>
      <h2 style={{ margin: "16px 0 8px" }}>
        IO statistics <span className="sub">· {scope}</span>
      </h2>
      <div className="grid-2">
        <Histogram
          title="Latency by kind"
          palette={palette}
          bound={formatDuration}
          series={stats.latency_histogram.map((h) => ({ kind: h.kind, buckets: h.buckets.map((b) => ({ bound: b.le_us, count: b.count })) }))}
        />
        <Histogram
          title="Size by kind"
          palette={palette}
          bound={formatBytes}
          series={stats.size_histogram.map((h) => ({ kind: h.kind, buckets: h.buckets.map((b) => ({ bound: b.le_bytes, count: b.count })) }))}
        />
      </div>
      <div className="grid-2">
        <div className="panel">
          <h3>Busy time per thread</h3>
          <div className="bars-list" aria-label="Busy per thread">
            {threads.length === 0 && <p className="sub">No thread did IO here.</p>}
            {threads.map((thread) => (
              <div className="hbar" key={thread.tid} title={`${formatCount(thread.operations)} operations, ${formatBytes(thread.bytes)}${thread.cpu_pct !== null ? `, CPU ${formatPercent(thread.cpu_pct)}` : ""}`}>
                <span className="label">
                  {thread.role || "thread"} <span className="sub">{thread.tid}</span>
                </span>
                <div className="track">
                  <div style={{ width: `${String(Math.min(100, thread.busy_pct))}%` }} />
                </div>
                <span className="num">{formatPercent(thread.busy_pct)}</span>
              </div>
            ))}
          </div>
        </div>
        <div className="panel">
          <h3>Access pattern</h3>
          <p style={{ marginTop: 0 }}>
            <strong>{formatPercent(sequentialPct)}</strong> sequential ({formatCount(sequential)} operations continue where the previous one on the
            file ended), {formatCount(random)} random.
          </p>
          <div className="progress" aria-label="Sequential share" style={{ height: 12 }}>
            <div style={{ width: `${String(sequentialPct)}%` }} />
          </div>
          <p>
            fsync and friends took <strong>{formatPercent(stats.fsync_time_pct)}</strong> of the IO time.
          </p>
        </div>
      </div>
      <div className="panel">
        <h3>
          Files {directory && <span className="sub mono">under {directory}</span>}
        </h3>
        {files.length === 0 ? (
          <p className="sub">No file was touched.</p>
        ) : (
          <div className="scroll" style={{ maxHeight: 340 }}>
            <table className="data" aria-label="Files">
              <thead>
                <tr>
                  <th>File</th>
                  <th className="num">Reads</th>
                  <th className="num">Writes</th>
                  <th className="num">fsyncs</th>
                  <th className="num">Read</th>
                  <th className="num">Written</th>
                  <th className="num">Busy</th>
                </tr>
              </thead>
              <tbody>
                {files.map((file) => (
                  <tr key={file.path}>
                    <td className="mono" title={file.path}>
                      {directory && file.path.startsWith(directory) ? file.path.slice(directory.length) : file.path}
                    </td>
                    <td className="num">{formatCount(file.reads)}</td>
                    <td className="num">{formatCount(file.writes)}</td>
                    <td className="num">{formatCount(file.fsyncs)}</td>
                    <td className="num">{formatBytes(file.bytes_read)}</td>
                    <td className="num">{formatBytes(file.bytes_written)}</td>
                    <td className="num">{formatDuration(file.busy_us)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>
    </>
  );
}

// Memoised: the statistics do not change while the user zooms and pans, which re-renders the page each frame.
export const KindTable = memo(KindTableView);
export const StatsPanels = memo(StatsPanelsView);
