import { useEffect, useRef } from "react";

import type { CounterTrack } from "../../queries/traces";
import { thinPoints } from "../../timeline/lod";
import type { TimeWindow } from "../../timeline/viewport";
import { type Palette, prepareCanvas } from "./palette";

const TRACK_HEIGHT = 30;

function formatValue(value: number, unit: string): string {
  const text = Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 10 ? value.toFixed(1) : value.toFixed(2);
  return `${text}${unit ? ` ${unit}` : ""}`;
}

function Track({ track, view, width, palette }: { track: CounterTrack; view: TimeWindow; width: number; palette: Palette }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const peak = Math.max(0, ...track.points.map((p) => p[1] ?? 0));
  useEffect(() => {
    const element = canvas.current;
    if (element === null || width <= 0) return;
    const context = prepareCanvas(element, width, TRACK_HEIGHT);
    if (context === null) return;
    const points = thinPoints(track.points, view, width);
    if (points.length === 0 || peak <= 0) return;
    const y = (value: number): number => TRACK_HEIGHT - 2 - (value / peak) * (TRACK_HEIGHT - 6);
    context.beginPath();
    const first = points[0];
    if (first === undefined) return;
    context.moveTo(first[0], TRACK_HEIGHT);
    // A step line: a sampled counter holds its value until the next sample.
    let lastY = y(first[1]);
    context.lineTo(first[0], lastY);
    for (const [x, value] of points.slice(1)) {
      context.lineTo(x, lastY);
      lastY = y(value);
      context.lineTo(x, lastY);
    }
    // The last sample holds until the window's right edge (the window never extends past the trace).
    context.lineTo(width, lastY);
    context.lineTo(width, TRACK_HEIGHT);
    context.closePath();
    context.fillStyle = palette.selection;
    context.fill();
    context.strokeStyle = palette.accent;
    context.lineWidth = 1;
    context.stroke();
  }, [track, view, width, palette, peak]);
  return (
    <div className="row counter-row" data-testid="counter-track">
      <div className="gutter" style={{ padding: "2px 6px", height: TRACK_HEIGHT }} title={`${track.track}, peak ${formatValue(peak, track.unit)} in this window`}>
        <div className="name" style={{ overflow: "hidden", textOverflow: "ellipsis", whiteSpace: "nowrap" }}>
          {track.track}
        </div>
        <div className="sub" style={{ fontSize: 10 }}>max {formatValue(peak, track.unit)}</div>
      </div>
      <div className="canvas-cell">
        <canvas ref={canvas} />
      </div>
    </div>
  );
}

/** Counter tracks (CPU %, server status rates...) above the lanes, one small step chart each. */
export function Counters({ counters, view, width, palette }: { counters: CounterTrack[]; view: TimeWindow; width: number; palette: Palette }) {
  return (
    <>
      {counters.map((track) => (
        <Track key={track.track} track={track} view={view} width={width} palette={palette} />
      ))}
    </>
  );
}
