import postgres from "postgres";
import { Code, ConnectError } from "@connectrpc/connect";

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
  poolSize: number;
  statementTimeoutMs: number;
}

/**
 * Opens the pool the service reads through. Sessions are read-only so that no code path can change the
 * indexer's data, and PostgreSQL itself stops a runaway statement even if the service forgets to.
 */
export function openDatabase(options: DatabaseOptions): Sql {
  return postgres(options.url, {
    max: options.poolSize,
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
export async function runQuery<T extends readonly postgres.MaybeRow[]>(signal: AbortSignal, query: postgres.PendingQuery<T>): Promise<postgres.RowList<T>> {
  if (signal.aborted) throw abortError(signal);
  const result = Promise.resolve(query).catch((err: unknown) => {
    throw databaseError(err);
  });
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  // Whichever loses the race may settle later with nobody waiting for it.
  result.catch(() => {});
  aborted.catch(() => {});
  try {
    return await Promise.race([result, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

/** The error a request ends with when its signal fires: its deadline, its client gone, shutdown. */
export function abortError(signal: AbortSignal): ConnectError {
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError) return reason;
  return new ConnectError("request aborted", Code.Canceled, undefined, undefined, reason);
}
