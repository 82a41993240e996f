import { describe, expect, it } from "vitest";

import { relativeToRoots } from "./jobText";

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
