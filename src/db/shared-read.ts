import { AsyncLocalStorage } from "node:async_hooks";
import { abortError } from "../runtime/abort.ts";
import { prioritise } from "./connection-gate.ts";
import { openRoute, routeOfRequest } from "./replicas.ts";

/**
 * One read shared by the requests that want it at the same time (masterchainInfo: a few hundred bytes that thousands
 * of clients poll), without ever answering a request with data read before it arrived.
 *
 * A request that finds no read of its kind under way joins the one about to start, or starts one, at the end of
 * the event loop's turn (every request parsed in that turn shares it). A request that arrives while one is under
 * way does not join it (that read may have passed its snapshot already: the answer could be older than the
 * request, which a client that has just seen a newer block elsewhere would notice); it joins the next read, which
 * starts at the end of the turn in which the current one ends, with every request that arrived meanwhile. Under
 * load each read then serves all the requests of one read's duration, so the statements run stay one at a time per
 * kind however many clients poll.
 *
 * Reads are of a kind per freshness bound (the request's `minSeqno`, see Cluster): a read runs as its own request,
 * routed to a member that satisfies the bound of the requests it serves. It is urgent for the connection gates,
 * as the light requests it serves are. A request that gives up (its client gone, its deadline) leaves the read,
 * failing no other; a read that no request waits for any longer is cancelled. A read runs in the async context of
 * the first request it serves, so its statements' trace spans belong to a request it answers.
 */
export class SharedRead<T> {
  readonly #read: (signal: AbortSignal) => Promise<T>;
  readonly #lanes = new Map<number | undefined, Lane<T>>();

  /** `read` runs one read under the signal given: its statements must carry it (runQuery does). */
  constructor(read: (signal: AbortSignal) => Promise<T>) {
    this.#read = read;
  }

  /** The outcome of a read started no earlier than this call, for the request whose signal this is. */
  read(signal: AbortSignal): Promise<T> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    const minSeqno = routeOfRequest(signal)?.minSeqno;
    let lane = this.#lanes.get(minSeqno);
    if (lane === undefined) {
      lane = { current: undefined, next: undefined };
      this.#lanes.set(minSeqno, lane);
    }
    // A read not started yet takes every request that comes before it starts.
    const batch = lane.current === undefined ? (lane.current = new Batch<T>()) : lane.current.started ? (lane.next ??= new Batch<T>()) : lane.current;
    const outcome = batch.join(signal);
    if (batch === lane.current && !batch.scheduled) this.#schedule(minSeqno, lane, batch);
    return outcome;
  }

  /**
   * Starts the batch's read once the event loop's turn is over: every request parsed in the turn joins it. Under load
   * the requests of a turn come in a burst after the read before has ended: started at once, a read took only those
   * parsed before its end was read, and the rest waited for the next read.
   */
  #schedule(minSeqno: number | undefined, lane: Lane<T>, batch: Batch<T>): void {
    batch.scheduled = true;
    setImmediate(() => {
      if (batch.waiting > 0) this.#start(minSeqno, lane, batch);
      else {
        // Every request left it before it started: it is not run.
        lane.current = undefined;
        this.#lanes.delete(minSeqno);
      }
    });
  }

  #start(minSeqno: number | undefined, lane: Lane<T>, batch: Batch<T>): void {
    batch.started = true;
    const { signal } = batch.controller;
    openRoute(signal, minSeqno);
    prioritise(signal, () => true);
    const ended = () => {
      const next = lane.next;
      lane.next = undefined;
      lane.current = next;
      // A next read that every request leaves before it starts is not run (see #schedule).
      if (next === undefined) this.#lanes.delete(minSeqno);
      else this.#schedule(minSeqno, lane, next);
    };
    batch.inContext(() => this.#read(signal)).then(
      (value) => {
        batch.settle({ ok: true, value });
        ended();
      },
      (error: unknown) => {
        batch.settle({ ok: false, error });
        ended();
      },
    );
  }
}

interface Lane<T> {
  /** The read under way, if any. */
  current: Batch<T> | undefined;
  /** The requests that arrived while it was under way: they are served by the read after it. */
  next: Batch<T> | undefined;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** One read and the requests it serves. */
class Batch<T> {
  readonly controller = new AbortController();
  /** Runs a function in the async context of the request that opened the batch. */
  readonly inContext = AsyncLocalStorage.snapshot();
  /** Its read is to start at the end of the event loop's turn (see SharedRead's #schedule). */
  scheduled = false;
  started = false;
  readonly #waiters = new Set<(outcome: Outcome<T>) => void>();

  get waiting(): number {
    return this.#waiters.size;
  }

  join(signal: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.#waiters.delete(deliver);
        reject(abortError(signal));
        if (this.started && this.#waiters.size === 0) this.controller.abort(signal.reason);
      };
      const deliver = (outcome: Outcome<T>) => {
        signal.removeEventListener("abort", onAbort);
        if (outcome.ok) resolve(outcome.value);
        else reject(outcome.error);
      };
      this.#waiters.add(deliver);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  settle(outcome: Outcome<T>): void {
    for (const deliver of this.#waiters) deliver(outcome);
    this.#waiters.clear();
  }
}
