import type postgres from "postgres";
import type { StatementTelemetry } from "../observability/telemetry.ts";
import type { Pool } from "./member.ts";

export type Sql = postgres.Sql;

/** How data access builds a statement: on whichever connection it is given (see runQuery). */
export type BuildStatement<T extends readonly postgres.MaybeRow[]> = (sql: Sql) => postgres.PendingQuery<T>;

/** What a statement needs to be sent and measured, wherever it runs. */
export interface StatementRun<T extends readonly postgres.MaybeRow[]> {
  name: string;
  build: BuildStatement<T>;
  /** The pool the statement was written for: its planning (prepared or not) and the bench's observer. */
  pool: Pool;
  telemetry: StatementTelemetry | undefined;
}

/** The lines that open and close the service's transactions (the bench's capture leaves them out of the floor). */
export const transactionFrame = {
  begin: "begin read only",
  beginSnapshot: "begin isolation level repeatable read read only",
  exportSnapshot: "select pg_export_snapshot() as id",
  commit: "commit",
} as const;

/** `set transaction snapshot` takes no parameter: the id is checked to be what PostgreSQL exports before it is quoted. */
export function importSnapshot(id: string): string {
  if (!/^[0-9A-F]+-[0-9A-F]+(-[0-9]+)?$/i.test(id)) throw new Error(`not a snapshot id: ${JSON.stringify(id)}`);
  return `set transaction snapshot '${id}'`;
}

/**
 * Sends the statement on `connection` between `before` and `after` (the lines of its transaction's frame), all queued in
 * the same tick so that they go out in one write, and settles with the statement's rows; the frame's failures count
 * after the statement's own. The connection itself is the caller's to release.
 */
export async function sendFramed<T extends readonly postgres.MaybeRow[]>(
  connection: Sql,
  before: readonly string[],
  run: StatementRun<T>,
  after: readonly string[],
): Promise<postgres.RowList<T>> {
  const built = build(connection, run);
  const ended = run.telemetry?.statementStarted(run.name);
  const opening = before.map((line) => connection.unsafe(line).execute());
  const statement = built.execute();
  const closing = after.map((line) => connection.unsafe(line).execute());
  const [result, ...frame] = await Promise.allSettled([statement, ...opening, ...closing]);
  const frameFailure = frame.find((line) => line.status === "rejected");
  const error = result.status === "rejected" ? result.reason : frameFailure?.reason;
  ended?.(error);
  if (result.status === "rejected") throw result.reason;
  if (frameFailure !== undefined) throw frameFailure.reason;
  return result.value;
}

type RowShaper = (values: readonly unknown[]) => postgres.Row;

/** One shaper per column list: a statement's rows share it, and the service has a fixed set of statements. */
const shapers = new Map<string, RowShaper>();

/**
 * The function that makes a row object from the values of a row of `columns`, which the driver (patched: see
 * DataRow's `rowShaper`) calls for each row as it reads it.
 *
 * postgres.js builds each row object by a keyed store per column (`row[column.name] = value`), a hidden-class
 * transition per column: for a transaction's ninety columns that was half the driver's time on a trace page, and
 * left row objects whose property reads the encoders could not specialise. A row's values handed to an object
 * literal compiled for its columns make one allocation of a fixed shape, shared by every row of the statement.
 * The literal is compiled with `new Function` because only the column names known at run time give its keys;
 * they come from PostgreSQL's row description of the service's own statements, quoted by JSON.stringify.
 */
function shaperFor(columns: readonly postgres.Column<string>[]): RowShaper {
  // Called for every statement planned per call (a new column list each time): a loop, where a closure made per call
  // was optimised again and again under load.
  const names: string[] = [];
  for (const column of columns) names.push(column.name);
  const signature = names.join("\u0000");
  let shaper = shapers.get(signature);
  if (shaper === undefined) {
    const fields = names.map((name, index) => `${JSON.stringify(name)}: values[${index}]`).join(", ");
    shaper = new Function("values", `return { ${fields} };`) as RowShaper;
    shapers.set(signature, shaper);
  }
  return shaper;
}

/**
 * Builds the statement on `connection`, planned as its pool plans: a statement of the custom-plan pool run on a
 * connection of the prepared pool (a request's snapshot) is sent unnamed, so PostgreSQL plans it for its own values.
 */
function build<T extends readonly postgres.MaybeRow[]>(connection: Sql, run: StatementRun<T>): postgres.PendingQuery<T> {
  const built = run.build(connection);
  // postgres.js reads a query's own `prepare` option before its connection's (connection.js, build()).
  if (!run.pool.prepared) (built as unknown as { options: { prepare?: boolean } }).options.prepare = false;
  run.pool.observe?.(built);
  // Read as values, each row named by its statement's shaper as it is read.
  built.values();
  (built as unknown as { rowShaper: typeof shaperFor }).rowShaper = shaperFor;
  return built;
}
