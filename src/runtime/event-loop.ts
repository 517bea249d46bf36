import { setImmediate as nextTurn } from "node:timers/promises";

// The service runs on one thread: a heavy page turned into objects and JSON in one go held the event loop for
// 100-200 ms, and every cheap request that arrived meanwhile (masterchainInfo, a one-trace lookup) waited that long.
// Work over many items is therefore done a slice at a time, handing the loop back between slices.

/**
 * Calls `work` on consecutive slices of `items`, letting other requests run between two slices. A slice whose work
 * answers with a promise is waited for before the next one (a sink's backpressure).
 */
export async function forEachSlice<T>(items: readonly T[], sliceSize: number, work: (slice: readonly T[]) => void | Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += sliceSize) {
    if (start > 0) await nextTurn();
    const pending = work(items.slice(start, start + sliceSize));
    if (pending !== undefined) await pending;
  }
}

/** `items.map(map)`, a slice at a time (see forEachSlice). */
export async function mapInSlices<T, R>(items: readonly T[], sliceSize: number, map: (item: T) => R): Promise<R[]> {
  const out: R[] = [];
  await forEachSlice(items, sliceSize, (slice) => {
    for (const item of slice) out.push(map(item));
  });
  return out;
}
