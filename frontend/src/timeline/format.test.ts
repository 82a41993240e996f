import { describe, expect, it } from "vitest";

import {
  commonDirectory,
  dataDirectory,
  formatBytes,
  formatCount,
  formatDuration,
  formatOffset,
  formatPercent,
  formatRate,
  formatSeconds,
} from "./format";

describe("formatDuration", () => {
  it.each([
    [0, "0 µs"],
    [0.5, "0.5 µs"],
    [1, "1 µs"],
    [999, "999 µs"],
    [1_000, "1 ms"],
    [1_500, "1.5 ms"],
    [12_345, "12.3 ms"],
    [123_456, "123 ms"],
    [1_000_000, "1 s"],
    [90_000_000, "1.5 min"],
    [7_200_000_000, "2 h"],
    [-2_500, "-2.5 ms"],
    [Number.NaN, "–"],
  ])("%s µs -> %s", (us, text) => {
    expect(formatDuration(us)).toBe(text);
  });
});

describe("formatSeconds", () => {
  it.each([
    [null, "–"],
    [0, "0 s"],
    [42.4, "42 s"],
    [185, "3 min 05 s"],
    [3_720, "1 h 02 min"],
    [-3, "0 s"],
  ])("%s -> %s", (seconds, text) => {
    expect(formatSeconds(seconds)).toBe(text);
  });
});

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1023, "1023 B"],
    [1024, "1 KiB"],
    [16_384, "16 KiB"],
    [1_500_000, "1.43 MiB"],
    [5 * 1024 ** 3, "5 GiB"],
    [null, "–"],
  ])("%s -> %s", (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe("small formatters", () => {
  it.each([
    [formatRate(12.345), "12.3 MB/s"],
    [formatRate(null), "–"],
    [formatCount(1_234_567), "1,234,567"],
    [formatPercent(99.5), "100 %"],
    [formatPercent(4.25), "4.3 %"],
    [formatPercent(0), "0 %"],
    [formatOffset(512), "512"],
    [formatOffset(16_384), "16384 (16 KiB)"],
    [formatOffset(null), "–"],
  ])("%s is %s", (actual, expected) => {
    expect(actual).toBe(expected);
  });
});

describe("commonDirectory", () => {
  it.each([
    [[], ""],
    [["/data/ibdata1"], ""],
    [["/srv/job-1/data/ibdata1", "/srv/job-1/data/shop/orders.ibd"], "/srv/job-1/data/"],
    [["/srv/job-1/data/ib_logfile0", "/srv/job-1/data/ibdata1"], "/srv/job-1/data/"],
    [["/a/x", "/b/y"], "/"],
    [["inode:17669", "inode:17670"], ""],
  ])("%o share %s", (paths, directory) => {
    expect(commonDirectory(paths)).toBe(directory);
  });
});

describe("dataDirectory", () => {
  it.each([
    [["/srv/job-1/data/ibdata1", "/srv/job-1/data/shop/orders.ibd", "/proc/self/maps", "TCP:[127.0.0.1:3306]"], "/srv/job-1/data/"],
    [["/proc/self/maps", "/proc/self/status"], ""],
    [["/a/x", "/b/y"], ""],
  ])("%o: %s", (paths, directory) => {
    expect(dataDirectory(paths)).toBe(directory);
  });
});
