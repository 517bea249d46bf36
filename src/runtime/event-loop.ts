import { setImmediate as nextTurn } from "node:timers/promises";

// The service runs on one thread: a heavy page turned into objects and JSON in one go held the event loop for
// 100-200 ms, and every cheap request that arrived meanwhile (masterchainInfo, a one-trace lookup) waited that long.
// Work over many items is therefore done a few milliseconds at a time, handing the loop back between two turns.

/**
 * How long one turn of work over items runs before the loop is handed back. By time, not by a count of items: a
 * trace holds one transaction or hundreds, and a turn per trace (100 per page) cost 4-6 % of a page's CPU in the
 * turns themselves. A turn still ends after the item that crosses the bound, so it lasts at most this plus one item.
 */
export const turnMs = 2;

export interface Turns {
  /** The clock turns are measured with (tests give their own). */
  now?: () => number;
  turnMs?: number;
}

/**
 * Calls `work` on each of `items` in order, letting other requests run whenever a turn has lasted `turnMs`. An item
 * whose work answers with a promise is waited for before the next one (a sink's backpressure).
 */
export async function forEachInTurns<T>(items: readonly T[], work: (item: T) => void | Promise<void>, turns: Turns = {}): Promise<void> {
  const now = turns.now ?? performance.now.bind(performance);
  const budget = turns.turnMs ?? turnMs;
  let started = now();
  for (let i = 0; i < items.length; i++) {
    if (i > 0 && now() - started >= budget) {
      await nextTurn();
      started = now();
    }
    const pending = work(items[i] as T);
    if (pending !== undefined) await pending;
  }
}

/** `items.map(map)`, a turn at a time (see forEachInTurns). */
export async function mapInTurns<T, R>(items: readonly T[], map: (item: T) => R, turns?: Turns): Promise<R[]> {
  const out: R[] = [];
  await forEachInTurns(items, (item) => void out.push(map(item)), turns);
  return out;
}
