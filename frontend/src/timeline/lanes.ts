/** Which lanes a view shows, in what order and where on the canvas: sort, filter, fold idle, lay out. */

export interface LaneInfo {
  tid: number;
  role: string;
  name: string | null;
  operations: number;
  busy_us: number;
}

export const LANE_SORTS = ["role", "busy", "tid"] as const;
export type LaneSort = (typeof LANE_SORTS)[number];

// Natural order: "connection 9" before "connection 10". One collator for all comparisons (localeCompare
// with options builds one per call).
const NATURAL = new Intl.Collator("en", { numeric: true });

/** by role (then busiest first), by busy time (busiest first), or by thread id. */
export function sortLanes<T extends LaneInfo>(lanes: readonly T[], by: LaneSort): T[] {
  const byBusy = (a: T, b: T): number => b.busy_us - a.busy_us || a.tid - b.tid;
  const compare: Record<LaneSort, (a: T, b: T) => number> = {
    role: (a, b) => NATURAL.compare(a.role, b.role) || byBusy(a, b),
    busy: byBusy,
    tid: (a, b) => a.tid - b.tid,
  };
  return [...lanes].sort(compare[by]);
}

/**
 * What a role is without its numbers and parentheses: "connection 6 (mysql)" -> "connection", so that a
 * restore with 300 connections offers one filter, not 300.
 */
export function roleFamily(role: string): string {
  return role.replace(/\([^)]*\)?/g, " ").replace(/\d+/g, " ").replace(/\s+/g, " ").trim() || role;
}

/** The filters to offer: each role when there are few, else each family of roles; with lane counts. */
export function roleGroups(lanes: readonly LaneInfo[], maxGroups = 12): { key: string; count: number }[] {
  const count = (keyOf: (role: string) => string): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const lane of lanes) counts.set(keyOf(lane.role), (counts.get(keyOf(lane.role)) ?? 0) + 1);
    return counts;
  };
  let groups = count((role) => role);
  if (groups.size > maxGroups) groups = count(roleFamily);
  return [...groups].map(([key, n]) => ({ key, count: n })).sort((a, b) => NATURAL.compare(a.key, b.key));
}

/** Lanes whose role, or family of roles, is among `roles` (all when empty). */
export function filterLanes<T extends LaneInfo>(lanes: readonly T[], roles: readonly string[]): T[] {
  if (roles.length === 0) return [...lanes];
  const wanted = new Set(roles);
  return lanes.filter((lane) => wanted.has(lane.role) || wanted.has(roleFamily(lane.role)));
}

/**
 * Idle lanes (no operation in the whole trace) are folded into one line, as Perfetto folds empty tracks,
 * unless asked to show them.
 */
export function foldIdle<T extends LaneInfo>(
  lanes: readonly T[],
  showIdle: boolean,
  pinned: ReadonlySet<number> = new Set(),
): { shown: T[]; folded: T[] } {
  if (showIdle) return { shown: [...lanes], folded: [] };
  const shown: T[] = [];
  const folded: T[] = [];
  for (const lane of lanes) (lane.operations > 0 || pinned.has(lane.tid) ? shown : folded).push(lane);
  return { shown, folded };
}

export interface LaneMetrics {
  /** Height of an expanded lane's operation bars. */
  barPx: number;
  /** Height of the CPU-state band under the bars, when the trace has spans (0 otherwise). */
  bandPx: number;
  /** Height of a collapsed lane (a thin activity strip). */
  collapsedPx: number;
  /** Space between lanes. */
  gapPx: number;
}

export const DEFAULT_METRICS: LaneMetrics = { barPx: 18, bandPx: 4, collapsedPx: 6, gapPx: 4 };

export interface LaneBox {
  tid: number;
  /** Top of the lane in CSS pixels from the top of the lanes canvas. */
  y: number;
  height: number;
  barY: number;
  barHeight: number;
  /** Where the CPU-state band is drawn; bandHeight 0 when there is none (or the lane is collapsed). */
  bandY: number;
  bandHeight: number;
  collapsed: boolean;
}

/** Top-to-bottom boxes of the lanes, and the total height they need. */
export function layoutLanes(
  tids: readonly number[],
  collapsed: ReadonlySet<number>,
  metrics: LaneMetrics = DEFAULT_METRICS,
): { boxes: LaneBox[]; height: number } {
  const boxes: LaneBox[] = [];
  let y = metrics.gapPx / 2;
  for (const tid of tids) {
    const isCollapsed = collapsed.has(tid);
    const barHeight = isCollapsed ? metrics.collapsedPx : metrics.barPx;
    const bandHeight = isCollapsed ? 0 : metrics.bandPx;
    const height = barHeight + (bandHeight > 0 ? bandHeight + 1 : 0);
    boxes.push({
      tid,
      y,
      height,
      barY: y,
      barHeight,
      bandY: y + barHeight + 1,
      bandHeight,
      collapsed: isCollapsed,
    });
    y += height + metrics.gapPx;
  }
  return { boxes, height: Math.ceil(y - metrics.gapPx / 2) };
}

/** The boxes that overlap [top, bottom) (a scrolled viewport), found by binary search: only these are drawn. */
export function boxesBetween(boxes: readonly LaneBox[], top: number, bottom: number): LaneBox[] {
  let low = 0;
  let high = boxes.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    const box = boxes[middle];
    if (box !== undefined && box.y + box.height <= top) low = middle + 1;
    else high = middle;
  }
  const out: LaneBox[] = [];
  for (let i = low; i < boxes.length; i += 1) {
    const box = boxes[i];
    if (box === undefined || box.y >= bottom) break;
    out.push(box);
  }
  return out;
}

/** Lanes with spans get two thin bands under the bars: CPU state on top, the server's own state below. */
export const BAND_TRACKS = ["cpu", "state"] as const;
export type BandTrack = (typeof BAND_TRACKS)[number];
const BAND_GAP_PX = 1;

/** Where the band of `track` lies inside a lane's band area. */
export function bandRect(box: LaneBox, track: BandTrack): { y: number; height: number } {
  const height = Math.max((box.bandHeight - BAND_GAP_PX) / 2, 0);
  return { y: box.bandY + (track === "cpu" ? 0 : height + BAND_GAP_PX), height };
}

/** Which band y falls in, if any. */
export function bandAt(box: LaneBox, y: number): BandTrack | null {
  if (box.bandHeight <= 0) return null;
  for (const track of BAND_TRACKS) {
    const rect = bandRect(box, track);
    if (y >= rect.y - 1 && y <= rect.y + rect.height + 1) return track;
  }
  return null;
}

/** A lane's label: its role, with the thread name when it says more, and the thread id. */
export function laneLabel(lane: LaneInfo): string {
  const name = lane.name && lane.name !== lane.role ? ` · ${lane.name}` : "";
  return `${lane.role || "thread"}${name}`;
}
