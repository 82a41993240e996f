import { describe, expect, it } from "vitest";

import {
  highlightWindow,
  optionName,
  recordText,
  settingText,
  shiftedWindow,
  valueText,
  verdictClass,
  verdictText,
} from "./advice";

describe("settings", () => {
  it.each([
    ["runner", "runner"],
    ["target.options.innodb_log_file_size", "innodb_log_file_size"],
    ["target.options.extra.innodb_flush_neighbors", "innodb_flush_neighbors"],
  ])("names %s as %s", (option, name) => {
    expect(optionName(option)).toBe(name);
  });

  it.each([
    [null, "default"],
    [true, "ON"],
    [false, "OFF"],
    [2, "2"],
    ["1G", "1G"],
    [{ a: 1 }, '{"a":1}'],
  ])("writes %j as %s", (value, text) => {
    expect(valueText(value)).toBe(text);
  });

  it("reads a change as before → after", () => {
    expect(settingText({ option: "runner", previous: "mysql", value: "loader" })).toBe("runner: mysql → loader");
    expect(settingText({ option: "target.options.innodb_doublewrite", previous: null, value: false })).toBe(
      "innodb_doublewrite: default → OFF",
    );
    expect(settingText({ option: "backup_path", previous: "/b/sb.sql", value: "/b/sb-tab" })).toBe("backup_path: …/sb.sql → …/sb-tab");
  });
});

describe("outcomes and records", () => {
  it.each([
    [{ verdict: "helped", speedup: 1.742, child_status: "succeeded" }, "1.74x faster", "ok"],
    [{ verdict: "no_effect", speedup: 0.98, child_status: "succeeded" }, "no difference (0.98x)", "warn"],
    [{ verdict: "slower", speedup: 0.8, child_status: "succeeded" }, "slower (0.80x)", "bad"],
    [{ verdict: "failed", speedup: null, child_status: "failed" }, "re-run failed", "bad"],
    [{ verdict: "measuring", speedup: null, child_status: "queued" }, "queued", "running"],
    [{ verdict: "measuring", speedup: null, child_status: "running" }, "running…", "running"],
  ] as const)("%j reads %s", (outcome, text, badge) => {
    expect(verdictText(outcome)).toBe(text);
    expect(verdictClass(outcome)).toBe(badge);
  });

  it("keeps the score in one line", () => {
    expect(recordText({ applied: 0, measured: 0, helped: 0, median_speedup: null })).toBeNull();
    expect(recordText({ applied: 1, measured: 0, helped: 0, median_speedup: null })).toBe("re-run once, nothing measured yet");
    expect(recordText({ applied: 3, measured: 2, helped: 1, median_speedup: 1.2 })).toBe("re-run 3 times: 1 of 2 helped, median 1.20x");
  });
});

describe("highlightWindow", () => {
  const bounds = { min: 1000, max: 11_000 };

  it("covers every range with a margin", () => {
    expect(highlightWindow([{ t0: 3000, t1: 4000 }, { t0: 6000, t1: 7000 }], bounds)).toEqual({ t0: 2800, t1: 7200 });
  });

  it("stays inside the trace", () => {
    expect(highlightWindow([{ t0: 0, t1: 20_000 }], bounds)).toEqual({ t0: 1000, t1: 11_000 });
  });

  it("has nothing to show without ranges, or with ranges outside the trace", () => {
    expect(highlightWindow([], bounds)).toBeNull();
    expect(highlightWindow([{ t0: 20_000, t1: 30_000 }], bounds)).toBeNull();
  });
});

it("puts a window relative to a run's start into that run's time", () => {
  expect(shiftedWindow({ t0: 0, t1: 5_000_000 }, 1_700_000_000_000_000)).toEqual({
    t0: 1_700_000_000_000_000,
    t1: 1_700_000_005_000_000,
  });
});
