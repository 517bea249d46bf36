import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Admission, transactionsWeight } from "../src/admission.ts";

const never = new AbortController().signal;

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("Admission", () => {
  it("runs at most `slots` requests at once, the others in arrival order", async () => {
    const admission = new Admission(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const gates = Array.from({ length: 5 }, deferred);
    const runs = gates.map((gate, i) =>
      admission.run(never, 1, async () => {
        started.push(i);
        most = Math.max(most, ++running);
        await gate.promise;
        running--;
        return i;
      }),
    );
    await new Promise((r) => setTimeout(r, 10));
    expect(started).toEqual([0, 1]);
    for (const gate of gates) gate.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
  });

  it("ends a wait when the request's signal fires, and frees the slot of a failed request", async () => {
    const admission = new Admission(1);
    const gate = deferred();
    const first = admission.run(never, 1, () => gate.promise.then(() => Promise.reject(new Error("boom"))));
    const waiting = new AbortController();
    const second = admission.run(waiting.signal, 1, async () => "ran");
    waiting.abort(new ConnectError("deadline", Code.DeadlineExceeded));
    await expect(second).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    gate.resolve();
    await expect(first).rejects.toThrow("boom");
    expect(await admission.run(never, 1, async () => "third")).toBe("third");
  });

  it("weighs requests by their pages: a heavy one waits for all slots and is not overtaken by light ones", async () => {
    const admission = new Admission(4);
    const order: string[] = [];
    const gates = new Map(["light1", "heavy", "light2"].map((name) => [name, deferred()]));
    const run = (name: string, weight: number) =>
      admission.run(never, weight, async () => {
        order.push(`start ${name}`);
        await gates.get(name)?.promise;
        order.push(`end ${name}`);
      });
    const runs = [run("light1", 1), run("heavy", transactionsWeight(40_000)), run("light2", 1)];
    await new Promise((r) => setTimeout(r, 10));
    // The heavy request (clamped to all 4 slots) waits for light1; light2 waits behind it although a slot is free.
    expect(order).toEqual(["start light1"]);
    gates.get("light1")?.resolve();
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual(["start light1", "end light1", "start heavy"]);
    gates.get("heavy")?.resolve();
    gates.get("light2")?.resolve();
    await Promise.all(runs);
    expect(order).toEqual(["start light1", "end light1", "start heavy", "end heavy", "start light2", "end light2"]);
  });

  it("lets the waiters behind a cancelled heavy request in", async () => {
    const admission = new Admission(2);
    const gate = deferred();
    const first = admission.run(never, 1, () => gate.promise);
    const heavy = new AbortController();
    const blocked = admission.run(heavy.signal, 2, async () => "heavy");
    const light = admission.run(never, 1, async () => "light");
    heavy.abort();
    await expect(blocked).rejects.toMatchObject({ code: Code.Canceled });
    expect(await light).toBe("light");
    gate.resolve();
    await first;
  });

  it("answers at the signal but keeps the slot until the work has ended", async () => {
    const admission = new Admission(1);
    const gate = deferred();
    const caller = new AbortController();
    let finished = false;
    const slow = admission.run(caller.signal, 1, async () => {
      await gate.promise;
      finished = true;
    });
    caller.abort(new ConnectError("deadline", Code.DeadlineExceeded));
    await expect(slow).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    const next = admission.run(never, 1, async () => finished);
    await new Promise((r) => setTimeout(r, 10));
    gate.resolve();
    expect(await next).toBe(true);
  });

  it("resizes a request to its real weight: shrinking lets others in, growing queues again holding nothing", async () => {
    const admission = new Admission(4);
    const order: string[] = [];
    const shrunk = deferred();
    const finishBig = deferred();
    const big = admission.run(never, 4, async (slots) => {
      order.push("big starts with 4");
      await slots.resize(1);
      shrunk.resolve();
      await finishBig.promise;
    });
    await shrunk.promise;
    // Three slots came free: a request of three runs beside the shrunk one.
    await admission.run(never, 3, async () => {
      order.push("three ran beside it");
    });
    finishBig.resolve();
    await big;

    const holdTwo = deferred();
    const twoRunning = deferred();
    const two = admission.run(never, 2, async () => {
      twoRunning.resolve();
      await holdTwo.promise;
    });
    await twoRunning.promise;
    const grower = admission.run(never, 1, async (slots) => {
      await slots.resize(4);
      order.push("grown to 4");
    });
    await new Promise((r) => setTimeout(r, 10));
    const light = admission.run(never, 1, async () => {
      order.push("light ran");
    });
    await new Promise((r) => setTimeout(r, 10));
    // The grower gave its slot back and waits for all four behind nobody; the light one, queued behind it, waits too.
    expect(order).toEqual(["big starts with 4", "three ran beside it"]);
    holdTwo.resolve();
    await Promise.all([two, grower, light]);
    expect(order).toEqual(["big starts with 4", "three ran beside it", "grown to 4", "light ran"]);
  });
});
