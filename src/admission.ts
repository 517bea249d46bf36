import { abortError } from "./db/client.ts";

/**
 * Lets at most `slots` requests build their responses at once; the others wait their turn in arrival order,
 * until their own signal ends the wait. On a 2-core machine more parallel work adds no throughput, only memory:
 * each trace page in flight holds its rows and its response at once, so concurrency must be bounded for memory
 * to be.
 */
export class Admission {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(slots: number) {
    this.#free = slots;
  }

  async run<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    await this.#acquire(signal);
    try {
      return await work();
    } finally {
      this.#release();
    }
  }

  #acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener("abort", cancel);
        resolve();
      };
      const cancel = () => {
        const index = this.#waiting.indexOf(grant);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(abortError(signal));
      };
      this.#waiting.push(grant);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}
