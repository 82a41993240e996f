import { describe, expect, it } from "vitest";

import { type DayLike, dayTitle, stripSummary } from "./strip";

function day(date: string, state: DayLike["state"], runs = 0, failed = 0, slow = 0): DayLike {
  return { date, state, runs, failed, slow };
}

describe("dayTitle", () => {
  it.each([
    [day("2026-03-02", "none"), "no restore"],
    [day("2026-03-02", "ok", 1), "restored fine (1 run)"],
    [day("2026-03-02", "slow", 2, 0, 1), "restored, but slower than usual (2 runs, 1 slow)"],
    [day("2026-03-02", "failed", 3, 1, 1), "a restore failed (3 runs, 1 failed, 1 slow)"],
  ])("%j", (value, words) => {
    expect(dayTitle(value)).toMatch(new RegExp(`: ${words.replace(/[()]/g, "\\$&")}$`));
  });
});

describe("stripSummary", () => {
  it.each([
    [[day("2026-03-01", "none"), day("2026-03-02", "none")], "no restore in 2 days"],
    [[day("2026-03-01", "ok", 1), day("2026-03-02", "none")], "restored on 1 of 2 days"],
    [[day("2026-03-01", "failed", 1, 1), day("2026-03-02", "slow", 1, 0, 1), day("2026-03-03", "ok", 2)], "restored on 3 of 3 days, 1 with a failure, 1 slow"],
  ])("%#", (days, summary) => {
    expect(stripSummary(days)).toBe(summary);
  });
});
