import { describe, expect, it } from "vitest";

import { drillText, relativeToRoots, savedServerText } from "./jobText";

describe("relativeToRoots", () => {
  it.each([
    ["/srv/backups/demo/shop.sql.gz", ["/srv/backups"], "demo/shop.sql.gz"],
    ["/srv/backups/demo/shop.sql.gz", ["/srv/backups/"], "demo/shop.sql.gz"],
    ["/mnt/nfs/x.sql", ["/srv/backups", "/mnt/nfs"], "x.sql"],
    ["/srv/backups-old/x.sql", ["/srv/backups"], "/srv/backups-old/x.sql"],
    ["/elsewhere/x.sql", [], "/elsewhere/x.sql"],
  ])("%s under %o reads %s", (path, roots, text) => {
    expect(relativeToRoots(path, roots)).toBe(text);
  });
});

describe("savedServerText", () => {
  it.each([
    [{ kind: "saved", target_id: 3, name: "replica" }, "saved server replica (#3)"],
    [{ kind: "saved", target_id: 3 }, "saved server #3"],
    [{ kind: "saved" }, "saved server –"],
  ])("%o reads %s", (spec, text) => {
    expect(savedServerText(spec)).toBe(text);
  });
});

describe("drillText", () => {
  it.each([
    [{ drill: { protected_database_id: 1, name: "shop (production)" } }, "restore-and-verify of shop (production)"],
    [{ drill: { protected_database_id: 1 } }, "restore-and-verify"],
    [{ runner: "loader" }, null],
    [{ drill: null }, null],
  ])("%j -> %s", (parameters, text) => {
    expect(drillText(parameters)).toBe(text);
  });
});
