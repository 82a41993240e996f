import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useRef, useState } from "react";
import { Link, useParams, useSearchParams } from "react-router-dom";

import { highlightWindow } from "../advisor/advice";
import { ApiError } from "../api/errors";
import { canOperate } from "../auth/roles";
import { AdvisorPanel } from "../components/AdvisorPanel";
import { Empty, ErrorMessage, Loading, StatusBadge } from "../components/common";
import { useTheme } from "../components/theme";
import { AXIS_HEIGHT, Axis } from "../components/timeline/Axis";
import { Counters } from "../components/timeline/Counters";
import { type Highlight, Lanes } from "../components/timeline/Lanes";
import { Overview } from "../components/timeline/Overview";
import { readPalette } from "../components/timeline/palette";
import { KindTable, StatsPanels } from "../components/timeline/StatsPanels";
import { useWidth } from "../components/timeline/useWidth";
import { type SuggestionItem, adviceQuery } from "../queries/advisor";
import { useCurrentUser } from "../queries/auth";
import { isActive, jobQuery } from "../queries/jobs";
import { type TraceSummary, perfettoUrl, traceQuery, traceStatsQuery, traceWindowQuery } from "../queries/traces";
import { formatCount, formatDuration } from "../timeline/format";
import { CPU_STATES, KINDS, type Kind, stateColor } from "../timeline/kinds";
import { LANE_SORTS, type LaneSort, filterLanes, foldIdle, roleGroups, sortLanes } from "../timeline/lanes";
import { type TimelineView, parseView, viewToParams } from "../timeline/url";
import { type Bounds, type TimeWindow, clampWindow, panByFraction, toApiWindow, zoomAround } from "../timeline/viewport";

/** A value that follows `value` once it has stopped changing for `ms`: zooming does not flood the API. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = window.setTimeout(() => setSettled(value), ms);
    return () => window.clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/** One object per distinct window, so effects and settling see a change only when the numbers change. */
function useWindowObject(t0: number | undefined, t1: number | undefined): TimeWindow | null {
  return useMemo(() => (t0 === undefined || t1 === undefined ? null : { t0, t1 }), [t0, t1]);
}

function isTyping(target: EventTarget | null): boolean {
  return target instanceof HTMLElement && (["INPUT", "SELECT", "TEXTAREA"].includes(target.tagName) || target.isContentEditable);
}

function boundsOf(summary: TraceSummary): Bounds | null {
  if (summary.t_min_us === null || summary.t_max_us === null) return null;
  return { min: summary.t_min_us, max: Math.max(summary.t_max_us, summary.t_min_us + 1) };
}

function CaptureFacts({ summary }: { summary: TraceSummary }) {
  const duration = summary.t_min_us !== null && summary.t_max_us !== null ? summary.t_max_us - summary.t_min_us : null;
  return (
    <span className="sub">
      {summary.source === "import" ? "imported" : "captured"} with {summary.backend}
      {summary.aio_mode ? ` · AIO ${summary.aio_mode}` : ""} · {formatCount(summary.operations)} operations on {summary.lanes.length} threads
      {duration !== null ? ` over ${formatDuration(duration)}` : ""}
      {summary.malformed_lines > 0 ? ` · ${formatCount(summary.malformed_lines)} lines not understood` : ""}
    </span>
  );
}

function rangesOf(suggestion: SuggestionItem): TimeWindow[] {
  return suggestion.where.ranges.map((range) => ({ t0: range.t0_us, t1: range.t1_us }));
}

function Timeline({ jobId, summary, canRerun }: { jobId: number; summary: TraceSummary; canRerun: boolean }) {
  const [params, setParams] = useSearchParams();
  // The URL is read once; after that the page owns the view and writes it back.
  const [initial] = useState(() => parseView(params));
  const [theme] = useTheme();
  const palette = useMemo(() => readPalette(theme), [theme]);
  const bounds = boundsOf(summary);
  const live = summary.status === "recording";

  const [zoomed, setZoomed] = useState<TimeWindow | null>(initial.window);
  const [selection, setSelection] = useState<TimeWindow | null>(initial.selection);
  const [roles, setRoles] = useState<string[]>(initial.roles);
  const [kinds, setKinds] = useState<Kind[]>(initial.kinds);
  const [path, setPath] = useState(initial.path);
  const [sort, setSort] = useState<LaneSort>(initial.sort);
  const [collapsed, setCollapsed] = useState<number[]>(initial.collapsed);
  const [showIdle, setShowIdle] = useState(initial.showIdle);
  const [selectionMode, setSelectionMode] = useState(false);
  const [adviceRule, setAdviceRule] = useState<string | null>(initial.advice);
  const [advisorOpen, setAdvisorOpen] = useState(initial.advice !== null);
  const pointerTime = useRef<number | null>(null);

  const cell = useRef<HTMLDivElement>(null);
  const width = useWidth(cell);

  // No zoom yet means "the whole trace", which keeps growing while the job records.
  const clamped = bounds === null ? null : clampWindow(zoomed ?? { t0: bounds.min, t1: bounds.max }, bounds);
  const view = useWindowObject(clamped?.t0, clamped?.t1);

  // The view in the URL, written once the user pauses.
  const state: TimelineView = { window: zoomed, selection, roles, kinds, path, sort, collapsed, showIdle, advice: adviceRule };
  const settledQuery = useSettled(viewToParams(state).toString(), 300);
  useEffect(() => {
    if (settledQuery !== params.toString()) setParams(new URLSearchParams(settledQuery), { replace: true });
  }, [settledQuery, params, setParams]);

  const settledPath = useSettled(path, 300);
  // Roles (or families of roles) are filtered here; the API is asked for those threads by id, up to a
  // URL-friendly number of them (beyond that it sends every lane and the page leaves the others out).
  const roleLanes = roles.length > 0 ? filterLanes(summary.lanes, roles) : null;
  const roleTids =
    roleLanes === null || roleLanes.length > 300 ? undefined : roleLanes.map((lane) => lane.tid).join(",") || "-1";
  const filter = {
    kinds: kinds.length > 0 ? kinds.join(",") : undefined,
    tids: roleTids,
    path: settledPath || undefined,
  };
  const settledView = useSettled(view, 80);
  const windowData = useQuery(
    traceWindowQuery(
      jobId,
      { ...toApiWindow(settledView ?? { t0: 0, t1: 1 }), width_px: Math.max(width, 1), ...filter },
      live,
      settledView !== null && width > 0,
    ),
  );
  const overviewData = useQuery(
    traceWindowQuery(
      jobId,
      { ...toApiWindow(bounds ? { t0: bounds.min, t1: bounds.max } : { t0: 0, t1: 1 }), width_px: Math.max(width, 1), ...filter },
      live,
      bounds !== null && width > 0,
    ),
  );
  // The lanes come first: the statistics and the advice (whole-trace scans on the server) are asked for once the
  // first window is in, so they do not slow its answer or its drawing.
  const lanesShown = windowData.data !== undefined || windowData.isError;
  const stats = useQuery({
    ...traceStatsQuery(
      jobId,
      { ...(selection ? toApiWindow(selection) : {}), kinds: filter.kinds, path: filter.path, tids: roleTids },
      live,
    ),
    enabled: lanesShown,
  });

  // The advisor's suggestion whose evidence is highlighted: its lanes over its time ranges.
  const advice = useQuery(adviceQuery(jobId, !live && lanesShown));
  const suggestion = advice.data?.suggestions.find((s) => s.rule === adviceRule) ?? null;
  const highlight = useMemo<Highlight | null>(
    () => (suggestion === null ? null : { tids: new Set(suggestion.where.lanes), ranges: rangesOf(suggestion) }),
    [suggestion],
  );
  const showSuggestion = (picked: SuggestionItem): void => {
    setAdviceRule(picked.rule);
    if (bounds !== null) setZoomed(highlightWindow(rangesOf(picked), bounds) ?? zoomed);
    const hidden = roles.length > 0 && picked.where.lanes.some((tid) => !filterLanes(summary.lanes, roles).some((l) => l.tid === tid));
    if (hidden) setRoles([]);
  };
  // A link from the run page names the suggestion only: the window follows it once the advice is here.
  const zoomedToAdvice = useRef(initial.window !== null);
  useEffect(() => {
    if (zoomedToAdvice.current || suggestion === null || bounds === null) return;
    zoomedToAdvice.current = true;
    setZoomed(highlightWindow(rangesOf(suggestion), bounds));
  }, [suggestion, bounds]);

  // Lanes: filtered by role, sorted, idle ones folded (but never one the advisor points at).
  const groups = useMemo(() => roleGroups(summary.lanes), [summary.lanes]);
  // Memoised: the lanes do not change while zooming, and Lanes recomputes its layout when they do.
  const { shown, folded } = useMemo(
    () => foldIdle(sortLanes(filterLanes(summary.lanes, roles), sort), showIdle, highlight?.tids),
    [summary.lanes, roles, sort, showIdle, highlight],
  );
  const collapsedSet = useMemo(() => new Set(collapsed), [collapsed]);
  const hasSpans = (windowData.data?.lanes ?? []).some((l) => l.spans.length > 0);

  // Keyboard as in Perfetto: W/S zoom (around the mouse when it is over the lanes), A/D pan.
  const viewRef = useRef(view);
  useEffect(() => {
    viewRef.current = view;
  });
  const boundsMin = bounds?.min;
  const boundsMax = bounds?.max;
  useEffect(() => {
    if (boundsMin === undefined || boundsMax === undefined) return;
    const bounds = { min: boundsMin, max: boundsMax };
    const onKey = (event: KeyboardEvent): void => {
      if (isTyping(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
      const current = viewRef.current;
      if (current === null) return;
      const anchor = pointerTime.current ?? (current.t0 + current.t1) / 2;
      const key = event.key.toLowerCase();
      if (key === "w") setZoomed(zoomAround(current, anchor, 1.25, bounds));
      else if (key === "s") setZoomed(zoomAround(current, anchor, 1 / 1.25, bounds));
      else if (key === "a") setZoomed(panByFraction(current, -0.15, bounds));
      else if (key === "d") setZoomed(panByFraction(current, 0.15, bounds));
      else if (key === "escape") setSelection(null);
      else return;
      event.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [boundsMin, boundsMax]);

  const toggle = <T,>(list: T[], item: T): T[] => (list.includes(item) ? list.filter((x) => x !== item) : [...list, item]);

  if (bounds === null || view === null) {
    return (
      <Empty title={live ? "Recording: no operation captured yet" : "This trace holds no operation"}>
        {live ? "The timeline appears as soon as the first operations arrive." : "Nothing was recorded for this job."}
      </Empty>
    );
  }

  const selectionLabel = selection ? `selected range ${formatDuration(selection.t0 - bounds.min)} – ${formatDuration(selection.t1 - bounds.min)}` : "whole trace";

  const highlightedRoles = summary.lanes.filter((lane) => highlight?.tids.has(lane.tid)).map((lane) => lane.role || `thread ${String(lane.tid)}`);

  return (
    <>
      {!live && (
        <details
          className="panel"
          open={advisorOpen}
          onToggle={(event) => setAdvisorOpen(event.currentTarget.open)}
          data-testid="timeline-advisor"
        >
          <summary>
            <strong>Advisor</strong>
            <span className="sub"> · what held this run back; pick a suggestion to see its evidence on the lanes</span>
          </summary>
          <AdvisorPanel jobId={jobId} canRerun={canRerun} activeRule={adviceRule} onShow={showSuggestion} />
        </details>
      )}
      {suggestion !== null && highlight !== null && (
        <div className="message info highlight-bar" data-testid="highlight-bar">
          <span>
            <strong>Highlighted: </strong>
            {suggestion.title} — {highlightedRoles.length > 0 ? highlightedRoles.join(", ") : "every lane"},{" "}
            {highlight.ranges.map((r) => `${formatDuration(r.t0 - bounds.min)} – ${formatDuration(r.t1 - bounds.min)}`).join("; ")}
          </span>
          <span className="spacer" style={{ flex: 1 }} />
          <button className="small" onClick={() => setZoomed(highlightWindow(highlight.ranges, bounds) ?? zoomed)}>
            Zoom to it
          </button>
          <button className="small" onClick={() => setAdviceRule(null)}>
            Clear
          </button>
        </div>
      )}
      <div className="timeline-toolbar">
        <div className="legend" aria-label="Operation kinds">
          {KINDS.map((kind) => {
            const on = kinds.length === 0 || kinds.includes(kind);
            return (
              <button
                key={kind}
                className="kind"
                aria-pressed={on}
                title={`${on ? "Hide" : "Show"} ${kind} operations (${formatCount(summary.kinds[kind] ?? 0)} in the trace)`}
                onClick={() => {
                  const base = kinds.length === 0 ? [...KINDS] : kinds;
                  const next = toggle(base, kind);
                  setKinds(next.length === KINDS.length || next.length === 0 ? [] : next);
                }}
              >
                <span className="swatch" style={{ background: palette.kinds[kind] }} />
                {kind}
              </button>
            );
          })}
        </div>
        <span className="sub">|</span>
        <select aria-label="Sort lanes" value={sort} onChange={(event) => setSort(event.target.value as LaneSort)}>
          {LANE_SORTS.map((s) => (
            <option key={s} value={s}>
              sort by {s === "tid" ? "thread id" : s}
            </option>
          ))}
        </select>
        <input aria-label="Filter by file" placeholder="file path contains…" value={path} onChange={(event) => setPath(event.target.value)} style={{ width: 180 }} />
        <button className="toggle small" aria-pressed={selectionMode} onClick={() => setSelectionMode(!selectionMode)} title="Drag on the lanes to select a time range (or hold Shift while dragging)">
          Select range
        </button>
        <button className="small" onClick={() => setZoomed(null)} disabled={zoomed === null}>
          Whole trace
        </button>
        <span className="spacer" style={{ flex: 1 }} />
        {hasSpans && (
          <span className="legend" aria-label="CPU states" title="The thin bands under each lane: CPU state on top, the server's own state (SHOW PROCESSLIST) below">
            <span className="sub">CPU</span>
            {CPU_STATES.map((state) => (
              <span key={state}>
                <span className="swatch" style={{ background: stateColor(state, theme) }} />
                {state.replace("_", " ")}
              </span>
            ))}
          </span>
        )}
        <span className="hint-keys">
          <kbd>W</kbd>/<kbd>S</kbd> zoom · <kbd>A</kbd>/<kbd>D</kbd> pan · wheel zooms · drag pans · <kbd>Shift</kbd>+drag selects
        </span>
      </div>
      {groups.length > 1 && (
        <div className="filters" style={{ marginBottom: 8 }} aria-label="Roles">
          <span className="sub">Threads</span>
          {groups.map((group) => (
            <button key={group.key} className="toggle small" aria-pressed={roles.includes(group.key)} onClick={() => setRoles(toggle(roles, group.key))}>
              {group.key || "unknown"} ({group.count})
            </button>
          ))}
          {roles.length > 0 && (
            <button className="small" onClick={() => setRoles([])}>
              all roles
            </button>
          )}
        </div>
      )}
      <div className="timeline" data-testid="timeline">
        <div className="row">
          <div className="gutter" style={{ padding: "4px 6px" }}>
            <div className="sub">on screen</div>
            <strong data-testid="window-span">{formatDuration(view.t1 - view.t0)}</strong>
            <span className="sub"> of {formatDuration(bounds.max - bounds.min)}</span>
          </div>
          <div className="canvas-cell" ref={cell}>
            <Overview data={overviewData.data} bounds={bounds} window={view} width={width} palette={palette} onWindow={setZoomed} />
          </div>
        </div>
        <div className="row axis-row">
          <div className="gutter" style={{ height: AXIS_HEIGHT, padding: "4px 6px" }}>
            {windowData.isFetching && <span className="sub">loading…</span>}
            {live && <span className="badge recording">live</span>}
          </div>
          <div className="canvas-cell">
            <Axis window={view} width={width} origin={bounds.min} />
          </div>
        </div>
        {windowData.data && windowData.data.counters.length > 0 && (
          <Counters counters={windowData.data.counters} view={view} width={width} palette={palette} />
        )}
        {windowData.isError && <ErrorMessage error={windowData.error} title="Could not read this window of the trace" />}
        {shown.length === 0 ? (
          <Empty title="No thread to show">
            {roles.length > 0 ? "No thread has the roles picked above." : "Every thread was idle."}
            {folded.length > 0 && " "}
          </Empty>
        ) : (
          <Lanes
            lanes={shown}
            data={windowData.data}
            window={view}
            bounds={bounds}
            width={width}
            origin={bounds.min}
            palette={palette}
            collapsed={collapsedSet}
            hasSpans={hasSpans}
            selection={selection}
            selectionMode={selectionMode}
            highlight={highlight}
            onToggleCollapse={(tid) => setCollapsed(toggle(collapsed, tid))}
            onWindow={setZoomed}
            onSelection={setSelection}
            onPointerTime={(t) => {
              pointerTime.current = t;
            }}
          />
        )}
        {(folded.length > 0 || showIdle) && (
          <div className="folded-row">
            {showIdle ? (
              <button className="small" onClick={() => setShowIdle(false)}>
                Fold idle threads
              </button>
            ) : (
              <>
                {folded.length} idle thread{folded.length === 1 ? "" : "s"} folded{" "}
                <button className="small" onClick={() => setShowIdle(true)}>
                  Show them
                </button>
              </>
            )}
          </div>
        )}
      </div>
      {selection !== null && (
        <div className="panel selection-stats" data-testid="selection-stats" style={{ marginTop: 12 }}>
          <div className="page-head" style={{ marginBottom: 8 }}>
            <h2 style={{ margin: 0 }}>Selected range</h2>
            <span className="sub">
              {formatDuration(selection.t0 - bounds.min)} – {formatDuration(selection.t1 - bounds.min)} ({formatDuration(selection.t1 - selection.t0)})
            </span>
            <span className="spacer" />
            <button className="small" onClick={() => setZoomed(clampWindow(selection, bounds))}>
              Zoom to it
            </button>
            <button className="small" onClick={() => setSelection(null)}>
              Clear
            </button>
          </div>
          {stats.isPending && <Loading what="statistics" />}
          {stats.isError && <ErrorMessage error={stats.error} title="Could not compute the statistics" />}
          {stats.data && <KindTable stats={stats.data} palette={palette} label="Selection statistics" />}
        </div>
      )}
      {stats.data && (
        <>
          {selection === null && (
            <div className="panel" style={{ marginTop: 12 }}>
              <h2>By kind · whole trace</h2>
              <KindTable stats={stats.data} palette={palette} label="Statistics by kind" />
            </div>
          )}
          <StatsPanels stats={stats.data} palette={palette} scope={selectionLabel} />
        </>
      )}
    </>
  );
}

export function TimelinePage() {
  const jobId = Number(useParams().jobId);
  const job = useQuery(jobQuery(jobId));
  const operator = canOperate(useCurrentUser().role);
  const jobActive = job.data !== undefined && isActive(job.data.status);
  const trace = useQuery(traceQuery(jobId, jobActive));

  const header = (
    <div className="page-head">
      <h1>IO timeline · job #{jobId}</h1>
      {job.data && <StatusBadge status={job.data.status} />}
      {trace.data && <CaptureFacts summary={trace.data} />}
      <span className="spacer" />
      <Link className="button" to={`/jobs/${String(jobId)}`}>
        Job details
      </Link>
      {trace.data && (
        <a className="button" href={perfettoUrl(jobId)} download title="Chrome trace-event JSON: open ui.perfetto.dev and drop the file on it">
          Open in Perfetto ⤓
        </a>
      )}
    </div>
  );

  if (!Number.isSafeInteger(jobId)) return <Empty title="That is not a job number" />;
  if (trace.isPending) {
    return (
      <>
        {header}
        <Loading what="the trace" />
      </>
    );
  }
  if (trace.isError) {
    const missing = trace.error instanceof ApiError && trace.error.status === 404;
    return (
      <>
        {header}
        {missing && jobActive ? (
          <Empty title="Waiting for the capture to start">
            The IO trace starts when the restore does (after the server is up); this page shows it as soon as it
            exists.
          </Empty>
        ) : missing ? (
          <Empty title="This job has no IO trace">
            {trace.error.message} Restores record one unless launched with capture “none”; you can also{" "}
            <Link to="/import">import a JuiceFS or strace log</Link>.
          </Empty>
        ) : (
          <ErrorMessage error={trace.error} title="Could not read the trace" />
        )}
      </>
    );
  }
  return (
    <>
      {header}
      {trace.data.fallback_reason && (
        <div className="message warn">
          <strong>Capture fell back</strong>
          {trace.data.fallback_reason}
        </div>
      )}
      {trace.data.visibility && <div className="message info">{trace.data.visibility}</div>}
      <p className="sub" style={{ marginTop: -4 }}>
        Open in Perfetto downloads the trace as Chrome trace-event JSON: open <a href="https://ui.perfetto.dev" target="_blank" rel="noreferrer">ui.perfetto.dev</a> and
        drop the file on it (or use “Open trace file”).
      </p>
      <Timeline jobId={jobId} summary={trace.data} canRerun={job.data?.kind === "restore" && operator} />
    </>
  );
}
