import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { MemoryReleaseRecorder, MemoryReleaseTrigger } from "../observability/metrics.ts";
import { type HeapCollection, heapPressureSignalAvailable, signalHeapPressure } from "./heap-pressure.ts";
import { nativeHeapTrimAvailable, trimNativeHeap } from "./native-heap.ts";

/** A release under load pauses the event loop; the next one waits this many times the last pause (1 % of the time at most). */
const pressurePauseFactor = 100;
/** ...and never less than this. */
const pressureMinIntervalMs = 1000;
/** How often the resident set is compared with the soft limit. */
const pressureCheckMs = 250;
/**
 * A release under load that gives back less than this share of the soft limit doubles the wait before the next one
 * (up to `pressureMaxBackoff` times): the memory held past the limit is then live (the embedded database's, a large
 * decoded-body cache), and another pause would buy nothing.
 */
const pressureProductiveShare = 0.1;
const pressureMaxBackoff = 64;
/** A collection set going by the pressure signal that has not ended after this long is recorded as it stands. */
const signalledCollectionMaxMs = 5000;

/** A release under pressure waiting for the collection the signal set going. */
interface SignalledRelease {
  rssBefore: number;
  collection: HeapCollection;
  startedAt: number;
}

/**
 * Gives the operating system back the memory work left the process holding: once the service has been idle for a
 * while, and, under load, whenever its resident set passes a soft limit.
 *
 * V8 keeps the pages of its heap that garbage collection has emptied, for the next allocations, and in Node nothing
 * ever hands them back: its memory reducer, which should after a few idle seconds, judges the allocation rate by
 * the last collections and, with no collection while idle, stays in its "high allocation" state for good (seen with
 * --trace-memory-reducer). After the bench's trace pages a server held 165 MB in V8's 256 KB pages while V8 counted
 * 84 MB of heap. Only a collection made to reduce memory ("last resort", what V8 runs when an allocation fails)
 * releases them; it stops the event loop (68 ms idle after a burst, 140-200 ms amid the bench's heaviest pages), so
 * it runs when no request has been in flight for `idleMs` (once per stretch of activity), and under load only past
 * `softLimitBytes`, no sooner after the last one than a hundred times its pause (longer after releases that gave
 * back little): kept pages pile up as runs of different pages follow each other, and a peak is the largest heap one
 * of them needs plus what the others left.
 *
 * malloc keeps what the work freed as well (Node's socket reads and Buffers, V8's compiler zones): after a run of trace
 * pages a server's main heap held 46 MB with 16 in use. A release therefore also trims malloc's heaps
 * (src/runtime/native-heap.ts), at the check after the collection rather than with it: V8 frees the backing stores of
 * the Buffers the collection found dead on a thread of its own, after the pause (a process holding 82 MB after a
 * burst of Buffers: 68 MB when trimmed at once, 49 MB when trimmed 200 ms later).
 *
 * Under load, where the addon for it is built, the collection is V8's own answer to a memory-pressure signal
 * (src/runtime/heap-pressure.ts) rather than the last-resort one: incremental, so that the requests in flight wait for
 * its final pause alone (26-45 ms per release amid the bench's heavy pages, against 85-125 ms), and it gives back as
 * much. It ends after the call, so the release follows it from check to check and trims at the check after it ends.
 * Idle, with nobody waiting, the last-resort collection stays: it goes further (several collections in a row).
 */
export class MemoryRelease {
  readonly #idleMs: number;
  readonly #softLimitBytes: number;
  readonly #release: () => void;
  readonly #signalPressure: (() => HeapCollection) | undefined;
  readonly #trim: (() => void) | undefined;
  readonly #now: () => number;
  readonly #residentBytes: () => number;
  readonly #recorder: MemoryReleaseRecorder | undefined;
  readonly #timer: ReturnType<typeof setInterval> | undefined;
  #inFlight = 0;
  #lastEnded = 0;
  /** Whether a request has ended since the last release: an idle service has nothing more to give back. */
  #workedSinceRelease = false;
  /** When the next release under pressure may run. */
  #pressureAllowedAt = 0;
  /** By how much the wait after a release under pressure is stretched: doubled by each that gave back little. */
  #pressureBackoff = 1;
  /** A release under pressure whose collection V8 is running. */
  #signalled: SignalledRelease | undefined;
  /** A release whose collection has run and whose trim of malloc's heaps is due at the next check. */
  #awaitingTrim: { trigger: MemoryReleaseTrigger; rssBefore: number; pauseMs: number } | undefined;

  /**
   * `idleMs` 0 turns the idle release off, `softLimitBytes` 0 the one under pressure. `release` (a collection done
   * within the call), `signalPressure` (one that ends later, for releases under pressure), `trim`, `now`,
   * `residentBytes`: a test's own, and no timer (it calls check()); a test that gives its own `release` and no
   * `trim` or `signalPressure` gets none.
   */
  constructor(options: {
    idleMs: number;
    softLimitBytes?: number;
    recorder?: MemoryReleaseRecorder;
    release?: () => void;
    signalPressure?: () => HeapCollection;
    trim?: () => void;
    now?: () => number;
    residentBytes?: () => number;
  }) {
    this.#idleMs = options.idleMs;
    this.#softLimitBytes = options.softLimitBytes ?? 0;
    this.#recorder = options.recorder;
    this.#release = options.release ?? releaseFreedHeapPages;
    this.#signalPressure = options.signalPressure ?? (options.release === undefined && heapPressureSignalAvailable ? signalHeapPressure : undefined);
    this.#trim = options.trim ?? (options.release === undefined && nativeHeapTrimAvailable ? trimNativeHeap : undefined);
    this.#now = options.now ?? (() => performance.now());
    this.#residentBytes = options.residentBytes ?? process.memoryUsage.rss;
    // One timer for the process rather than one per request: masterchainInfo comes thousands of times a second.
    const every = this.#softLimitBytes > 0 ? pressureCheckMs : Math.max(100, options.idleMs / 4);
    if ((options.idleMs > 0 || this.#softLimitBytes > 0) && options.now === undefined) {
      this.#timer = setInterval(() => this.check(), every);
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

  /** Releases the freed memory if the service has been idle long enough since it last worked, or holds too much. */
  check(): void {
    if (this.#signalled !== undefined) {
      this.#followSignalled(this.#signalled);
      return;
    }
    if (this.#awaitingTrim !== undefined) {
      this.#finishWithTrim(this.#awaitingTrim);
      return;
    }
    if (!this.#workedSinceRelease && this.#inFlight === 0) return;
    const now = this.#now();
    if (this.#idleMs > 0 && this.#inFlight === 0 && now - this.#lastEnded >= this.#idleMs) {
      this.#run("idle");
      return;
    }
    if (this.#softLimitBytes > 0 && now >= this.#pressureAllowedAt && this.#residentBytes() > this.#softLimitBytes) this.#run("pressure");
  }

  #run(trigger: MemoryReleaseTrigger): void {
    this.#workedSinceRelease = false;
    const rssBefore = this.#residentBytes();
    const started = this.#now();
    if (trigger === "pressure" && this.#signalPressure !== undefined) {
      this.#signalled = { rssBefore, collection: this.#signalPressure(), startedAt: started };
      return;
    }
    this.#release();
    this.#collected(trigger, rssBefore, this.#now() - started);
  }

  /** A signalled collection that has ended (or outlasted signalledCollectionMaxMs) is done: its trim follows. */
  #followSignalled(signalled: SignalledRelease): void {
    const { collection } = signalled;
    if (!collection.ended() && this.#now() - signalled.startedAt < signalledCollectionMaxMs) return;
    this.#signalled = undefined;
    collection.close();
    this.#collected("pressure", signalled.rssBefore, collection.pauseMs());
  }

  /** The collection has run: the trim at the next check, or, without one, the release is recorded now. */
  #collected(trigger: MemoryReleaseTrigger, rssBefore: number, pauseMs: number): void {
    if (this.#trim !== undefined) {
      this.#awaitingTrim = { trigger, rssBefore, pauseMs };
      return;
    }
    this.#finish(trigger, rssBefore, pauseMs);
  }

  #finishWithTrim(release: { trigger: MemoryReleaseTrigger; rssBefore: number; pauseMs: number }): void {
    this.#awaitingTrim = undefined;
    const started = this.#now();
    this.#trim?.();
    this.#finish(release.trigger, release.rssBefore, release.pauseMs + (this.#now() - started));
  }

  /** Records a release and sets when the next one under pressure may run, by its pause and what it gave back. */
  #finish(trigger: MemoryReleaseTrigger, rssBefore: number, pauseMs: number): void {
    const released = rssBefore - this.#residentBytes();
    if (trigger === "pressure") {
      this.#pressureBackoff = released < pressureProductiveShare * this.#softLimitBytes ? Math.min(pressureMaxBackoff, this.#pressureBackoff * 2) : 1;
    }
    this.#pressureAllowedAt = this.#now() + this.#pressureBackoff * Math.max(pressureMinIntervalMs, pressurePauseFactor * pauseMs);
    this.#recorder?.memoryReleased(trigger, pauseMs / 1000, released);
  }

  close(): void {
    clearInterval(this.#timer);
    this.#signalled?.collection.close();
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
