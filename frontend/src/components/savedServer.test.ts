import { describe, expect, it } from "vitest";

import {
  type ServerForm,
  type Target,
  checkSummary,
  createBody,
  deleteQuestion,
  emptyForm,
  formOf,
  portValue,
  updateBody,
  whereText,
  workerHostText,
} from "./savedServer";

const SAVED: Target = {
  id: 3,
  name: "replica",
  host: "db2",
  port: 3307,
  socket: null,
  user: "restore",
  default_database: "shop",
  notes: null,
  has_password: true,
  created_at: "2026-11-25T09:00:00Z",
  updated_at: null,
  last_check: null,
  job_count: 0,
  active_job_ids: [],
};

function edited(changes: Partial<ServerForm>): ServerForm {
  return { ...formOf(SAVED), ...changes };
}

describe("createBody", () => {
  it("sends host and port, or a socket, and empty optional fields as null", () => {
    const form = { ...emptyForm(), name: " replica ", user: "restore", password: "pw" };
    expect(createBody(form)).toEqual({
      name: "replica",
      host: "127.0.0.1",
      port: 3306,
      socket: null,
      user: "restore",
      password: "pw",
      default_database: null,
      notes: null,
    });
    expect(createBody({ ...form, connectVia: "socket", socket: " /run/mysqld/mysqld.sock ", password: "" })).toMatchObject({
      socket: "/run/mysqld/mysqld.sock",
      password: null,
    });
  });
});

describe("updateBody", () => {
  it.each<[string, Partial<ServerForm>, object]>([
    ["nothing changed: nothing sent, the password kept", {}, {}],
    ["an empty password field keeps the stored one", { port: "3308" }, { port: 3308 }],
    ["a typed password replaces it", { password: "new one" }, { password: "new one" }],
    ["removing it sends null", { removePassword: true }, { password: null }],
    ["a typed password wins over removing", { removePassword: true, password: "x" }, { password: "x" }],
    ["a socket instead of host and port", { connectVia: "socket", socket: "/tmp/my.sock" }, { socket: "/tmp/my.sock" }],
    ["cleared fields go as null", { defaultDatabase: " " }, { default_database: null }],
    ["a rename and notes", { name: "replica-b", notes: "the new one" }, { name: "replica-b", notes: "the new one" }],
    ["a port that is not a number goes as typed", { port: "33o7" }, { port: "33o7" }],
  ])("%s", (_what, changes, body) => {
    expect(updateBody(edited(changes), SAVED)).toEqual(body);
  });

  it("does not remove a password the server does not have", () => {
    expect(updateBody(edited({ removePassword: true }), { ...SAVED, has_password: false })).toEqual({});
  });

  it("back to host and port clears the socket", () => {
    const onSocket = { ...SAVED, socket: "/tmp/my.sock" };
    expect(updateBody({ ...formOf(onSocket), connectVia: "tcp" }, onSocket)).toEqual({ socket: null });
  });
});

describe("portValue", () => {
  it.each([
    ["3306", 3306],
    [" 3307 ", 3307],
    ["", ""],
    ["port", "port"],
  ])("%j is %j", (text, value) => {
    expect(portValue(text)).toBe(value);
  });
});

describe("how a server and its check read", () => {
  it("names where it listens", () => {
    expect(whereText(SAVED)).toBe("db2:3307");
    expect(whereText({ ...SAVED, socket: "/run/mysqld/mysqld.sock" })).toBe("/run/mysqld/mysqld.sock");
  });

  it("sums a check up", () => {
    const ok = {
      ok: true,
      checked_at: "2026-11-25T09:00:00Z",
      message: "connected",
      server_version: "10.11.19-MariaDB-0+deb12u1",
      server_flavour: "mariadb" as const,
      on_worker_host: true,
    };
    expect(checkSummary(ok)).toBe("MariaDB 10.11.19-MariaDB-0+deb12u1");
    expect(workerHostText(ok)).toBe("on the worker's host");
    expect(workerHostText({ ...ok, on_worker_host: false })).toBe("not on a worker's host");
    expect(workerHostText({ ...ok, on_worker_host: null })).toBe("worker's host unknown");
    const failed = { ok: false, checked_at: "2026-11-25T09:00:00Z", message: "refused", problem: "tls_required" as const };
    expect(checkSummary(failed)).toBe("TLS required");
    expect(workerHostText(failed)).toBeNull();
  });
});

describe("deleteQuestion", () => {
  it("says what goes and what the jobs keep", () => {
    expect(deleteQuestion(SAVED)).toBe(
      "Delete the saved server replica (db2:3307)?\nNo job has used it.\nIts stored password is erased. New jobs can no longer choose it.",
    );
    const used = deleteQuestion({ ...SAVED, job_count: 4, active_job_ids: [12, 14] });
    expect(used).toContain("Queued or running jobs use it (#12, #14): it cannot be deleted until they end or are cancelled.");
    expect(used).toContain("4 jobs used it: they keep their logs, results and its name, but cannot be retried.");
  });
});
