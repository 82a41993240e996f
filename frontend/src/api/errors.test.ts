import { describe, expect, it } from "vitest";

import { ApiError, readFieldErrors } from "./errors";

describe("readFieldErrors", () => {
  it.each([
    ["a string detail has no fields", { detail: "Unknown format" }, []],
    ["no body", null, []],
    [
      "a domain error on backup_path",
      { detail: [{ loc: ["body", "backup_path"], msg: "not under a backup root", type: "InvalidRequest" }] },
      [{ field: "backup_path", message: "not under a backup root" }],
    ],
    [
      "a validation error inside the sandbox target drops the union tag",
      {
        detail: [
          {
            loc: ["body", "target", "sandbox", "options", "innodb_buffer_pool_size"],
            msg: "String should match pattern '^\\d+[KMGkmg]?$'",
          },
        ],
      },
      [{ field: "target.options.innodb_buffer_pool_size", message: "should be a size such as 512M or 2G (digits, then optionally K, M or G)" }],
    ],
    [
      "pydantic's 'Value error, ' prefix goes",
      { detail: [{ loc: ["body", "target", "options", "extra"], msg: "Value error, 'X' is not a server option name" }] },
      [{ field: "target.options.extra", message: "'X' is not a server option name" }],
    ],
    ["a body-level error has the empty field", { detail: [{ loc: ["body"], msg: "busy" }] }, [{ field: "", message: "busy" }]],
    [
      "an unknown pattern is kept as pydantic says it",
      { detail: [{ loc: ["body", "x"], msg: "String should match pattern '^a$'" }] },
      [{ field: "x", message: "String should match pattern '^a$'" }],
    ],
    [
      "the database name pattern in words",
      { detail: [{ loc: ["body", "database"], msg: "String should match pattern '^[^`/\\\\.\\x00]{1,64}$'" }] },
      [{ field: "database", message: "should be a database name of 1 to 64 characters without `, /, \\ or ." }],
    ],
    [
      "the user name pattern in words",
      { detail: [{ loc: ["body", "username"], msg: "String should match pattern '^[a-z0-9][a-z0-9._@-]*$'" }] },
      [{ field: "username", message: "should be a user name of letters, digits and . _ @ -, starting with a letter or a digit" }],
    ],
  ])("%s", (_name, body, expected) => {
    expect(readFieldErrors(body)).toEqual(expected);
  });
});

describe("ApiError", () => {
  it.each([
    [400, { detail: "Not a JuiceFS access log or strace output" }, "Not a JuiceFS access log or strace output"],
    [413, null, "The file is too large for this server."],
    [422, { detail: [{ loc: ["body", "database"], msg: "bad name" }] }, "database: bad name"],
    [422, { detail: [{ loc: ["body", "target", "options", "log_bin"], msg: "bad" }] }, "log_bin: bad"],
    [502, "gateway", "The server failed (HTTP 502); its log says why."],
  ])("HTTP %s with %o says %s", (status, body, message) => {
    expect(ApiError.from(status, body).message).toBe(message);
  });

  it("finds a field's message, or one below it", () => {
    const error = ApiError.from(422, { detail: [{ loc: ["body", "target", "options", "log_bin"], msg: "bad" }] });
    expect(error.fieldMessage("target.options.log_bin")).toBe("bad");
    expect(error.fieldMessage("target.options")).toBe("bad");
    expect(error.fieldMessage("backup_path")).toBeUndefined();
  });
});
