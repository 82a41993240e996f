import { scaleLinear } from "d3-scale";

import { timeTicks } from "../../timeline/ticks";
import type { TimeWindow } from "../../timeline/viewport";

export const AXIS_HEIGHT = 24;

/** The time axis: d3-scale maps time to x, ticks come from the pure tick code, React draws the SVG. */
export function Axis({ window, width, origin }: { window: TimeWindow; width: number; origin: number }) {
  const x = scaleLinear().domain([window.t0, window.t1]).range([0, width]);
  const { ticks, base } = timeTicks(window, width, origin, { charPx: 6.5, gapPx: 16 });
  return (
    <svg width={width} height={AXIS_HEIGHT} role="img" aria-label="Time axis" style={{ display: "block" }}>
      {ticks.map((tick) => {
        const position = x(tick.t);
        return (
          <g key={tick.t} transform={`translate(${position.toFixed(1)},0)`}>
            <line y1={AXIS_HEIGHT - 6} y2={AXIS_HEIGHT} stroke="var(--muted)" />
            <text
              y={AXIS_HEIGHT - 9}
              fontSize={11}
              fill="var(--muted)"
              textAnchor={position < 20 ? "start" : position > width - 30 ? "end" : "middle"}
              className="tick-label"
            >
              {tick.label}
            </text>
          </g>
        );
      })}
      {base !== null && (
        <text x={4} y={10} fontSize={10} fill="var(--text)">
          from {base.label}
        </text>
      )}
    </svg>
  );
}
