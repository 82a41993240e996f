import { describe, expect, it } from "vitest";

import { durationInput, formatDurationText, parseDuration, relativeTime } from "./duration";

describe("parseDuration", () => {
  it.each([
    ["90s", 90],
    ["90 s", 90],
    ["15m", 900],
    ["15 min", 900],
    ["1h 30m", 5400],
    ["1h30m", 5400],
    ["2 hours", 7200],
    ["1.5h", 5400],
    ["1d", 86400],
    [" 10 Minutes ", 600],
  ])("%s -> %s s", (text, seconds) => {
    expect(parseDuration(text)).toEqual({ seconds });
  });

  it.each([
    ["", "is empty: write a time such as 15m, 1h 30m or 90s"],
    ["15", "'15' is not a time: write it with units, such as 15m, 1h 30m or 90s"],
    ["soon", "'soon' is not a time: write it with units, such as 15m, 1h 30m or 90s"],
    ["-5m", "'-5m' is not a time: write it with units, such as 15m, 1h 30m or 90s"],
    ["3 weeks", "'weeks' is not a unit: use s, m, h or d"],
  ])("%j is refused: %s", (text, error) => {
    expect(parseDuration(text)).toEqual({ error });
  });
});

describe("formatDurationText", () => {
  it.each([
    [0.42, "0.4 s"],
    [9.96, "10 s"],
    [42, "42 s"],
    [90, "1 min 30 s"],
    [900, "15 min"],
    [5400, "1 h 30 min"],
    [5412, "1 h 30 min"],
    [90061, "1 d 1 h"],
    [null, "–"],
  ])("%s s -> %s", (seconds, text) => {
    expect(formatDurationText(seconds)).toBe(text);
  });
});

describe("durationInput", () => {
  it.each([
    [900, "15m"],
    [5400, "1h 30m"],
    [3601, "1h 1s"],
    [0, "0s"],
  ])("%s s -> %s, which parses back", (seconds, text) => {
    expect(durationInput(seconds)).toBe(text);
    expect(parseDuration(text)).toEqual({ seconds });
  });
});

describe("relativeTime", () => {
  const now = Date.parse("2026-03-10T12:00:00Z");
  it.each([
    ["2026-03-10T11:59:30Z", "just now"],
    ["2026-03-10T11:55:00Z", "5 min ago"],
    ["2026-03-10T14:00:00Z", "in 2 h"],
    ["2026-03-07T12:00:00Z", "3 d ago"],
    ["not a date", "–"],
  ])("%s -> %s", (at, text) => {
    expect(relativeTime(at, now)).toBe(text);
  });
});
