import { abortError, untilAborted } from "./abort.ts";
import type { AdmissionRecorder, AdmissionState } from "./observability/metrics.ts";

/**
 * Bounds the work the service does at once, by weight: a request takes as many slots as its page holds
 * transactions (see `transactionsWeight`), and waits its turn while they are taken.
 * On a 2-core machine more parallel work adds no throughput, only memory: a page in flight holds its rows, its
 * messages and its serialised response at once, and a 1000-trace page weighs as much as a hundred small ones.
 *
 * Two lanes keep cheap requests fast while heavy ones run. A light request (one slot) may take one of the
 * `reserved` slots, which heavy requests never hold, so it waits at most for other light requests; when those are
 * taken it queues with everybody else. The other slots are shared, granted strictly in arrival order (a heavy
 * request at the head is not overtaken, so a stream of light ones cannot starve it), and a heavy request weighs
 * at most all of them. With the default 8 slots: 2 reserved, and one 1000-trace page or six small ones in the 6
 * shared.
 *
 * The caller's answer also ends with its signal (deadline, client gone), but the slots stay taken until the work
 * itself has finished: memory is freed only then, and statements are bounded by the statement timeout.
 */
export class Admission {
  readonly #shared: number;
  readonly #reserved: number;
  #freeShared: number;
  #freeReserved: number;
  readonly #waiting: Waiter[] = [];
  readonly #recorder: AdmissionRecorder | undefined;

  constructor(slots: number, recorder?: AdmissionRecorder) {
    this.#recorder = recorder;
    this.#reserved = reservedSlots(slots);
    this.#shared = slots - this.#reserved;
    this.#freeShared = this.#shared;
    this.#freeReserved = this.#reserved;
  }

  async run<T>(signal: AbortSignal, weight: number, work: (slots: HeldSlots) => Promise<T>): Promise<T> {
    let held = await this.#acquire(signal, this.#slotsFor(weight));
    const slots: HeldSlots = {
      get light() {
        return held.count <= 1;
      },
      resize: async (newWeight) => {
        const wanted = this.#slotsFor(newWeight);
        if (wanted <= held.count) {
          this.#release({ lane: held.lane, count: held.count - wanted });
          held = { lane: held.lane, count: wanted };
          return;
        }
        // Holding some slots while waiting for more could deadlock two growing requests: give all back and
        // queue again for the whole weight.
        this.#release(held);
        held = { lane: "shared", count: 0 };
        held = await this.#acquire(signal, wanted);
      },
    };
    const done = work(slots).finally(() => this.#release(held));
    return untilAborted(signal, done);
  }

  /** For the metrics, read when they are scraped. */
  state(): AdmissionState {
    return {
      queued: this.#waiting.length,
      lanes: [
        { lane: "reserved", slots: this.#reserved, inUse: this.#reserved - this.#freeReserved },
        { lane: "shared", slots: this.#shared, inUse: this.#shared - this.#freeShared },
      ],
    };
  }

  #slotsFor(weight: number): number {
    return Math.min(this.#shared, Math.max(1, Math.ceil(weight)));
  }

  #acquire(signal: AbortSignal, count: number): Promise<Held> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    if (count === 1 && this.#freeReserved > 0) {
      this.#freeReserved--;
      this.#recorder?.admissionWaited(0);
      return Promise.resolve({ lane: "reserved", count });
    }
    if (this.#waiting.length === 0 && this.#freeShared >= count) {
      this.#freeShared -= count;
      this.#recorder?.admissionWaited(0);
      return Promise.resolve({ lane: "shared", count });
    }
    const queuedAt = performance.now();
    return new Promise((resolve, reject) => {
      const entry: Waiter = {
        count,
        grant: (lane) => {
          signal.removeEventListener("abort", cancel);
          this.#recorder?.admissionWaited((performance.now() - queuedAt) / 1000);
          resolve({ lane, count });
        },
      };
      const cancel = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        this.#recorder?.admissionWaited((performance.now() - queuedAt) / 1000);
        reject(abortError(signal));
        // The head may have been the one holding the others back.
        this.#grantWaiting();
      };
      this.#waiting.push(entry);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  #release(held: Held): void {
    if (held.lane === "reserved") this.#freeReserved += held.count;
    else this.#freeShared += held.count;
    this.#grantWaiting();
  }

  #grantWaiting(): void {
    for (let head = this.#waiting[0]; head !== undefined && head.count <= this.#freeShared; head = this.#waiting[0]) {
      this.#waiting.shift();
      this.#freeShared -= head.count;
      head.grant("shared");
    }
    // A reserved slot goes to the first light request waiting, even behind a heavy one: heavy ones never use it.
    for (let i = 0; i < this.#waiting.length && this.#freeReserved > 0; ) {
      const waiter = this.#waiting[i] as Waiter;
      if (waiter.count !== 1) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#freeReserved--;
      waiter.grant("reserved");
    }
  }
}

interface Held {
  lane: "reserved" | "shared";
  count: number;
}

interface Waiter {
  count: number;
  grant: (lane: Held["lane"]) => void;
}

/** Slots only light requests may take: a quarter, at least one once there are two slots to split. */
function reservedSlots(slots: number): number {
  return slots < 2 ? 0 : Math.max(1, Math.floor(slots / 4));
}

/** What a request holds while it works; a request that learns its real size adjusts its weight to it. */
export interface HeldSlots {
  /** Holds one slot: a cheap request, whose statements go first (see ConnectionGate). */
  readonly light: boolean;
  /** Gives back what the new weight does not need, or waits (in turn, holding nothing) for what it needs more. */
  resize(weight: number): Promise<void>;
}

/** Transactions that weigh one slot: with the default 8 slots, pages of 1500 transactions in the shared ones, plus two light requests. */
export const transactionsPerSlot = 250;

export function transactionsWeight(transactions: number): number {
  return transactions / transactionsPerSlot;
}

/** A trace holds this many transactions in a typical page: the weight of a page of traces before it is read. */
export const expectedTransactionsPerTrace = 4;
