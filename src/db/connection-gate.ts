import { abortError } from "../runtime/abort.ts";

/**
 * Hands out a pool's connections, one statement at a time, urgent statements first.
 *
 * postgres.js queues statements for a connection in arrival order, so a one-row lookup waited behind every statement
 * a 1000-trace page had queued before it (each 20-100 ms on a busy account). With as many permits as the pool has
 * connections, a statement that holds a permit always finds a connection free, and the order in which waiting
 * statements get one is decided here: urgent ones (cheap requests, see `Admission`) before the others, each group
 * in arrival order. A waiter whose signal fires leaves the queue and never runs.
 */
export class ConnectionGate {
  readonly capacity: number;
  #free: number;
  readonly #urgent: Waiter[] = [];
  readonly #normal: Waiter[] = [];

  constructor(capacity: number) {
    this.capacity = capacity;
    this.#free = capacity;
  }

  /** Permits held: connections running a statement. */
  get inUse(): number {
    return this.capacity - this.#free;
  }

  /** Statements waiting for a permit. */
  get waiting(): number {
    return this.#urgent.length + this.#normal.length;
  }

  /** Resolves with the function that gives the permit back. */
  acquire(signal: AbortSignal, urgent: boolean): Promise<() => void> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    const now = this.tryAcquire(urgent);
    if (now !== undefined) return Promise.resolve(now);
    const queue = urgent ? this.#urgent : this.#normal;
    return new Promise((resolve, reject) => {
      const waiter: Waiter = () => {
        signal.removeEventListener("abort", cancel);
        resolve(this.#releaser());
      };
      const cancel = () => {
        const index = queue.indexOf(waiter);
        if (index >= 0) queue.splice(index, 1);
        reject(abortError(signal));
      };
      queue.push(waiter);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  /** A permit now if one is free and nobody it must not overtake waits for one; else undefined (nothing queued). */
  tryAcquire(urgent: boolean): (() => void) | undefined {
    if (this.#free > 0 && this.#urgent.length === 0 && (urgent || this.#normal.length === 0)) {
      this.#free--;
      return this.#releaser();
    }
    return undefined;
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#urgent.shift() ?? this.#normal.shift();
      if (next === undefined) this.#free++;
      else next();
    };
  }
}

type Waiter = () => void;

const urgency = new WeakMap<AbortSignal, () => boolean>();

/** Marks a request's statements urgent for as long as `isUrgent()` says so (a request that turns out heavy stops being). */
export function prioritise(signal: AbortSignal, isUrgent: () => boolean): void {
  urgency.set(signal, isUrgent);
}

export function isUrgent(signal: AbortSignal): boolean {
  return urgency.get(signal)?.() ?? false;
}
