import type postgres from "postgres";
import { cutIfSilent } from "./lease.ts";
import type { Pool } from "./member.ts";
import { transactionFrame } from "./statement.ts";

/** Commits the transaction on `connection`, then `free`s it; whatever it still runs has its statement timeout. */
export function endTransaction(pool: Pool, connection: postgres.ReservedSql, free: () => void): void {
  const committed = connection.unsafe(transactionFrame.commit).execute();
  committed.then(free, free);
  // Past the statement timeout, the connection is gone.
  cutIfSilent(connection, committed, pool.bounds.answerMs);
}

/**
 * Anchors of requests that have ended, their read-only transaction still open, by pool: the next request's anchor
 * takes one and sends its `commit` in the same write as its own `begin` and first statement. A `commit` of its own
 * was a round trip more per request: a write to PostgreSQL's socket cost the server 50-160 µs of CPU here (the
 * kernel's share included), and PostgreSQL a wake-up. Alternated on the 2M bench index: adjacentTransactions 303 →
 * 316 req/s at concurrency 1 and 553 → 581 at 16 (PostgreSQL 1.51 → 1.39 and 1.51 → 1.46 ms of CPU per request), a
 * tiny account's 10-trace page 111 → 120 and 181 → 184. An anchor nobody takes within {@link parkedAnchorMs} is
 * committed and given back to the pool: the snapshot it holds stays that short, and a statement that waits for a
 * connection while all others are busy waits that long at most. Its permit was given back at once, so the gate
 * still decides who goes next.
 */
const parkedAnchors = new WeakMap<Pool, ParkedAnchor[]>();
const parkedAnchorMs = 2;

interface ParkedAnchor {
  connection: postgres.ReservedSql;
  timer: NodeJS.Timeout;
}

export function parkAnchor(pool: Pool, connection: postgres.ReservedSql): void {
  let parked = parkedAnchors.get(pool);
  if (parked === undefined) parkedAnchors.set(pool, (parked = []));
  const list = parked;
  const entry: ParkedAnchor = {
    connection,
    timer: setTimeout(() => {
      list.splice(list.indexOf(entry), 1);
      endTransaction(pool, connection, () => connection.release());
    }, parkedAnchorMs),
  };
  list.push(entry);
}

export function takeParkedAnchor(pool: Pool): postgres.ReservedSql | undefined {
  const entry = parkedAnchors.get(pool)?.pop();
  if (entry === undefined) return undefined;
  clearTimeout(entry.timer);
  return entry.connection;
}

/**
 * Gives every parked anchor of `pool` back now, its transaction left open: the pool is closing, which ends the
 * connection and, with it, a read-only transaction that has nothing to commit. A commit still on its way would make
 * the pool's end wait for its full timeout (postgres.js does not notice a reserved connection given back meanwhile).
 */
export function endParkedAnchors(pool: Pool): void {
  for (const entry of parkedAnchors.get(pool)?.splice(0) ?? []) {
    clearTimeout(entry.timer);
    entry.connection.release();
  }
}
