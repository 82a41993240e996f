import { type BrushBehavior, type D3BrushEvent, brushX } from "d3-brush";
import { select } from "d3-selection";
import { useEffect, useMemo, useRef } from "react";

import type { TraceWindow } from "../../queries/traces";
import { KINDS, asKind } from "../../timeline/kinds";
import { type Bounds, type TimeWindow, timeToX, xToTime } from "../../timeline/viewport";
import { type Palette, prepareCanvas } from "./palette";

export const OVERVIEW_HEIGHT = 40;

/**
 * The whole trace in one strip (how busy all threads are, by kind), with a d3-brush over it for the
 * window on screen: drag the brush to pan, resize its edges to zoom, drag anywhere else to pick a window.
 */
export function Overview({
  data,
  bounds,
  window: view,
  width,
  palette,
  onWindow,
}: {
  data: TraceWindow | undefined;
  bounds: Bounds;
  window: TimeWindow;
  width: number;
  palette: Palette;
  onWindow: (window: TimeWindow) => void;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const brushGroup = useRef<SVGGElement>(null);
  const brush = useRef<BrushBehavior<unknown> | null>(null);
  const onWindowRef = useRef(onWindow);
  const whole = useMemo(() => ({ t0: bounds.min, t1: bounds.max }), [bounds.min, bounds.max]);

  useEffect(() => {
    onWindowRef.current = onWindow;
  }, [onWindow]);

  // Activity per column: the summed busy share of every lane, stacked by kind.
  useEffect(() => {
    const element = canvas.current;
    if (element === null || width <= 0) return;
    const context = prepareCanvas(element, width, OVERVIEW_HEIGHT);
    if (context === null || data === undefined) return;
    const columns = new Map<number, Map<string, number>>();
    for (const lane of data.lanes) {
      const items =
        lane.detail === "buckets"
          ? lane.buckets.map((b) => ({ t: data.t0_us + b.i * data.bucket_us, d: data.bucket_us, busy: b.busy, kind: b.kind }))
          : lane.operations.map((o) => ({ t: o.start_us, d: o.duration_us, busy: 1, kind: o.kind }));
      for (const item of items) {
        const x0 = Math.floor(timeToX(item.t, whole, width));
        const x1 = Math.max(x0, Math.floor(timeToX(item.t + item.d, whole, width)));
        for (let x = Math.max(0, x0); x <= Math.min(width - 1, x1); x += 1) {
          const column = columns.get(x) ?? new Map<string, number>();
          column.set(asKind(item.kind), (column.get(asKind(item.kind)) ?? 0) + item.busy);
          columns.set(x, column);
        }
      }
    }
    let peak = 0;
    for (const column of columns.values()) {
      let total = 0;
      for (const value of column.values()) total += value;
      peak = Math.max(peak, total);
    }
    if (peak <= 0) return;
    const usable = OVERVIEW_HEIGHT - 4;
    for (const [x, column] of columns) {
      let total = 0;
      for (const value of column.values()) total += value;
      let y = OVERVIEW_HEIGHT;
      for (const kind of KINDS) {
        const value = column.get(kind);
        if (value === undefined) continue;
        // Square root: one column where every thread is busy must not flatten the rest of the strip.
        const h = (value / total) * Math.sqrt(total / peak) * usable;
        context.fillStyle = palette.kinds[kind];
        context.fillRect(x, y - h, 1, h);
        y -= h;
      }
    }
  }, [data, whole, width, palette]);

  useEffect(() => {
    const group = brushGroup.current;
    if (group === null || width <= 0) return;
    const behaviour = brushX()
      .extent([
        [0, 0],
        [width, OVERVIEW_HEIGHT],
      ])
      .on("brush end", (event: D3BrushEvent<unknown>) => {
        // Moves made by code (below) have no sourceEvent: only the user's own drags change the window.
        if (event.sourceEvent === null || event.sourceEvent === undefined) return;
        const selection = event.selection as [number, number] | null;
        if (selection === null) {
          onWindowRef.current(whole);
          return;
        }
        onWindowRef.current({ t0: xToTime(selection[0], whole, width), t1: xToTime(selection[1], whole, width) });
      });
    brush.current = behaviour;
    const g = select(group);
    g.call(behaviour);
    return () => {
      g.on(".brush", null);
      g.selectAll("*").remove();
      brush.current = null;
    };
  }, [width, whole]);

  useEffect(() => {
    const group = brushGroup.current;
    const behaviour = brush.current;
    if (group === null || behaviour === null || width <= 0) return;
    const x0 = Math.max(0, timeToX(view.t0, whole, width));
    const x1 = Math.min(width, Math.max(x0 + 2, timeToX(view.t1, whole, width)));
    // The whole trace on screen shows no brush, so that a drag anywhere on the strip draws a new one
    // (a brush as wide as the strip could only be moved, and it has nowhere to go).
    const everything = x0 <= 0.5 && x1 >= width - 0.5;
    select(group).call((g) => {
      behaviour.move(g, everything ? null : [x0, x1]);
    });
  }, [view, whole, width]);

  return (
    <div className="overview" style={{ position: "relative", height: OVERVIEW_HEIGHT }} data-testid="overview">
      <canvas ref={canvas} style={{ position: "absolute", left: 0, top: 0 }} />
      <svg width={width} height={OVERVIEW_HEIGHT} style={{ position: "absolute", left: 0, top: 0 }} aria-label="Overview: drag to choose the window">
        <g ref={brushGroup} />
      </svg>
    </div>
  );
}
