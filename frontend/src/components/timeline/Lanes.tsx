import { useEffect, useMemo, useRef, useState } from "react";

import type { TraceLane, TraceWindow, WindowLane, WindowOperation } from "../../queries/traces";
import { formatBytes, formatDuration, formatOffset, formatPercent } from "../../timeline/format";
import { barAt, laneAt } from "../../timeline/hit";
import { stateColor } from "../../timeline/kinds";
import {
  BAND_TRACKS,
  type BandTrack,
  type LaneBox,
  bandAt,
  bandRect,
  boxesBetween,
  laneLabel,
  layoutLanes,
} from "../../timeline/lanes";
import { type Bar, type Segment, bucketBars, operationBars, spanSegments } from "../../timeline/lod";
import { drawFinished, drawStarted } from "../../timeline/perf";
import { timeTicks } from "../../timeline/ticks";
import {
  type Bounds,
  type TimeWindow,
  panByPixels,
  rangeFromPixels,
  timeToX,
  wheelZoomFactor,
  xToTime,
  zoomAround,
} from "../../timeline/viewport";
import { type Palette, prepareCanvas } from "./palette";
import { useHeight } from "./useWidth";

interface BarHover {
  type: "bar";
  tid: number;
  bar: Bar;
  lane: WindowLane | undefined;
  clientX: number;
  clientY: number;
}

interface BandHover {
  type: "band";
  tid: number;
  track: BandTrack;
  segment: Segment;
  clientX: number;
  clientY: number;
}

type Hover = BarHover | BandHover;

interface Drag {
  mode: "pan" | "select";
  startX: number;
  startWindow: TimeWindow;
  moved: boolean;
}

/** What the advisor points at: these lanes (all of them when empty) over these time ranges. */
export interface Highlight {
  tids: ReadonlySet<number>;
  ranges: readonly TimeWindow[];
}

export interface LanesProps {
  lanes: TraceLane[];
  data: TraceWindow | undefined;
  window: TimeWindow;
  bounds: Bounds;
  width: number;
  origin: number;
  palette: Palette;
  collapsed: ReadonlySet<number>;
  hasSpans: boolean;
  selection: TimeWindow | null;
  selectionMode: boolean;
  highlight?: Highlight | null;
  onToggleCollapse: (tid: number) => void;
  onWindow: (window: TimeWindow) => void;
  onSelection: (selection: TimeWindow | null) => void;
  onPointerTime: (t: number | null) => void;
}

/** Bars of one lane for the window on screen, merged to at most one per pixel column. */
function laneBars(lane: WindowLane | undefined, data: TraceWindow | undefined, view: TimeWindow, width: number): Bar[] {
  if (lane === undefined || data === undefined) return [];
  return lane.detail === "operations"
    ? operationBars(lane.operations, view, width)
    : bucketBars(lane.buckets, data.t0_us, data.bucket_us, view, width);
}

function OperationFacts({ op, origin }: { op: WindowOperation; origin: number }) {
  return (
    <dl className="facts">
      <dt>File</dt>
      <dd className="mono">{op.path ?? "–"}</dd>
      <dt>Offset</dt>
      <dd>{formatOffset(op.offset)}</dd>
      <dt>Size</dt>
      <dd>{op.size === null ? "–" : formatBytes(op.size)}</dd>
      <dt>Latency</dt>
      <dd>{formatDuration(op.duration_us)}</dd>
      <dt>At</dt>
      <dd>{formatDuration(op.start_us - origin)} into the trace</dd>
      <dt>Result</dt>
      <dd className="mono">{op.result}</dd>
    </dl>
  );
}

function placeTooltip(clientX: number, clientY: number): { left: number; top: number } {
  return { left: Math.min(clientX + 14, window.innerWidth - 440), top: Math.min(clientY + 14, window.innerHeight - 200) };
}

function BandTooltip({ hover, lanes, palette, origin, view, width }: { hover: BandHover; lanes: TraceLane[]; palette: Palette; origin: number; view: TimeWindow; width: number }) {
  const info = lanes.find((l) => l.tid === hover.tid);
  const t0 = xToTime(hover.segment.x, view, width);
  const t1 = xToTime(hover.segment.x + hover.segment.w, view, width);
  return (
    <div className="tooltip" role="tooltip" data-testid="tooltip" style={placeTooltip(hover.clientX, hover.clientY)}>
      <div className="title">
        <span style={{ background: stateColor(hover.segment.label, palette.theme), width: 10, height: 10, display: "inline-block", borderRadius: 2 }} />
        {hover.track === "cpu" ? `CPU: ${hover.segment.label.replace("_", " ")}` : `Server state: ${hover.segment.label}`}
      </div>
      <dl className="facts">
        <dt>From</dt>
        <dd>
          {formatDuration(t0 - origin)} to {formatDuration(t1 - origin)} ({formatDuration(t1 - t0)})
        </dd>
      </dl>
      <div className="sub" style={{ marginTop: 4 }}>
        thread {hover.tid}
        {info ? ` · ${laneLabel(info)}` : ""}
      </div>
    </div>
  );
}

function Tooltip({ hover, lanes, palette, origin, view, width }: { hover: BarHover; lanes: TraceLane[]; palette: Palette; origin: number; view: TimeWindow; width: number }) {
  const info = lanes.find((l) => l.tid === hover.tid);
  const op = hover.lane?.detail === "operations" && hover.bar.count === 1 ? hover.lane.operations[hover.bar.first] : undefined;
  const t0 = xToTime(hover.bar.x, view, width);
  const t1 = xToTime(hover.bar.x + hover.bar.w, view, width);
  return (
    <div className="tooltip" role="tooltip" data-testid="tooltip" style={placeTooltip(hover.clientX, hover.clientY)}>
      <div className="title">
        <span className="swatch" style={{ background: palette.kinds[hover.bar.kind], width: 10, height: 10, display: "inline-block", borderRadius: 2 }} />
        {op ? `${op.op} (${op.kind})` : `${String(hover.bar.count)} operations, mostly ${hover.bar.kind}`}
      </div>
      {op ? (
        <OperationFacts op={op} origin={origin} />
      ) : (
        <dl className="facts">
          <dt>Span</dt>
          <dd>
            {formatDuration(t0 - origin)} – {formatDuration(t1 - origin)}
          </dd>
          <dt>Busy</dt>
          <dd>{formatPercent(hover.bar.busy * 100)} of the time</dd>
          <dt>Bytes</dt>
          <dd>{formatBytes(hover.bar.bytes)}</dd>
          <dt />
          <dd className="sub">Zoom in (wheel or W) to see each operation.</dd>
        </dl>
      )}
      <div className="sub" style={{ marginTop: 4 }}>
        thread {hover.tid}
        {info ? ` · ${laneLabel(info)}` : ""}
      </div>
    </div>
  );
}

/** The swimlanes: one canvas for all lanes, labels in a gutter, zoom/pan/select with the mouse. */
export function Lanes(props: LanesProps) {
  const { lanes, data, window: view, width, origin, palette, collapsed, hasSpans, selection } = props;
  const highlight = props.highlight ?? null;
  const canvas = useRef<HTMLCanvasElement>(null);
  const [hover, setHover] = useState<Hover | null>(null);
  const drag = useRef<Drag | null>(null);
  const [panning, setPanning] = useState(false);
  // The canvas is only as tall as the scrolled viewport and sticks to its top; lanes out of view are not
  // drawn, so a thousand threads cost what the visible ones do.
  const scroller = useRef<HTMLDivElement>(null);
  const viewportHeight = useHeight(scroller);
  const [scrollTop, setScrollTop] = useState(0);
  const latest = useRef(props);

  useEffect(() => {
    latest.current = props;
  });

  const { boxes, height } = useMemo(
    () =>
      layoutLanes(
        lanes.map((l) => l.tid),
        collapsed,
        { barPx: 18, bandPx: hasSpans ? 9 : 0, collapsedPx: 6, gapPx: 6 },
      ),
    [lanes, collapsed, hasSpans],
  );
  const windowLanes = useMemo(() => new Map((data?.lanes ?? []).map((lane) => [lane.tid, lane])), [data]);
  const canvasHeight = Math.max(1, viewportHeight > 0 ? Math.min(height, viewportHeight) : height);
  const top = Math.min(scrollTop, Math.max(height - canvasHeight, 0));
  // Bars and bands only for the lanes scrolled into view: a zoom costs what the visible lanes do.
  const visible = useMemo(() => boxesBetween(boxes, top - 4, top + canvasHeight + 4), [boxes, top, canvasHeight]);
  const bars = useMemo(() => {
    const result = new Map<number, Bar[]>();
    for (const box of visible) result.set(box.tid, laneBars(windowLanes.get(box.tid), data, view, width));
    return result;
  }, [visible, windowLanes, data, view, width]);
  // Spans split per track once per window of data; only the segments follow each change of view.
  const bandSpans = useMemo(() => {
    const result = new Map<string, WindowLane["spans"]>();
    for (const lane of windowLanes.values()) {
      for (const track of BAND_TRACKS) {
        const spans = lane.spans.filter((span) => span.track === track);
        if (spans.length > 0) result.set(`${String(lane.tid)}:${track}`, spans);
      }
    }
    return result;
  }, [windowLanes]);
  const bands = useMemo(() => {
    const result = new Map<string, Segment[]>();
    for (const box of visible) {
      for (const track of BAND_TRACKS) {
        const key = `${String(box.tid)}:${track}`;
        const spans = bandSpans.get(key);
        if (spans !== undefined) result.set(key, spanSegments(spans, view, width));
      }
    }
    return result;
  }, [bandSpans, visible, view, width]);

  // Draw the lanes in view, in lane coordinates shifted up by the scroll position.
  useEffect(() => {
    const element = canvas.current;
    if (element === null || width <= 0) return;
    const started = drawStarted();
    const context = prepareCanvas(element, width, canvasHeight);
    if (context === null) return;
    context.translate(0, -top);
    const bottom = top + canvasHeight;
    const shown = visible;
    const firstIndex = shown[0] === undefined ? 0 : boxes.indexOf(shown[0]);
    for (const [offset, box] of shown.entries()) {
      if ((firstIndex + offset) % 2 === 1) {
        context.fillStyle = palette.stripe;
        context.fillRect(0, box.y - 3, width, box.height + 6);
      }
    }
    context.strokeStyle = palette.grid;
    context.lineWidth = 1;
    for (const tick of timeTicks(view, width, origin).ticks) {
      const x = Math.round(tick.x) + 0.5;
      context.beginPath();
      context.moveTo(x, top);
      context.lineTo(x, bottom);
      context.stroke();
    }
    for (const box of shown) {
      for (const bar of bars.get(box.tid) ?? []) {
        context.globalAlpha = 0.3 + 0.7 * bar.busy;
        context.fillStyle = palette.kinds[bar.kind];
        context.fillRect(bar.x, box.barY, Math.max(bar.w, 1), box.barHeight);
      }
      context.globalAlpha = 1;
      if (box.bandHeight > 0) {
        for (const track of BAND_TRACKS) {
          const rect = bandRect(box, track);
          for (const segment of bands.get(`${String(box.tid)}:${track}`) ?? []) {
            context.fillStyle = stateColor(segment.label, palette.theme);
            context.fillRect(segment.x, rect.y, segment.w, rect.height);
          }
        }
      }
    }
    if (highlight !== null) {
      // The marked lanes' rows, or the whole height when the evidence names no lane.
      const rows =
        highlight.tids.size === 0
          ? [{ y: top, h: canvasHeight }]
          : shown.filter((box) => highlight.tids.has(box.tid)).map((box) => ({ y: box.y - 2, h: box.height + 4 }));
      context.fillStyle = palette.highlight;
      context.strokeStyle = palette.highlightLine;
      context.lineWidth = 2;
      for (const range of highlight.ranges) {
        const x0 = Math.max(timeToX(range.t0, view, width), -2);
        const x1 = Math.min(timeToX(range.t1, view, width), width + 2);
        if (x1 < 0 || x0 > width) continue;
        const w = Math.max(x1 - x0, 2);
        for (const { y, h } of rows) {
          context.fillRect(x0, y, w, h);
          context.strokeRect(Math.round(x0) + 1, y + 1, Math.max(Math.round(w) - 2, 1), h - 2);
        }
      }
    }
    if (selection !== null) {
      const x0 = timeToX(selection.t0, view, width);
      const x1 = timeToX(selection.t1, view, width);
      context.fillStyle = palette.selection;
      context.fillRect(x0, top, x1 - x0, canvasHeight);
      context.strokeStyle = palette.accent;
      context.strokeRect(Math.round(x0) + 0.5, top + 0.5, Math.max(Math.round(x1 - x0) - 1, 0), canvasHeight - 1);
    }
    if (hover !== null && hover.type === "bar") {
      const box = boxes.find((b) => b.tid === hover.tid);
      if (box !== undefined) {
        context.strokeStyle = palette.text;
        context.lineWidth = 1.5;
        context.strokeRect(hover.bar.x - 1, box.barY - 1, Math.max(hover.bar.w, 1) + 2, box.barHeight + 2);
      }
    }
    drawFinished(started, data !== undefined);
  }, [boxes, visible, bars, bands, canvasHeight, top, width, view, origin, palette, selection, hover, data, highlight]);

  // Wheel zoom needs a non-passive listener, which React's onWheel is not.
  useEffect(() => {
    const element = canvas.current;
    if (element === null) return;
    const onWheel = (event: WheelEvent): void => {
      const { window: current, bounds, width: w, onWindow } = latest.current;
      const x = event.offsetX;
      const horizontal = Math.abs(event.deltaX) > Math.abs(event.deltaY) || event.shiftKey;
      if (horizontal && !event.ctrlKey) {
        event.preventDefault();
        onWindow(panByPixels(current, -(event.shiftKey ? event.deltaY : event.deltaX), w, bounds));
        return;
      }
      event.preventDefault();
      onWindow(zoomAround(current, xToTime(x, current, w), wheelZoomFactor(event.deltaY, event.deltaMode, event.ctrlKey), bounds));
    };
    element.addEventListener("wheel", onWheel, { passive: false });
    return () => element.removeEventListener("wheel", onWheel);
  }, []);

  const hoverAt = (clientX: number, clientY: number, x: number, y: number): void => {
    const box: LaneBox | null = laneAt(boxes, y);
    if (box === null) {
      setHover(null);
      return;
    }
    const track = bandAt(box, y);
    if (track !== null) {
      const segments = bands.get(`${String(box.tid)}:${track}`) ?? [];
      const segment = segments[barAt(segments, x, 1)];
      setHover(segment === undefined ? null : { type: "band", tid: box.tid, track, segment, clientX, clientY });
      return;
    }
    const laneBarsList = bars.get(box.tid) ?? [];
    const bar = laneBarsList[barAt(laneBarsList, x)];
    setHover(bar === undefined ? null : { type: "bar", tid: box.tid, bar, lane: windowLanes.get(box.tid), clientX, clientY });
  };

  return (
    <div
      className="lanes-scroll"
      data-testid="lanes"
      ref={scroller}
      onScroll={(event) => {
        setScrollTop(event.currentTarget.scrollTop);
        setHover(null);
      }}
    >
      <div className="row">
        <div className="gutter lane-labels" style={{ height }}>
          {boxes.map((box) => {
            const lane = lanes.find((l) => l.tid === box.tid);
            if (lane === undefined) return null;
            const isCollapsed = collapsed.has(box.tid);
            const marked = highlight !== null && highlight.tids.has(box.tid);
            return (
              <div
                key={box.tid}
                className={`lane-label ${marked ? "highlighted" : ""}`}
                data-testid="lane-label"
                data-highlighted={marked ? "true" : undefined}
                style={{ top: box.y - 2, height: box.height + 4 }}
                title={`${laneLabel(lane)} — thread ${String(lane.tid)}${lane.process ? `, ${lane.process}` : ""}${lane.pid !== null ? ` (pid ${String(lane.pid)})` : ""}, ${String(lane.operations)} operations, busy ${formatDuration(lane.busy_us)}`}
              >
                <button
                  aria-label={`${isCollapsed ? "Expand" : "Collapse"} ${laneLabel(lane)} ${String(lane.tid)}`}
                  aria-expanded={!isCollapsed}
                  onClick={() => props.onToggleCollapse(box.tid)}
                >
                  {isCollapsed ? "▶" : "▼"}
                </button>
                <span className={`name ${isCollapsed ? "sub" : ""}`} style={isCollapsed ? { fontSize: 10 } : undefined}>
                  {lane.role || "thread"}
                  {lane.name && lane.name !== lane.role && <span className="sub"> {lane.name}</span>}
                </span>
                <span className="tid">{lane.tid}</span>
              </div>
            );
          })}
        </div>
        <div className="canvas-cell" style={{ height }}>
          <canvas
            ref={canvas}
            data-testid="lanes-canvas"
            style={{
              cursor: props.selectionMode ? "crosshair" : panning ? "grabbing" : "grab",
              touchAction: "none",
              position: "sticky",
              top: 0,
            }}
            onPointerDown={(event) => {
              if (event.button !== 0) return;
              event.currentTarget.setPointerCapture(event.pointerId);
              drag.current = {
                mode: event.shiftKey || props.selectionMode ? "select" : "pan",
                startX: event.nativeEvent.offsetX,
                startWindow: view,
                moved: false,
              };
              setPanning(drag.current.mode === "pan");
              setHover(null);
            }}
            onPointerMove={(event) => {
              const x = event.nativeEvent.offsetX;
              const y = event.nativeEvent.offsetY + top;
              props.onPointerTime(xToTime(x, view, width));
              const current = drag.current;
              if (current === null) {
                hoverAt(event.clientX, event.clientY, x, y);
                return;
              }
              if (Math.abs(x - current.startX) >= 3) current.moved = true;
              if (!current.moved) return;
              if (current.mode === "pan") props.onWindow(panByPixels(current.startWindow, x - current.startX, width, props.bounds));
              else props.onSelection(rangeFromPixels(current.startX, x, current.startWindow, width));
            }}
            onPointerUp={(event) => {
              const current = drag.current;
              drag.current = null;
              setPanning(false);
              event.currentTarget.releasePointerCapture(event.pointerId);
              // A click without a drag in selection mode clears the selection.
              if (current !== null && !current.moved && current.mode === "select") props.onSelection(null);
            }}
            onPointerLeave={() => {
              setHover(null);
              props.onPointerTime(null);
            }}
          />
        </div>
      </div>
      {hover?.type === "bar" && <Tooltip hover={hover} lanes={lanes} palette={palette} origin={origin} view={view} width={width} />}
      {hover?.type === "band" && <BandTooltip hover={hover} lanes={lanes} palette={palette} origin={origin} view={view} width={width} />}
    </div>
  );
}
