import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { openRoute } from "../src/db/replicas.ts";
import { SharedRead } from "../src/db/shared-read.ts";

/** A read whose every run is held until the test ends it: what each run saw and how to end it. */
function controlledRead() {
  const runs: { signal: AbortSignal; resolve: (value: number) => void; reject: (error: unknown) => void }[] = [];
  const shared = new SharedRead<number>(
    (signal) =>
      new Promise<number>((resolve, reject) => {
        runs.push({ signal, resolve, reject });
      }),
  );
  return { shared, runs };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

const signal = () => new AbortController().signal;

/** The promise's value, or "pending" if it has not settled by the end of the event loop's turn. */
async function outcome<T>(promise: Promise<T>): Promise<T | "pending"> {
  return Promise.race([promise, settled().then(() => "pending" as const)]);
}

describe("SharedRead", () => {
  it("serves the requests that arrive during a read with the next read, never with the one under way", async () => {
    const { shared, runs } = controlledRead();
    const first = shared.read(signal());
    await settled();
    expect(runs).toHaveLength(1);
    const later = [1, 2, 3].map(() => shared.read(signal()));
    await settled();
    expect(runs).toHaveLength(1);

    runs[0]!.resolve(10);
    expect(await first).toBe(10);
    await settled();
    // One read for the three that arrived while the first was under way, started after it ended.
    expect(runs).toHaveLength(2);
    runs[1]!.resolve(11);
    expect(await Promise.all(later)).toEqual([11, 11, 11]);
    await settled();
    expect(runs).toHaveLength(2);

    // Nothing under way: the next request starts a read of its own, at the end of the event loop's turn.
    const alone = shared.read(signal());
    expect(runs).toHaveLength(2);
    await settled();
    expect(runs).toHaveLength(3);
    runs[2]!.resolve(12);
    expect(await alone).toBe(12);
  });

  it("serves the requests of one turn with one read, and those that come before the next read starts with it", async () => {
    const { shared, runs } = controlledRead();
    const burst = [1, 2, 3].map(() => shared.read(signal()));
    await settled();
    expect(runs).toHaveLength(1);
    const during = shared.read(signal());
    runs[0]!.resolve(1);
    expect(await outcome(Promise.all(burst))).toEqual([1, 1, 1]);
    // The read after it is to start at the end of this turn: a request that comes now joins it.
    const after = shared.read(signal());
    await settled();
    expect(runs).toHaveLength(2);
    expect(runs[1]!.signal.aborted).toBe(false);
    runs[1]!.resolve(2);
    expect(await outcome(Promise.all([during, after]))).toEqual([2, 2]);
    await settled();
    expect(runs).toHaveLength(2);
  });

  it("keeps reads of different freshness bounds apart, each routed with its bound", async () => {
    const { shared, runs } = controlledRead();
    const plain = signal();
    const fresh = signal();
    openRoute(plain, undefined);
    openRoute(fresh, 500);
    const a = shared.read(plain);
    const b = shared.read(fresh);
    await settled();
    expect(runs).toHaveLength(2);
    runs[0]!.resolve(1);
    runs[1]!.resolve(2);
    expect([await a, await b]).toEqual([1, 2]);
  });

  it("lets a request leave without failing the others, and cancels a read nobody waits for", async () => {
    const { shared, runs } = controlledRead();
    const leaving = new AbortController();
    const staying = shared.read(signal());
    await settled();
    const left = shared.read(leaving.signal);
    // `left` waits for the next read, which has not started: leaving it there runs no read for nobody.
    leaving.abort(new ConnectError("client gone", Code.Canceled));
    await expect(left).rejects.toMatchObject({ code: Code.Canceled });
    runs[0]!.resolve(7);
    expect(await staying).toBe(7);
    await settled();
    expect(runs).toHaveLength(1);

    // Two requests served by the same read (they arrived during the one before): one leaves, the other stays.
    const opening = shared.read(signal());
    await settled();
    const also = new AbortController();
    const stays = shared.read(signal());
    const next = shared.read(also.signal);
    runs[1]!.resolve(8);
    expect(await opening).toBe(8);
    await settled();
    expect(runs).toHaveLength(3);
    also.abort(new ConnectError("deadline", Code.DeadlineExceeded));
    await expect(next).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    expect(runs[2]!.signal.aborted).toBe(false);
    runs[2]!.resolve(9);
    expect(await stays).toBe(9);
    await settled();

    // A request that leaves in the turn it came, before its read started: no read is run.
    const early = new AbortController();
    const gave = shared.read(early.signal);
    early.abort(new ConnectError("client gone", Code.Canceled));
    await expect(gave).rejects.toMatchObject({ code: Code.Canceled });
    await settled();
    expect(runs).toHaveLength(3);

    const only = new AbortController();
    const gone = shared.read(only.signal);
    await settled();
    expect(runs).toHaveLength(4);
    only.abort(new ConnectError("client gone", Code.Canceled));
    await expect(gone).rejects.toMatchObject({ code: Code.Canceled });
    // Its read served nobody else: it is cancelled.
    expect(runs[3]!.signal.aborted).toBe(true);
  });

  it("fails every request of a failed read, and the next read starts afresh", async () => {
    const { shared, runs } = controlledRead();
    const failing = shared.read(signal());
    await settled();
    const next = shared.read(signal());
    runs[0]!.reject(new ConnectError("database unavailable", Code.Unavailable));
    await expect(failing).rejects.toMatchObject({ code: Code.Unavailable });
    await settled();
    runs[1]!.resolve(3);
    expect(await next).toBe(3);
  });

  it("answers an already aborted request with its own error, starting no read", async () => {
    const { shared, runs } = controlledRead();
    const aborted = AbortSignal.abort(new ConnectError("deadline", Code.DeadlineExceeded));
    await expect(shared.read(aborted)).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    await settled();
    expect(runs).toHaveLength(0);
  });
});
