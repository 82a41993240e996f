import { describe, expect, it } from "vitest";

import { backupFacts, compressionFor, databasesValue, levelValue } from "./backupJob";

describe("databasesValue", () => {
  it.each([
    ["", []],
    ["shop", ["shop"]],
    [" shop, crm ", ["shop", "crm"]],
    ["shop crm,,billing", ["shop", "crm", "billing"]],
  ])("%j is %j", (text, list) => {
    expect(databasesValue(text)).toEqual(list);
  });
});

describe("compressionFor", () => {
  it("turns compression off for mariabackup, and back on for a dump tool", () => {
    expect(compressionFor("mariabackup", "zstd")).toBe("none");
    expect(compressionFor("mydumper", "none")).toBe("zstd");
    expect(compressionFor("mysqldump", "pigz")).toBe("pigz");
  });
});

describe("levelValue", () => {
  it.each([
    ["", null],
    ["3", 3],
    [" 19 ", 19],
  ])("%j is %j", (text, level) => {
    expect(levelValue(text)).toBe(level);
  });

  it("sends other text as typed, for the API to say what is wrong", () => {
    expect(levelValue("fast")).toBe("fast");
  });
});

describe("backupFacts", () => {
  it("reads a queued backup's parameters", () => {
    expect(
      backupFacts({
        source: { kind: "saved", target_id: 3, name: "prod-replica" },
        tool: "mydumper",
        databases: ["shop", "crm"],
        threads: 4,
        compression: "zstd",
        level: 9,
        destination: "/backups/nightly",
      }),
    ).toEqual([
      ["Source", "saved server prod-replica (#3)"],
      ["Tool", "mydumper"],
      ["Databases", "shop, crm"],
      ["Threads", "4"],
      ["Compression", "zstd level 9"],
      ["Destination", "/backups/nightly"],
    ]);
  });

  it("says what empty choices mean", () => {
    const facts = Object.fromEntries(backupFacts({ tool: "mariabackup", databases: [], threads: null, compression: "none" }));
    expect(facts.Databases).toBe("the whole server");
    expect(facts.Threads).toBe("the worker's CPU count");
    expect(facts.Compression).toBe("none");
  });
});
