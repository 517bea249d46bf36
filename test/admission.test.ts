import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Admission } from "../src/admission.ts";

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
      admission.run(never, async () => {
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
    const first = admission.run(never, () => gate.promise.then(() => Promise.reject(new Error("boom"))));
    const waiting = new AbortController();
    const second = admission.run(waiting.signal, async () => "ran");
    waiting.abort(new ConnectError("deadline", Code.DeadlineExceeded));
    await expect(second).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    gate.resolve();
    await expect(first).rejects.toThrow("boom");
    expect(await admission.run(never, async () => "third")).toBe("third");
  });
});
