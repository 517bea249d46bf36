import postgres from "postgres";
import { Code, ConnectError } from "@connectrpc/connect";
import { abortError, untilAborted } from "../abort.ts";

export type Sql = postgres.Sql;

/** A database URL fit for logs: the password masked. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable database URL)";
  }
}

export interface DatabaseOptions {
  url: string;
  /** Connections in all, shared between the two pools below (at least one each). */
  poolSize: number;
  statementTimeoutMs: number;
}

/**
 * The service's connections, in two pools that differ only in how PostgreSQL plans their statements.
 *
 * `sql` sends named prepared statements: parsed once per connection, and after five executions PostgreSQL may
 * settle on one generic plan for all values. That is right for lookups by key, whose best plan is the same for
 * every value. `sqlCustomPlan` sends unnamed statements, planned for each call's own values: for selections whose
 * best plan depends on them. Traces of an account are the case in point: for an account in a fifth of all traces
 * the best plan walks the traces index in page order and stops after the page (3 ms at limit 100 on 2M
 * transactions), for an account with five transactions it starts from that account's rows; the generic plan,
 * costed for an average account, read a hot account's whole history (0.6 s).
 */
export interface Database {
  sql: Sql;
  sqlCustomPlan: Sql;
  end(): Promise<void>;
}

/**
 * Opens the pools the service reads through. Sessions are read-only so that no code path can change the
 * indexer's data, and PostgreSQL itself stops a runaway statement even if the service forgets to.
 */
export function openDatabase(options: DatabaseOptions): Database {
  const customPlanConnections = Math.max(1, Math.ceil(options.poolSize / 5));
  const open = (max: number, prepare: boolean) =>
    postgres(options.url, {
      max,
      prepare,
      connect_timeout: 5,
      idle_timeout: 60,
      max_lifetime: 30 * 60,
      onnotice: () => {},
      connection: {
        application_name: "tonquery",
        default_transaction_read_only: true,
        statement_timeout: options.statementTimeoutMs,
      },
    });
  const sql = open(Math.max(1, options.poolSize - customPlanConnections), true);
  const sqlCustomPlan = open(customPlanConnections, false);
  return {
    sql,
    sqlCustomPlan,
    end: async () => {
      await Promise.all([sql.end({ timeout: 5 }), sqlCustomPlan.end({ timeout: 5 })]);
    },
  };
}

const connectionErrorCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  // PostgreSQL: shutting down, cannot connect now, too many connections.
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

function errorCode(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Translates a failure of the database into the error the caller should see: an outage is retryable
 * (Unavailable, 503), a statement past its timeout is DeadlineExceeded (504), anything else is an
 * internal error whose details stay in the log, never in the response.
 */
export function databaseError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const code = errorCode(err);
  if (code === "57014") {
    return new ConnectError("timeout: the query took longer than the statement timeout", Code.DeadlineExceeded, undefined, undefined, err);
  }
  if ((code !== undefined && (connectionErrorCodes.has(code) || code.startsWith("08"))) || err instanceof AggregateError) {
    return new ConnectError("database unavailable", Code.Unavailable, undefined, undefined, err);
  }
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/**
 * Runs one statement for a request and maps its failures through {@link databaseError}. When the request is
 * aborted (client gone, deadline passed, shutdown) it fails at once; the statement itself is left to finish or
 * to hit the statement timeout rather than being cancelled, because cancelling a statement mid-result corrupts
 * the connection in postgres.js 3.4 (porsager/postgres#1181, #1119: the next query on it gets a broken result).
 */
export function runQuery<T extends readonly postgres.MaybeRow[]>(signal: AbortSignal, query: postgres.PendingQuery<T>): Promise<postgres.RowList<T>> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  const result = Promise.resolve(query).catch((err: unknown) => {
    throw databaseError(err);
  });
  return untilAborted(signal, result);
}
