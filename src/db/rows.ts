// Scanning helpers shared by every resource's data access: the index's NULLs become absent optional fields.

export function optional<T>(value: T | null | undefined): T | undefined {
  return value ?? undefined;
}

/**
 * One column's values, row by row. A loop rather than `rows.map((row) => row.key)`, whose closure, made per call, V8
 * optimised again for each new one under load.
 */
export function columnValues<R, K extends keyof R>(rows: readonly R[], key: K): R[K][] {
  const values: R[K][] = [];
  for (const row of rows) values.push(row[key]);
  return values;
}
