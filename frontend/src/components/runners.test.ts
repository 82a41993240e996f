import { describe, expect, it } from "vitest";

import {
  chunkSizeBytes,
  restorePhases,
  runnerMismatch,
  runnerReads,
  runnerText,
  runnersFor,
  threadsValue,
  memoryValue,
} from "./runners";

describe("chunkSizeBytes", () => {
  it.each([
    ["64", 64 << 20],
    [" 1 ", 1 << 20],
    ["0.0625", 64 << 10],
    ["", 64 << 20],
    ["1024", 1 << 30],
  ])("%j MiB is %d bytes", (mib, bytes) => {
    expect(chunkSizeBytes(mib)).toBe(bytes);
  });

  it.each(["lots", "-1", "0"])("%j goes as typed, for the API to say what is wrong", (mib) => {
    expect(chunkSizeBytes(mib)).toBe(mib.trim());
  });
});

describe("threadsValue", () => {
  it.each([
    ["", null],
    ["  ", null],
    ["4", 4],
    ["65", 65], // out of range: the API says so next to the field
    ["many", "many"],
  ])("%j sends %j", (text, value) => {
    expect(threadsValue(text)).toBe(value);
  });
});

describe("runnerReads", () => {
  it.each([
    ["auto", "mydumper", true],
    ["loader", "mysqlsh", true],
    ["mysql", "mysqldump", true],
    ["mysql", "mydumper", false],
    ["myloader", "mydumper", true],
    ["myloader", "mysqldump-tab", false],
    ["mysqlimport", "mysqldump-tab", true],
    ["loader", "mariabackup", false],
    ["auto", "mariabackup", true],
    ["mariabackup", "mariabackup", true],
    ["mariabackup", "mysqldump", false],
    ["mysql", "mariabackup", false],
    ["xtrabackup", "xtrabackup", true],
    ["xtrabackup", "mariabackup", false],
  ] as const)("%s reads %s: %s", (runner, format, reads) => {
    expect(runnerReads(runner, format)).toBe(reads);
  });
});

describe("runnerText", () => {
  it.each([
    [{ runner: "loader", threads: 2, chunk_size: 64 << 20 }, "restorescope's loader · 2 threads · 64 MiB chunks"],
    [{ runner: "loader", threads: null, chunk_size: 64 << 10 }, "restorescope's loader · threads: the worker's CPU count · 64 KiB chunks"],
    [{ runner: "loader", threads: 8, chunk_size: 1536 << 10 }, "restorescope's loader · 8 threads · 1.5 MiB chunks"],
    [{ runner: "mysql", threads: 4, chunk_size: 64 << 20 }, "mysql client · 1 connection"],
    [{ runner: "myloader", threads: 3 }, "myloader · 3 threads"],
    [
      { runner: "mariabackup", threads: null, use_memory: "1G", read_io_threads: 4, write_io_threads: 2 },
      "mariabackup · --use-memory 1G · 4 read / 2 write IO threads",
    ],
    [{ runner: "mariabackup", use_memory: null, read_io_threads: null }, "mariabackup · --use-memory the default (96M)"],
    [{ runner: "xtrabackup", use_memory: "512M", write_io_threads: 8 }, "xtrabackup (untested) · --use-memory 512M · 8 write IO threads"],
    [{ capture: "none" }, null], // a job from before runners could be chosen
  ])("%o reads %j", (parameters, text) => {
    expect(runnerText(parameters)).toBe(text);
  });
});

describe("runnersFor", () => {
  it.each([
    ["mariabackup", ["auto", "mariabackup"]],
    ["xtrabackup", ["auto", "xtrabackup"]],
    ["mysqldump", ["auto", "loader", "mysql", "myloader", "mysqlimport"]],
    [undefined, ["auto", "loader", "mysql", "myloader", "mysqlimport"]], // no backup chosen yet
  ] as const)("%s offers %j", (format, runners) => {
    expect(runnersFor(format).map((r) => r.value)).toEqual(runners);
  });
});

describe("runnerMismatch", () => {
  it.each([
    ["mysql", "mariabackup", "a physical backup (mariabackup) is restored by its own tool: choose auto or mariabackup"],
    ["mariabackup", "mysqldump", "cannot read this backup (mysqldump): choose auto or the loader"],
    ["auto", "mariabackup", null],
    ["loader", "mydumper", null],
  ] as const)("%s on %s: %j", (runner, format, hint) => {
    expect(runnerMismatch(runner, format)).toBe(hint);
  });
});

describe("memoryValue (--use-memory)", () => {
  it.each([
    ["", null],
    [" 1G ", "1G"],
    ["lots", "lots"], // the API says what is wrong, next to the field
  ])("%j sends %j", (text, value) => {
    expect(memoryValue(text)).toBe(value);
  });
});

describe("restorePhases", () => {
  it.each([
    [{ runner: "mariabackup" }, ["queued", "preparing", "starting_server", "verifying", "cleaning_up", "done"]],
    [
      { runner: "loader" },
      ["queued", "waiting_for_target", "starting_server", "connecting", "restoring", "verifying", "cleaning_up", "done"],
    ],
    [{}, ["queued", "waiting_for_target", "starting_server", "connecting", "restoring", "verifying", "cleaning_up", "done"]],
  ])("%o goes through %j", (parameters, phases) => {
    expect(restorePhases(parameters)).toEqual(phases);
  });
});
