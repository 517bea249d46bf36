import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { forEachInTurns, mapInTurns } from "../src/runtime/event-loop.ts";

// Work over a page's items hands the event loop back by time, not per item: with a clock the test drives, a turn
// ends once it has lasted the budget (after the item that crossed it), and not before.

/** A clock that advances only when the work says so. */
function fakeClock() {
  let at = 0;
  return { now: () => at, advance: (ms: number) => void (at += ms) };
}

/** Counts the turns the loop was handed back in while `run` ran. */
async function turnsDuring(run: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let running = true;
  const count = async () => {
    while (running) {
      await nextTurn();
      turns++;
    }
  };
  const counting = count();
  await run();
  running = false;
  await counting;
  return turns;
}

describe("work in turns", () => {
  it("hands the loop back once a turn has lasted its budget, after the item that crossed it", async () => {
    const clock = fakeClock();
    const seen: string[] = [];
    const turns = await turnsDuring(() =>
      forEachInTurns(
        [1, 1, 1, 1, 1, 1],
        (ms) => {
          seen.push(`item@${clock.now()}`);
          clock.advance(ms);
        },
        { now: clock.now, turnMs: 2 },
      ),
    );
    expect(seen).toEqual(["item@0", "item@1", "item@2", "item@3", "item@4", "item@5"]);
    // Two items per turn: three turns, so the loop was handed back twice between them.
    expect(turns).toBeGreaterThanOrEqual(2);
    expect(turns).toBeLessThanOrEqual(3);
  });

  it("does not hand the loop back for items that take no time", async () => {
    const clock = fakeClock();
    const turns = await turnsDuring(() => forEachInTurns(Array.from({ length: 100 }, (_, i) => i), () => {}, { now: clock.now, turnMs: 2 }));
    // The counter's own first turn may land as the loop ends; a hundred items never gave it one each.
    expect(turns).toBeLessThanOrEqual(1);
  });

  it("waits for an item whose work answers with a promise before the next, and maps in order", async () => {
    const order: string[] = [];
    await forEachInTurns([1, 2], async (n) => {
      await nextTurn();
      order.push(`done ${n}`);
    });
    expect(order).toEqual(["done 1", "done 2"]);
    expect(await mapInTurns([1, 2, 3], (n) => n * 2)).toEqual([2, 4, 6]);
  });
});
