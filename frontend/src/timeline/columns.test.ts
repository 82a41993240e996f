import { describe, expect, it } from "vitest";

import { rowsFromColumns } from "./columns";

describe("rowsFromColumns", () => {
  it.each([
    ["no columns", {}, []],
    ["empty columns", { i: [], busy: [] }, []],
    [
      "two buckets",
      { i: [0, 4], busy: [0.5, 1], kind: ["read", "fsync"] },
      [
        { i: 0, busy: 0.5, kind: "read" },
        { i: 4, busy: 1, kind: "fsync" },
      ],
    ],
    ["rows stay rows", [{ i: 1 }], [{ i: 1 }]],
    ["nulls are kept", { path: [null, "/d/ibdata1"] }, [{ path: null }, { path: "/d/ibdata1" }]],
  ])("%s", (_name, input, expected) => {
    expect(rowsFromColumns(input)).toEqual(expected);
  });

  it.each([
    ["unequal columns", { i: [1, 2], busy: [1] }, "column busy has 1 values, i has 2"],
    ["not columns", { i: 3 }, "expected a list of rows or an object of columns"],
    ["nothing", null, "expected a list of rows or an object of columns"],
  ])("refuses %s", (_name, input, message) => {
    expect(() => rowsFromColumns(input)).toThrow(message);
  });
});
