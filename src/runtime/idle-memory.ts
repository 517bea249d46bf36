import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { MemoryReleaseRecorder } from "../observability/metrics.ts";

/**
 * Gives the operating system back the memory a burst of work left the process holding, once the service has been
 * idle for a while.
 *
 * V8 keeps the pages of its heap that garbage collection has emptied, for the next allocations, and in Node nothing
 * ever hands them back: its memory reducer, which should after a few idle seconds, judges the allocation rate by
 * the last collections and, with no collection while idle, stays in its "high allocation" state for good (seen with
 * --trace-memory-reducer). After the bench's trace pages a server held 165 MB in V8's 256 KB pages while V8 counted
 * 84 MB of heap. Only a collection made to reduce memory ("last resort", what V8 runs when an allocation fails)
 * releases them; it stops the event loop for some tens of milliseconds, so it runs only when no request has been in
 * flight for `idleMs`, and once per stretch of activity.
 */
export class IdleMemoryRelease {
  readonly #idleMs: number;
  readonly #release: () => void;
  readonly #now: () => number;
  readonly #recorder: MemoryReleaseRecorder | undefined;
  readonly #timer: ReturnType<typeof setInterval> | undefined;
  #inFlight = 0;
  #lastEnded = 0;
  /** Whether a request has ended since the last release: an idle service has nothing more to give back. */
  #workedSinceRelease = false;

  /** `idleMs` 0 turns it off. `release`, `now`: a test's own, and no timer (it calls check()). */
  constructor(options: { idleMs: number; recorder?: MemoryReleaseRecorder; release?: () => void; now?: () => number }) {
    this.#idleMs = options.idleMs;
    this.#recorder = options.recorder;
    this.#release = options.release ?? releaseFreedHeapPages;
    this.#now = options.now ?? (() => performance.now());
    // One timer for the process rather than one per request: masterchainInfo comes thousands of times a second.
    if (options.idleMs > 0 && options.now === undefined) {
      this.#timer = setInterval(() => this.check(), Math.max(100, options.idleMs / 4));
      this.#timer.unref();
    }
  }

  started(): void {
    this.#inFlight++;
  }

  ended(): void {
    this.#inFlight--;
    this.#lastEnded = this.#now();
    this.#workedSinceRelease = true;
  }

  /** Releases the freed memory if the service has been idle long enough since it last worked. */
  check(): void {
    if (this.#idleMs <= 0 || this.#inFlight > 0 || !this.#workedSinceRelease || this.#now() - this.#lastEnded < this.#idleMs) return;
    this.#workedSinceRelease = false;
    const rssBefore = process.memoryUsage.rss();
    const started = this.#now();
    this.#release();
    this.#recorder?.memoryReleased((this.#now() - started) / 1000, rssBefore - process.memoryUsage.rss());
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

type GcFunction = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;
let collect: GcFunction | undefined;

/**
 * A collection of V8's that releases the pages it empties. V8 offers it to scripts only as the `gc` function of
 * --expose-gc; a context made while the flag is set gets it, and the flag is cleared again at once, so that the
 * service's own global scope never has a `gc` (the same way as the expose-gc package, which is not worth a
 * dependency for these lines).
 */
export function releaseFreedHeapPages(): void {
  if (collect === undefined) {
    setFlagsFromString("--expose-gc");
    try {
      collect = runInNewContext("gc") as GcFunction;
    } finally {
      setFlagsFromString("--no-expose-gc");
    }
  }
  collect({ type: "major", execution: "sync", flavor: "last-resort" });
}
