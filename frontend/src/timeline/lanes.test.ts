import { describe, expect, it } from "vitest";

import { barAt, laneAt } from "./hit";
import { type LaneInfo, bandAt, bandRect, boxesBetween, filterLanes, roleFamily, roleGroups, foldIdle, laneLabel, layoutLanes, sortLanes } from "./lanes";
import { DEFAULT_VIEW, parseView, viewToParams } from "./url";

const lane = (tid: number, role: string, busy: number, operations = 1, name: string | null = null): LaneInfo => ({
  tid,
  role,
  name,
  busy_us: busy,
  operations,
});
const lanes = [lane(3, "page cleaner", 50), lane(1, "client", 10), lane(2, "client", 90), lane(4, "purge", 0, 0)];

describe("sortLanes", () => {
  it.each([
    ["role", [2, 1, 3, 4]],
    ["busy", [2, 3, 1, 4]],
    ["tid", [1, 2, 3, 4]],
  ] as const)("by %s", (by, tids) => {
    expect(sortLanes(lanes, by).map((l) => l.tid)).toEqual(tids);
  });
});

describe("sortLanes in natural order", () => {
  it("puts connection 9 before connection 10", () => {
    const lanes = [lane(1, "connection 10", 0), lane(2, "connection 9", 0), lane(3, "connection 100", 0)];
    expect(sortLanes(lanes, "role").map((l) => l.role)).toEqual(["connection 9", "connection 10", "connection 100"]);
  });
});

describe("filterLanes and foldIdle", () => {
  it.each([
    [[], [3, 1, 2, 4]],
    [["client"], [1, 2]],
    [["client", "purge"], [1, 2, 4]],
    [["nobody"], []],
  ])("roles %o keep %o", (roles, tids) => {
    expect(filterLanes(lanes, roles).map((l) => l.tid)).toEqual(tids);
  });

  it.each([
    [false, [3, 1, 2], [4]],
    [true, [3, 1, 2, 4], []],
  ])("showIdle=%s", (showIdle, shown, folded) => {
    const result = foldIdle(lanes, showIdle);
    expect(result.shown.map((l) => l.tid)).toEqual(shown);
    expect(result.folded.map((l) => l.tid)).toEqual(folded);
  });

  it("keeps a pinned idle lane in view (one the advisor points at)", () => {
    const result = foldIdle(lanes, false, new Set([4]));
    expect(result.shown.map((l) => l.tid)).toEqual([3, 1, 2, 4]);
    expect(result.folded).toEqual([]);
  });
});

describe("laneLabel", () => {
  it.each([
    [lane(1, "client", 0, 1, "mysql"), "client · mysql"],
    [lane(1, "client", 0, 1, "client"), "client"],
    [lane(1, "", 0, 1, null), "thread"],
  ])("%o is %s", (info, label) => {
    expect(laneLabel(info)).toBe(label);
  });
});

describe("layoutLanes and hit testing", () => {
  const metrics = { barPx: 10, bandPx: 2, collapsedPx: 4, gapPx: 4 };
  const { boxes, height } = layoutLanes([7, 8, 9], new Set([8]), metrics);

  it("stacks lanes with gaps; collapsed lanes are thin and have no band", () => {
    expect(boxes.map((b) => [b.tid, b.y, b.height, b.bandHeight])).toEqual([
      [7, 2, 13, 2],
      [8, 19, 4, 0],
      [9, 27, 13, 2],
    ]);
    expect(height).toBe(42);
  });

  it.each([
    [0, 7],
    [10, 7],
    [18, 8],
    [26, 9],
    [41, 9],
    [60, null],
    [-10, null],
  ])("y=%s is lane %s", (y, tid) => {
    expect(laneAt(boxes, y)?.tid ?? null).toBe(tid);
  });

  const bars = [
    { x: 10, w: 5 },
    { x: 20, w: 1 },
    { x: 40, w: 30 },
  ];
  it.each([
    [12, 0],
    [15.5, 0],
    [20.5, 1],
    [23, 1],
    [30, -1],
    [38, 2],
    [69, 2],
    [80, -1],
    [0, -1],
  ])("x=%s is bar %s", (x, index) => {
    expect(barAt(bars, x)).toBe(index);
  });

  it("finds nothing in no bars", () => {
    expect(barAt([], 5)).toBe(-1);
  });
});

describe("view in the URL", () => {
  it("round-trips", () => {
    const view = {
      ...DEFAULT_VIEW,
      window: { t0: 1_700_000_000_000_000, t1: 1_700_000_001_000_000 },
      selection: { t0: 1_700_000_000_100_000, t1: 1_700_000_000_200_000 },
      roles: ["client", "page cleaner"],
      kinds: ["write" as const, "fsync" as const],
      path: "ibdata1",
      sort: "busy" as const,
      collapsed: [9, 3],
      showIdle: true,
      advice: "parallel_load",
    };
    expect(parseView(viewToParams(view))).toEqual({ ...view, collapsed: [3, 9] });
  });

  it("leaves defaults out", () => {
    expect(viewToParams(DEFAULT_VIEW).toString()).toBe("");
  });

  it.each([
    ["w=abc", { window: null }],
    ["w=200-100", { window: null }],
    ["kinds=read,bogus", { kinds: ["read"] }],
    ["sort=sideways", { sort: "role" }],
    ["collapsed=1,x,2", { collapsed: [1, 2] }],
    ["advice=<script>", { advice: null }],
  ])("ignores what it does not understand: %s", (query, expected) => {
    expect(parseView(new URLSearchParams(query))).toMatchObject(expected);
  });
});

describe("bands", () => {
  const [box] = layoutLanes([1], new Set(), { barPx: 18, bandPx: 9, collapsedPx: 6, gapPx: 4 }).boxes;
  if (box === undefined) throw new Error("no box");

  it("splits the band area into a CPU band and a server-state band", () => {
    expect(bandRect(box, "cpu")).toEqual({ y: 21, height: 4 });
    expect(bandRect(box, "state")).toEqual({ y: 26, height: 4 });
  });

  it.each([
    [10, null],
    [22, "cpu"],
    [25.5, "cpu"],
    [28, "state"],
    [40, null],
  ])("y=%s is in band %s", (y, track) => {
    expect(bandAt(box, y)).toBe(track);
  });
});

describe("boxesBetween", () => {
  const { boxes } = layoutLanes(
    Array.from({ length: 100 }, (_, i) => i),
    new Set(),
    { barPx: 10, bandPx: 0, collapsedPx: 4, gapPx: 10 },
  );
  // Each lane is 10 px tall every 20 px, starting at y=5.
  it.each([
    [0, 40, [0, 1]],
    [14, 16, [0]],
    [15, 26, [1]],
    [16, 24, []],
    [1_000, 1_050, [50, 51, 52]],
    [1_990, 5_000, [99]],
    [5_000, 6_000, []],
  ])("from %s to %s: lanes %o", (top, bottom, tids) => {
    expect(boxesBetween(boxes, top, bottom).map((b) => b.tid)).toEqual(tids);
  });
});

describe("role families and groups", () => {
  it.each([
    ["connection 6 (mysql)", "connection"],
    ["mysql client (connection 6)", "mysql client"],
    ["innodb worker", "innodb worker"],
    ["pid 4410", "pid"],
    ["42", "42"],
  ])("%s is of the family %s", (role, family) => {
    expect(roleFamily(role)).toBe(family);
  });

  it("offers each role while there are few", () => {
    expect(roleGroups([lane(1, "pid 1", 0), lane(2, "pid 2", 0), lane(3, "pid 2", 0)])).toEqual([
      { key: "pid 1", count: 1 },
      { key: "pid 2", count: 2 },
    ]);
  });

  it("offers families when roles are many", () => {
    const many = Array.from({ length: 30 }, (_, i) => lane(i, `connection ${String(i)} (mysql)`, 0));
    expect(roleGroups([...many, lane(99, "page cleaner", 0)])).toEqual([
      { key: "connection", count: 30 },
      { key: "page cleaner", count: 1 },
    ]);
  });

  it("filters by a family as by a role", () => {
    const lanes = [lane(1, "connection 5 (mysql)", 0), lane(2, "page cleaner", 0)];
    expect(filterLanes(lanes, ["connection"]).map((l) => l.tid)).toEqual([1]);
  });
});
