import postgres from "postgres";
import { Code, ConnectError } from "@connectrpc/connect";

export type Sql = postgres.Sql;

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
 * Runs one statement for a request: cancels it on the server when the request is aborted (client gone,
 * deadline passed, shutdown) and maps failures through {@link databaseError}.
 */
export async function runQuery<T extends readonly postgres.MaybeRow[]>(signal: AbortSignal, query: postgres.PendingQuery<T>): Promise<postgres.RowList<T>> {
  if (signal.aborted) throw abortError(signal);
  const cancel = () => {
    void query.cancel();
  };
  signal.addEventListener("abort", cancel, { once: true });
  try {
    return await query;
  } catch (err) {
    if (signal.aborted) throw abortError(signal);
    throw databaseError(err);
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}

/** The error a request ends with when its signal fires: its deadline, its client gone, shutdown. */
export function abortError(signal: AbortSignal): ConnectError {
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError) return reason;
  return new ConnectError("request aborted", Code.Canceled, undefined, undefined, reason);
}
