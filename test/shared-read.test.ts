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

describe("SharedRead", () => {
  it("serves the requests that arrive during a read with the next read, never with the one under way", async () => {
    const { shared, runs } = controlledRead();
    const first = shared.read(new AbortController().signal);
    expect(runs).toHaveLength(1);
    const later = [1, 2, 3].map(() => shared.read(new AbortController().signal));
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

    // Nothing under way: the next request starts a read of its own at once.
    const alone = shared.read(new AbortController().signal);
    expect(runs).toHaveLength(3);
    runs[2]!.resolve(12);
    expect(await alone).toBe(12);
  });

  it("keeps reads of different freshness bounds apart, each routed with its bound", async () => {
    const { shared, runs } = controlledRead();
    const plain = new AbortController().signal;
    const fresh = new AbortController().signal;
    openRoute(plain, undefined);
    openRoute(fresh, 500);
    const a = shared.read(plain);
    const b = shared.read(fresh);
    expect(runs).toHaveLength(2);
    runs[0]!.resolve(1);
    runs[1]!.resolve(2);
    expect([await a, await b]).toEqual([1, 2]);
  });

  it("lets a request leave without failing the others, and cancels a read nobody waits for", async () => {
    const { shared, runs } = controlledRead();
    const leaving = new AbortController();
    const staying = shared.read(new AbortController().signal);
    const left = shared.read(leaving.signal);
    // `left` waits for the next read, which has not started: leaving it there runs no read for nobody.
    leaving.abort(new ConnectError("client gone", Code.Canceled));
    await expect(left).rejects.toMatchObject({ code: Code.Canceled });
    runs[0]!.resolve(7);
    expect(await staying).toBe(7);
    await settled();
    expect(runs).toHaveLength(1);

    // Two requests served by the same read (they arrived during the one before): one leaves, the other stays.
    const opening = shared.read(new AbortController().signal);
    const also = new AbortController();
    const stays = shared.read(new AbortController().signal);
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

    const only = new AbortController();
    const gone = shared.read(only.signal);
    only.abort(new ConnectError("client gone", Code.Canceled));
    await expect(gone).rejects.toMatchObject({ code: Code.Canceled });
    // Its read served nobody else: it is cancelled.
    expect(runs[3]!.signal.aborted).toBe(true);
  });

  it("fails every request of a failed read, and the next read starts afresh", async () => {
    const { shared, runs } = controlledRead();
    const failing = [shared.read(new AbortController().signal)];
    const next = shared.read(new AbortController().signal);
    runs[0]!.reject(new ConnectError("database unavailable", Code.Unavailable));
    await expect(failing[0]).rejects.toMatchObject({ code: Code.Unavailable });
    await settled();
    runs[1]!.resolve(3);
    expect(await next).toBe(3);
  });

  it("answers an already aborted request with its own error, starting no read", async () => {
    const { shared, runs } = controlledRead();
    const signal = AbortSignal.abort(new ConnectError("deadline", Code.DeadlineExceeded));
    await expect(shared.read(signal)).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    expect(runs).toHaveLength(0);
  });
});
