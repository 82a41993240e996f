/** The timeline's view in the URL's query string, so a link shows a colleague the same window and filters. */

import { KINDS, type Kind } from "./kinds";
import { LANE_SORTS, type LaneSort } from "./lanes";
import type { TimeWindow } from "./viewport";

export interface TimelineView {
  window: TimeWindow | null;
  selection: TimeWindow | null;
  roles: string[];
  kinds: Kind[];
  path: string;
  sort: LaneSort;
  collapsed: number[];
  showIdle: boolean;
  /** The advisor's suggestion whose evidence is highlighted (its rule id). */
  advice: string | null;
}

export const DEFAULT_VIEW: TimelineView = {
  window: null,
  selection: null,
  roles: [],
  kinds: [],
  path: "",
  sort: "role",
  collapsed: [],
  showIdle: false,
  advice: null,
};

function readRange(value: string | null): TimeWindow | null {
  if (value === null) return null;
  const match = /^(\d+)-(\d+)$/.exec(value);
  if (match === null) return null;
  const t0 = Number(match[1]);
  const t1 = Number(match[2]);
  return Number.isSafeInteger(t0) && Number.isSafeInteger(t1) && t1 > t0 ? { t0, t1 } : null;
}

function readList(value: string | null): string[] {
  return value === null || value === "" ? [] : value.split(",").filter((item) => item !== "");
}

/** Reads what it understands and ignores the rest, so an old or hand-edited link still opens. */
export function parseView(params: URLSearchParams): TimelineView {
  const sort = params.get("sort");
  return {
    window: readRange(params.get("w")),
    selection: readRange(params.get("sel")),
    roles: readList(params.get("roles")),
    kinds: readList(params.get("kinds")).filter((kind): kind is Kind => (KINDS as readonly string[]).includes(kind)),
    path: params.get("path") ?? "",
    sort: LANE_SORTS.find((s) => s === sort) ?? DEFAULT_VIEW.sort,
    collapsed: readList(params.get("collapsed"))
      .map(Number)
      .filter((tid) => Number.isSafeInteger(tid)),
    showIdle: params.get("idle") === "1",
    advice: /^[a-z_]{1,64}$/.test(params.get("advice") ?? "") ? params.get("advice") : null,
  };
}

const range = (window: TimeWindow): string => `${String(Math.floor(window.t0))}-${String(Math.ceil(window.t1))}`;

/** Only what differs from the defaults, in a stable order. */
export function viewToParams(view: TimelineView): URLSearchParams {
  const params = new URLSearchParams();
  if (view.window !== null) params.set("w", range(view.window));
  if (view.selection !== null) params.set("sel", range(view.selection));
  if (view.roles.length > 0) params.set("roles", view.roles.join(","));
  if (view.kinds.length > 0) params.set("kinds", view.kinds.join(","));
  if (view.path !== "") params.set("path", view.path);
  if (view.sort !== DEFAULT_VIEW.sort) params.set("sort", view.sort);
  if (view.collapsed.length > 0) params.set("collapsed", [...view.collapsed].sort((a, b) => a - b).join(","));
  if (view.showIdle) params.set("idle", "1");
  if (view.advice !== null) params.set("advice", view.advice);
  return params;
}
