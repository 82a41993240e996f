/**
 * The window API's columnar layout ({field: [values]} per lane list) back into rows. The server builds and
 * sends columns several times cheaper than one object per bucket; the drawing code reads rows.
 */

export type Columns = Record<string, readonly unknown[]>;

function isColumns(value: unknown): value is Columns {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every(Array.isArray);
}

/** Rows from columns; a list that already is rows is returned as it is. Columns of unequal length are an error. */
export function rowsFromColumns<T>(value: unknown): T[] {
  if (Array.isArray(value)) return value as T[];
  if (!isColumns(value)) throw new Error("expected a list of rows or an object of columns");
  const names = Object.keys(value);
  const first = names[0];
  if (first === undefined) return [];
  const length = value[first]?.length ?? 0;
  for (const name of names) {
    if (value[name]?.length !== length) throw new Error(`column ${name} has ${String(value[name]?.length)} values, ${first} has ${String(length)}`);
  }
  const rows: T[] = [];
  for (let i = 0; i < length; i += 1) {
    const row: Record<string, unknown> = {};
    for (const name of names) row[name] = value[name]?.[i];
    rows.push(row as T);
  }
  return rows;
}
