import { describe, expect, it } from "vitest";

import { loginPath, safeNext } from "./next";
import { type Role, canOperate, isAdmin, roleAllows } from "./roles";

describe("roles", () => {
  it.each<[Role, boolean, boolean]>([
    ["viewer", false, false],
    ["operator", true, false],
    ["admin", true, true],
  ])("%s: operate %s, admin %s", (role, operate, admin) => {
    expect(canOperate(role)).toBe(operate);
    expect(isAdmin(role)).toBe(admin);
    expect(roleAllows(role, "viewer")).toBe(true);
  });
});

describe("safeNext", () => {
  it.each<[string | null, string]>([
    [null, "/"],
    ["", "/"],
    ["/jobs/5/timeline?t0_us=1", "/jobs/5/timeline?t0_us=1"],
    ["/?status=failed", "/?status=failed"],
    ["//evil.example/x", "/"],
    ["/\\evil.example", "/"],
    ["https://evil.example/", "/"],
    ["javascript:alert(1)", "/"],
    ["/login?next=/users", "/"],
    ["/password", "/"],
  ])("%s -> %s", (next, expected) => {
    expect(safeNext(next)).toBe(expected);
  });

  it("builds the login address that comes back", () => {
    expect(loginPath("/jobs/5")).toBe("/login?next=%2Fjobs%2F5");
    expect(loginPath("/")).toBe("/login");
    expect(loginPath("//evil.example")).toBe("/login");
  });
});
