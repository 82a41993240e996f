import { KIND_COLORS, type Theme } from "../../timeline/kinds";

/** Colours the canvas needs, read from the theme's CSS variables (canvas cannot use var()). */
export interface Palette {
  theme: Theme;
  kinds: (typeof KIND_COLORS)[Theme];
  text: string;
  muted: string;
  grid: string;
  stripe: string;
  selection: string;
  accent: string;
  /** The advisor's evidence: a translucent fill and a solid outline. */
  highlight: string;
  highlightLine: string;
}

export function readPalette(theme: Theme): Palette {
  const style = getComputedStyle(document.documentElement);
  const value = (name: string, fallback: string): string => style.getPropertyValue(name).trim() || fallback;
  return {
    theme,
    kinds: KIND_COLORS[theme],
    text: value("--text", "#000"),
    muted: value("--muted", "#666"),
    grid: value("--grid", "#eee"),
    stripe: value("--panel-2", "#f8f9fa"),
    selection: value("--selection", "rgba(28,100,217,0.14)"),
    accent: value("--accent", "#1c64d9"),
    highlight: value("--highlight", "rgba(156, 54, 181, 0.16)"),
    highlightLine: value("--highlight-line", "#9c36b5"),
  };
}

/** A canvas sized for CSS pixels and the screen's devicePixelRatio, its context scaled to CSS pixels. */
export function prepareCanvas(canvas: HTMLCanvasElement, widthPx: number, heightPx: number): CanvasRenderingContext2D | null {
  const ratio = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.round(widthPx * ratio));
  const height = Math.max(1, Math.round(heightPx * ratio));
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  canvas.style.width = `${String(widthPx)}px`;
  canvas.style.height = `${String(heightPx)}px`;
  const context = canvas.getContext("2d");
  if (context === null) return null;
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  context.clearRect(0, 0, widthPx, heightPx);
  return context;
}
