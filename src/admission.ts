import { abortError, untilAborted } from "./abort.ts";

/**
 * Bounds the work the service does at once, by weight: a request takes as many of the `slots` as its page holds
 * transactions (see `transactionsWeight`), the others wait their turn in arrival order until their own signal
 * ends the wait.
 * On a 2-core machine more parallel work adds no throughput, only memory: a page in flight holds its rows, its
 * messages and its serialised response at once, and a 1000-trace page weighs as much as a hundred small ones.
 * So the default 8 slots serve eight small pages at once, or one page of 1000 traces.
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

  async run<T>(signal: AbortSignal, weight: number, work: (slots: HeldSlots) => Promise<T>): Promise<T> {
    let held = this.#slotsFor(weight);
    await this.#acquire(signal, held);
    const slots: HeldSlots = {
      resize: async (newWeight) => {
        const wanted = this.#slotsFor(newWeight);
        if (wanted <= held) {
          this.#release(held - wanted);
          held = wanted;
          return;
        }
        // Holding some slots while waiting for more could deadlock two growing requests: give all back and
        // queue again for the whole weight.
        this.#release(held);
        held = 0;
        await this.#acquire(signal, wanted);
        held = wanted;
      },
    };
    const done = work(slots).finally(() => this.#release(held));
    return untilAborted(signal, done);
  }

  #slotsFor(weight: number): number {
    return Math.min(this.#slots, Math.max(1, Math.ceil(weight)));
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

/** What a request holds while it works; a request that learns its real size adjusts its weight to it. */
export interface HeldSlots {
  /** Gives back what the new weight does not need, or waits (in turn, holding nothing) for what it needs more. */
  resize(weight: number): Promise<void>;
}

/** Transactions that weigh one slot: with the default 8 slots, pages of 2000 transactions in all at once. */
export const transactionsPerSlot = 250;

export function transactionsWeight(transactions: number): number {
  return transactions / transactionsPerSlot;
}

/** A trace holds this many transactions in a typical page: the weight of a page of traces before it is read. */
export const expectedTransactionsPerTrace = 4;
