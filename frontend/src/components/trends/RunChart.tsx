import { scaleLinear, scaleTime } from "d3-scale";
import { line } from "d3-shape";
import { useRef } from "react";
import { useNavigate } from "react-router-dom";

import { type ChartPoint, linesOf, pointTitle, yDomain } from "../../trends/chart";
import { useWidth } from "../timeline/useWidth";

const HEIGHT = 200;
const MARGIN = { top: 10, right: 12, bottom: 24, left: 72 };

/**
 * Runs of one database over time: a dot per run coloured by method, a line per method through its successful
 * runs, failures as crosses, regressions ringed, and an optional reference line (the RTO). d3-scale and d3-shape
 * compute, React draws; a dot opens its job.
 */
export function RunChart({
  label,
  points,
  colours,
  domain,
  format,
  reference,
}: {
  label: string;
  points: ChartPoint[];
  colours: Map<string, string>;
  domain: [number, number];
  format: (value: number) => string;
  reference?: { value: number; label: string } | undefined;
}) {
  const box = useRef<HTMLDivElement>(null);
  const width = useWidth(box);
  const navigate = useNavigate();
  const innerWidth = Math.max(0, width - MARGIN.left - MARGIN.right);
  const innerHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = scaleTime().domain(domain).range([0, innerWidth]);
  const y = scaleLinear().domain(yDomain(points, reference?.value)).range([innerHeight, 0]).nice();
  const path = line<ChartPoint>()
    .x((p) => x(p.x))
    .y((p) => y(p.y));
  const xTicks = x.ticks(Math.max(2, Math.floor(innerWidth / 90)));
  // d3's own multi-scale labels: days over weeks, hours and minutes over a morning of runs.
  const xLabel = x.tickFormat();
  const yTicks = y.ticks(4);

  return (
    <div ref={box} className="run-chart">
      {width > 0 && (
        <svg width={width} height={HEIGHT} role="img" aria-label={label}>
          <g transform={`translate(${String(MARGIN.left)},${String(MARGIN.top)})`}>
            {yTicks.map((tick) => (
              <g key={tick} transform={`translate(0,${y(tick).toFixed(1)})`}>
                <line x2={innerWidth} stroke="var(--grid)" />
                <text x={-6} dy="0.32em" textAnchor="end" fontSize={11} fill="var(--muted)">
                  {format(tick)}
                </text>
              </g>
            ))}
            {xTicks.map((tick) => (
              <text key={tick.getTime()} x={x(tick)} y={innerHeight + 16} textAnchor="middle" fontSize={11} fill="var(--muted)">
                {xLabel(tick)}
              </text>
            ))}
            <line y1={innerHeight} y2={innerHeight} x2={innerWidth} stroke="var(--border)" />
            {reference !== undefined && (
              <g className="reference" transform={`translate(0,${y(reference.value).toFixed(1)})`}>
                <line x2={innerWidth} stroke="var(--bad)" strokeDasharray="5 4" />
                <text x={innerWidth} dy="-0.4em" textAnchor="end" fontSize={11} fill="var(--bad)">
                  {reference.label}
                </text>
              </g>
            )}
            {[...linesOf(points)].map(([method, line_]) => (
              <path key={method} d={path(line_) ?? ""} fill="none" stroke={colours.get(method)} strokeWidth={1.5} opacity={0.7} />
            ))}
            {points.map((point, index) => {
              const cx = x(point.x);
              const cy = y(point.y);
              const colour = colours.get(point.method) ?? "var(--muted)";
              const open = (): void => {
                if (point.jobId !== null) void navigate(`/jobs/${String(point.jobId)}`);
              };
              return (
                <g
                  key={`${String(point.jobId)}-${String(index)}`}
                  className={`run-point${point.failed ? " failed" : ""}${point.regression ? " regression" : ""}`}
                  transform={`translate(${cx.toFixed(1)},${cy.toFixed(1)})`}
                  onClick={open}
                  style={{ cursor: point.jobId === null ? "default" : "pointer" }}
                >
                  <title>{pointTitle(point, format(point.y))}</title>
                  {point.regression && <circle r={8} fill="none" stroke="var(--warn)" strokeWidth={2} />}
                  {point.failed ? (
                    <path d="M-4,-4L4,4M-4,4L4,-4" stroke="var(--bad)" strokeWidth={2.5} />
                  ) : (
                    <circle r={4} fill={colour} stroke="var(--panel)" strokeWidth={1} />
                  )}
                </g>
              );
            })}
          </g>
        </svg>
      )}
    </div>
  );
}

export function MethodLegend({ colours }: { colours: Map<string, string> }) {
  return (
    <div className="legend" aria-label="Methods">
      {[...colours].map(([method, colour]) => (
        <span key={method}>
          <span className="swatch" style={{ background: colour }} /> {method}
        </span>
      ))}
      <span>
        <span className="mark-failed">×</span> failed
      </span>
      <span>
        <span className="mark-regression" /> regression
      </span>
    </div>
  );
}
