import { useQuery } from "@tanstack/react-query";
import { useMemo, useRef, useState } from "react";
import { Link, useSearchParams } from "react-router-dom";

import { shiftedWindow, speedupText, valueText, verdictClass, verdictText } from "../advisor/advice";
import { Empty, ErrorMessage, Loading, StatusBadge } from "../components/common";
import { phaseText } from "../components/jobText";
import { useTheme } from "../components/theme";
import { AXIS_HEIGHT, Axis } from "../components/timeline/Axis";
import { Lanes } from "../components/timeline/Lanes";
import { readPalette } from "../components/timeline/palette";
import { useWidth } from "../components/timeline/useWidth";
import { type CompareSide, type OpCompare, compareQuery } from "../queries/advisor";
import { traceQuery, traceWindowQuery } from "../queries/traces";
import { formatBytes, formatCount, formatDuration, formatRate, formatSeconds } from "../timeline/format";
import { foldIdle, sortLanes } from "../timeline/lanes";
import { type TimeWindow, toApiWindow } from "../timeline/viewport";

const NO_COLLAPSE: ReadonlySet<number> = new Set();
// The busiest lanes of each run: enough to see who worked when, short enough to see both runs at once.
const LANES_SHOWN = 10;

function changeText(pct: number | null): string {
  if (pct === null) return "";
  return `${pct > 0 ? "+" : ""}${String(pct)}%`;
}

function OpsTable({ rows, label }: { rows: OpCompare[]; label: string }) {
  if (rows.length === 0) return <Empty title="No IO trace to compare">One of the runs was not captured.</Empty>;
  return (
    <div className="scroll" style={{ maxHeight: 360 }}>
      <table className="data" aria-label={label}>
        <thead>
          <tr>
            <th>{label === "By kind" ? "Kind" : "Operation"}</th>
            <th className="num">Count A</th>
            <th className="num">Count B</th>
            <th className="num">Δ</th>
            <th className="num">Bytes A</th>
            <th className="num">Bytes B</th>
            <th className="num">Δ</th>
            <th className="num">p95 A</th>
            <th className="num">p95 B</th>
            <th className="num">Δ</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.op}>
              <td className="mono">
                {row.op}
                {row.op !== row.kind && <span className="sub"> {row.kind}</span>}
              </td>
              <td className="num">{formatCount(row.a?.count ?? null)}</td>
              <td className="num">{formatCount(row.b?.count ?? null)}</td>
              <td className="num">{changeText(row.count_change_pct)}</td>
              <td className="num">{row.a ? formatBytes(row.a.bytes) : "–"}</td>
              <td className="num">{row.b ? formatBytes(row.b.bytes) : "–"}</td>
              <td className="num">{changeText(row.bytes_change_pct)}</td>
              <td className="num">{row.a ? formatDuration(row.a.p95_us) : "–"}</td>
              <td className="num">{row.b ? formatDuration(row.b.p95_us) : "–"}</td>
              <td className="num">{changeText(row.p95_change_pct)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface RunTimelineProps {
  label: string;
  side: CompareSide;
  span: number;
  relative: TimeWindow;
  onRelative: (window: TimeWindow) => void;
}

/** One run's busiest lanes over a window given relative to its phase's start: both runs share the scale. */
function RunTimeline({ label, side, span, relative, onRelative }: RunTimelineProps) {
  const [theme] = useTheme();
  const palette = useMemo(() => readPalette(theme), [theme]);
  const cell = useRef<HTMLDivElement>(null);
  const width = useWidth(cell);
  const start = side.t0_us ?? 0;
  const view = shiftedWindow(relative, start);
  const trace = useQuery(traceQuery(side.job.id));
  const data = useQuery(
    traceWindowQuery(side.job.id, { ...toApiWindow(view), width_px: Math.max(width, 1) }, false, side.has_trace && width > 0),
  );
  const lanes = useMemo(() => {
    const all = trace.data?.lanes ?? [];
    return foldIdle(sortLanes(all, "busy"), false).shown.slice(0, LANES_SHOWN);
  }, [trace.data]);
  const hasSpans = (data.data?.lanes ?? []).some((lane) => lane.spans.length > 0);
  return (
    <div className="timeline" data-testid={`compare-timeline-${label}`} style={{ marginBottom: 12 }}>
      <div className="row axis-row">
        <div className="gutter" style={{ height: AXIS_HEIGHT, padding: "4px 6px" }}>
          <strong>
            {label}: job #{side.job.id}
          </strong>{" "}
          <span className="sub">{side.phase_s !== null ? formatSeconds(side.phase_s) : "–"}</span>
        </div>
        <div className="canvas-cell" ref={cell}>
          {width > 0 && <Axis window={view} width={width} origin={start} />}
        </div>
      </div>
      {!side.has_trace ? (
        <Empty title="No IO trace for this run" />
      ) : (
        <Lanes
          lanes={lanes}
          data={data.data}
          window={view}
          bounds={{ min: start, max: start + span }}
          width={width}
          origin={start}
          palette={palette}
          collapsed={NO_COLLAPSE}
          hasSpans={hasSpans}
          selection={null}
          selectionMode={false}
          onToggleCollapse={() => undefined}
          onWindow={(window) => onRelative({ t0: window.t0 - start, t1: window.t1 - start })}
          onSelection={() => undefined}
          onPointerTime={() => undefined}
        />
      )}
    </div>
  );
}

function Timelines({ a, b }: { a: CompareSide; b: CompareSide }) {
  const span = Math.max((a.t1_us ?? 0) - (a.t0_us ?? 0), (b.t1_us ?? 0) - (b.t0_us ?? 0), 1);
  const [relative, setRelative] = useState<TimeWindow>({ t0: 0, t1: span });
  if (a.t0_us === null || b.t0_us === null) return <Empty title="One of the runs never reached its main phase" />;
  return (
    <>
      <p className="sub" style={{ marginTop: 0 }}>
        Both from the start of their {phaseText(a.phase)} phase, on one time scale: the shorter run ends early. Zoom and pan
        either one; the other follows.{" "}
        <button className="small" onClick={() => setRelative({ t0: 0, t1: span })}>
          Whole runs
        </button>
      </p>
      <RunTimeline label="A" side={a} span={span} relative={relative} onRelative={setRelative} />
      <RunTimeline label="B" side={b} span={span} relative={relative} onRelative={setRelative} />
    </>
  );
}

function SideFacts({ a, b }: { a: CompareSide; b: CompareSide }) {
  const rows: [string, (side: CompareSide) => string][] = [
    ["Status", (side) => side.job.status],
    [`${phaseText(a.phase)} phase`, (side) => formatSeconds(side.phase_s)],
    ["Whole job", (side) => formatSeconds(side.job.duration_s)],
    ["Throughput", (side) => formatRate(side.mb_per_s)],
    ["Rows", (side) => (side.rows_per_s === null ? "–" : `${formatCount(Math.round(side.rows_per_s))}/s`)],
    ["Runner", (side) => valueText(side.job.run_facts?.runner ?? side.job.parameters.runner)],
    ["Threads", (side) => valueText(side.job.run_facts?.threads ?? side.job.parameters.threads)],
  ];
  return (
    <table className="data" aria-label="Runs side by side">
      <thead>
        <tr>
          <th />
          <th>
            A: <Link to={`/jobs/${String(a.job.id)}`}>job #{a.job.id}</Link> <StatusBadge status={a.job.status} />
          </th>
          <th>
            B: <Link to={`/jobs/${String(b.job.id)}`}>job #{b.job.id}</Link> <StatusBadge status={b.job.status} />
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map(([label, value]) => (
          <tr key={label}>
            <td className="sub">{label}</td>
            <td>{value(a)}</td>
            <td>{value(b)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ComparePage() {
  const [params] = useSearchParams();
  const a = Number(params.get("a"));
  const b = Number(params.get("b"));
  const comparison = useQuery(compareQuery(a, b));
  if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || params.get("a") === null || params.get("b") === null) {
    return <Empty title="Pick two runs to compare">Open a re-run's page and follow “compare”, or give ?a=JOB&amp;b=JOB.</Empty>;
  }
  if (comparison.isPending) return <Loading what="the comparison" />;
  if (comparison.isError) return <ErrorMessage error={comparison.error} title="Could not compare the runs" />;
  const data = comparison.data;
  const applied = data.applied;
  return (
    <>
      <div className="page-head">
        <h1>
          Compare job #{a} and job #{b}
        </h1>
      </div>
      <div className="grid-2">
        <div className="panel">
          <h2>Time</h2>
          {data.speedup === null ? (
            <Empty title="No time to compare">One of the runs did not reach its main phase.</Empty>
          ) : (
            <p>
              <span className="speedup" data-testid="speedup">
                {speedupText(data.speedup)}
              </span>{" "}
              <span className="sub">
                {data.speedup >= 1 ? "B was faster" : "B was slower"}: its {phaseText(data.a.phase)} phase took{" "}
                {formatSeconds(data.b.phase_s)} against {formatSeconds(data.a.phase_s)}
              </span>
            </p>
          )}
          {applied !== null && (
            <p data-testid="compare-applied">
              B re-ran A with the advisor's “{applied.title}”: expected{" "}
              {applied.expected_speedup !== null ? speedupText(applied.expected_speedup) : "–"}, measured{" "}
              <span className={`badge ${verdictClass(applied)}`}>{verdictText(applied)}</span>
            </p>
          )}
          <SideFacts a={data.a} b={data.b} />
        </div>
        <div className="panel">
          <h2>Settings that differ</h2>
          {data.settings.length === 0 ? (
            <Empty title="The same settings">Both runs asked for the same parameters.</Empty>
          ) : (
            <table className="data" aria-label="Settings that differ">
              <thead>
                <tr>
                  <th>Setting</th>
                  <th>A</th>
                  <th>B</th>
                </tr>
              </thead>
              <tbody>
                {data.settings.map((row) => (
                  <tr key={row.option} className="changed">
                    <td className="mono">{row.option}</td>
                    <td className="mono" style={{ overflowWrap: "anywhere" }}>
                      {valueText(row.a)}
                    </td>
                    <td className="mono" style={{ overflowWrap: "anywhere" }}>
                      {valueText(row.b)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      </div>
      <div className="panel">
        <h2>Timelines on one time scale</h2>
        <Timelines a={data.a} b={data.b} />
      </div>
      <div className="panel">
        <h2>By kind</h2>
        <OpsTable rows={data.kinds} label="By kind" />
      </div>
      <div className="panel">
        <h2>By operation</h2>
        <OpsTable rows={data.ops} label="By operation" />
      </div>
    </>
  );
}
