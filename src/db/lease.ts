import type postgres from "postgres";
import { Code, ConnectError } from "@connectrpc/connect";
import { abortError, untilAborted } from "../runtime/abort.ts";
import type { Pool } from "./member.ts";

/**
 * How long a lease may wait for what the network owes it. A connection opened while the database's host was
 * black-holed may come alive only when the host is back, and a socket whose peer vanished never fails by itself: a
 * request that waited on either would hold its connection permit and admission slots until restart, and the
 * permits of the pool with it. With these bounds, no lease outlives its request by more than `answerMs`.
 */
export interface LeaseBounds {
  /** Getting a connection from the pool, opening it included. */
  connectMs: number;
  /** The answer to what was sent: the statement timeout, which PostgreSQL enforces, plus the network's share. */
  answerMs: number;
}

/**
 * A connection of `pool` for the holder of one of its permits (see ConnectionGate), within `bounds.connectMs`.
 * Given up when `stop` fires first or the bound passes (Unavailable); a connection that arrives after that goes
 * straight back to the pool, never to work for a request that has gone.
 */
export async function leaseConnection(pool: Pool, stop: AbortSignal): Promise<postgres.ReservedSql> {
  const reserving = pool.live.reserve();
  const bound = new AbortController();
  const timer = setTimeout(
    () => bound.abort(new ConnectError(`database unavailable: no connection within ${pool.bounds.connectMs} ms`, Code.Unavailable)),
    pool.bounds.connectMs,
  );
  try {
    // Two waits rather than AbortSignal.any: `stop` follows a long-lived signal (its member's down signal), to which
    // every composite made from it would add a weak reference to be tracked and finalized.
    const connection = await untilAborted(stop, untilAborted(bound.signal, reserving));
    if (stop.aborted) {
      connection.release();
      throw abortError(stop);
    }
    return connection;
  } catch (err) {
    reserving.then(
      (late) => late.release(),
      () => {},
    );
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Cuts `connection` should `answered` not settle within `ms`: a live server answers within its statement timeout, so
 * silence past the bound means a connection that will never answer, and what waits on it fails at once instead.
 */
export function cutIfSilent(connection: postgres.ReservedSql, answered: Promise<unknown>, ms: number): void {
  const timer = setTimeout(() => connection.destroy(), ms);
  const settled = () => clearTimeout(timer);
  answered.then(settled, settled);
}
