import { abortError, untilAborted } from "./abort.ts";

/**
 * Bounds the work the service does at once, by weight: a request takes as many of the `slots` as its page is
 * large (see `pageWeight`), the others wait their turn in arrival order until their own signal ends the wait.
 * On a 2-core machine more parallel work adds no throughput, only memory: a page in flight holds its rows, its
 * messages and its serialised response at once, and a 1000-trace page weighs as much as a hundred small ones.
 * So the default 8 slots serve eight small pages at once, or one page of 1000.
 *
 * The caller's answer also ends with its signal (deadline, client gone), but the slot stays taken until the
 * work itself has finished: memory is freed only then, and statements are bounded by the statement timeout.
 */
export class Admission {
  readonly #slots: number;
  #free: number;
  readonly #waiting: { weight: number; grant: () => void }[] = [];

  constructor(slots: number) {
    this.#slots = slots;
    this.#free = slots;
  }

  async run<T>(signal: AbortSignal, weight: number, work: () => Promise<T>): Promise<T> {
    const taken = Math.min(this.#slots, Math.max(1, Math.ceil(weight)));
    await this.#acquire(signal, taken);
    const done = work().finally(() => this.#release(taken));
    return untilAborted(signal, done);
  }

  #acquire(signal: AbortSignal, weight: number): Promise<void> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    // Strictly first come, first served: a heavy request at the head is not overtaken by light ones.
    if (this.#waiting.length === 0 && this.#free >= weight) {
      this.#free -= weight;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const entry = {
        weight,
        grant: () => {
          signal.removeEventListener("abort", cancel);
          resolve();
        },
      };
      const cancel = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(abortError(signal));
        // The head may have been the one holding the others back.
        this.#grantWaiting();
      };
      this.#waiting.push(entry);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  #release(weight: number): void {
    this.#free += weight;
    this.#grantWaiting();
  }

  #grantWaiting(): void {
    for (let head = this.#waiting[0]; head !== undefined && head.weight <= this.#free; head = this.#waiting[0]) {
      this.#waiting.shift();
      this.#free -= head.weight;
      head.grant();
    }
  }
}

/** Items of a page that weigh one slot: with the default 8 slots, a page of 1000 takes them all. */
export const itemsPerSlot = 125;

export function pageWeight(items: number): number {
  return items / itemsPerSlot;
}
