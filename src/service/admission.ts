import { Code, ConnectError } from "@connectrpc/connect";
import { abortError, untilAborted } from "../runtime/abort.ts";
import type { AdmissionRecorder, AdmissionState } from "../observability/metrics.ts";

/**
 * Bounds the work the service does at once, by weight: a request takes as many slots as its page holds
 * transactions (see `transactionsWeight`), and waits its turn while they are taken.
 * On a 2-core machine more parallel work adds no throughput, only memory: a page in flight holds its rows, its
 * messages and its serialised response at once, and a 1000-trace page weighs as much as a hundred small ones.
 *
 * Two lanes keep cheap requests fast while heavy ones run. A light request (one slot) may take one of the
 * `reserved` slots, which heavy requests never hold, so it waits at most for other light requests; when those are
 * taken it queues with everybody else. The other slots are shared, granted strictly in order of arrival (a heavy
 * request at the head is not overtaken, so a stream of light ones cannot starve it), and a heavy request weighs
 * at most all of them. With the default 8 slots: 2 reserved, and one 1000-trace page or six small ones in the 6
 * shared.
 *
 * A request keeps its place in line for good: one that grows once it knows its real weight gives its slots back (a
 * growing request that held them while waiting for more could deadlock with another) and waits again, but ahead
 * of everyone who arrived after it. Before that, a page weighed 2 slots and turned out to need 3 went to the end of
 * the line, behind the newer light requests, and mid-size pages starved (issue 23).
 *
 * Overload is shed at the door, by cost, rather than by a 504 after the whole deadline in line: a request that must
 * queue behind others is refused at once (Unavailable, with a Retry-After) when the work queued ahead of it and its
 * own would outlast what is left of its deadline, and so is a waiter whose turn comes too late for its own work.
 * Work is counted in slot-milliseconds: each waiter is expected to take what requests of its kind (operation and
 * page size) arriving at its weight have lately taken to be served (the slots they ended with times how long they
 * held them, so a page lighter than its size promised teaches that), and a queue of heavy pages refuses newcomers
 * sooner than as many light ones would. A request with nobody ahead is never
 * refused, nor a light one that finds a reserved slot free, nor one of a kind that has gone without slots for longer
 * than its deadline: no class is shed for good while others are served.
 *
 * The caller's answer also ends with its signal (deadline, client gone), but the slots stay taken until the work
 * itself has finished: memory is freed only then, and statements are bounded by the statement timeout. An answer
 * its door sends only after the work has returned it keeps them until it is sent (see HeldSlots.keepUntil).
 */
export class Admission {
  readonly #shared: number;
  readonly #reserved: number;
  #freeShared: number;
  #freeReserved: number;
  /** In order of arrival (tickets ascending); a growing request goes back at its original place. */
  readonly #waiting: Waiter[] = [];
  #nextTicket = 0;
  readonly #recorder: AdmissionRecorder | undefined;
  /**
   * What serving a request has taken, by kind and the slots it arrived with (see `arrivalKind`): a moving average of
   * slot-milliseconds. Keyed by arrival, not by the slots it ended with, because a waiter is known by its arrival
   * only: keyed by the end, a page of 1000 that weighs 6 slots on arrival and shrinks to 1 once loaded taught the
   * key it is estimated by nothing, except when it failed before shrinking (the outage's timeouts, kept for good).
   */
  readonly #workMs = new Map<string, number>();
  /** How far what serving a kind takes strays from its average: a moving average of the absolute differences. */
  readonly #workDeviationMs = new Map<string, number>();
  /** Expected slot-milliseconds of the requests holding shared slots now (each counted at its expected hold). */
  #sharedWorkInUse = 0;
  /** When requests of each arrival kind were last granted slots (the clock's milliseconds). */
  readonly #lastGranted = new Map<string, number>();
  /**
   * Slots of answers that are made and being sent, which no longer hold the slots they were made in (see
   * `keepUntil`): as many as the shared lane has, so that one heavy answer, or that weight of lighter ones, is on
   * its way out while the next pages are made.
   */
  #freeSending: number;
  /** Answers made and waiting for sending slots, in the order they were made; each holds its slots meanwhile. */
  readonly #waitingToSend: { count: number; grant: () => void }[] = [];

  /** Milliseconds on a monotonic clock; a test passes its own, so that shedding never hangs on a stall of the machine. */
  readonly #now: () => number;

  constructor(slots: number, recorder?: AdmissionRecorder, now: () => number = () => performance.now()) {
    this.#recorder = recorder;
    this.#now = now;
    this.#reserved = reservedSlots(slots);
    this.#shared = slots - this.#reserved;
    this.#freeShared = this.#shared;
    this.#freeReserved = this.#reserved;
    this.#freeSending = this.#shared;
  }

  /**
   * Runs `work` once its slots are granted. `request.kind` names what it is (an operation), for the hold times
   * shedding is judged by; `request.timeoutMs` is what is left of its deadline (no shedding without one).
   */
  async run<T>(signal: AbortSignal, weight: number, work: (slots: HeldSlots) => Promise<T>, request: AdmissionRequest = {}): Promise<T> {
    const count = this.#slotsFor(weight);
    const kind = arrivalKind(request.kind ?? "", count);
    const ticket = this.#nextTicket++;
    const deadline = request.timeoutMs === undefined ? undefined : this.#now() + request.timeoutMs;
    let held = await this.#acquire(signal, { ticket, kind, count, deadline, timeoutMs: request.timeoutMs });
    let keptUntil: Promise<unknown> | undefined;
    // `light` is a field kept in step with `held`, not a getter: a literal with a getter before other members becomes
    // a dictionary in V8, a shape of its own per request that every full collection let die, and with it the
    // optimised code that had met one (see test/admission.test.ts).
    const slots: { light: boolean } & Omit<HeldSlots, "light"> = {
      light: held.count <= 1,
      resize: async (newWeight) => {
        const wanted = this.#slotsFor(newWeight);
        if (wanted <= held.count) {
          const released = held.count - wanted;
          const releasedWork = held.count > 0 ? (held.expectedWork * released) / held.count : 0;
          this.#release({ ...held, count: released, expectedWork: releasedWork }, false);
          hold({ ...held, count: wanted, expectedWork: held.expectedWork - releasedWork });
          return;
        }
        // Holding some slots while waiting for more could deadlock two growing requests: give all back and queue
        // again for the whole weight, at this request's place in line, never shed (it was admitted).
        this.#release(held, false);
        hold({ lane: "shared", count: 0, kind, since: this.#now(), expectedWork: 0 });
        hold(await this.#acquire(signal, { ticket, kind, count: wanted, deadline: undefined, timeoutMs: undefined }));
      },
      keepUntil: (released) => {
        keptUntil = released;
      },
    };
    const hold = (next: Held) => {
      held = next;
      slots.light = next.count <= 1;
    };
    const release = () => this.#release(held, true);
    const done = work(slots).then(
      (result) => {
        // A light answer is small, and waiting behind heavy ones to be sent would hold up the light lane.
        if (keptUntil === undefined || slots.light) release();
        else this.#handOver(held, keptUntil, release);
        return result;
      },
      (err: unknown) => {
        // A failure's hold says how long the database took to fail (a statement timeout in an outage), not what
        // serving the kind costs: learnt, it refused the first burst after the database came back.
        this.#release(held, false);
        throw err;
      },
    );
    return untilAborted(signal, done);
  }

  /**
   * An answer made with `held` and not yet sent, which holds its memory until `sent` settles: it takes as many
   * sending slots and gives back the slots it was made in, at once when sending slots are free, else as soon as they
   * are (until then it keeps what it holds, and the next pages wait: answers are made no faster than they leave).
   */
  #handOver(held: Held, sent: Promise<unknown>, release: () => void): void {
    const count = held.count;
    let sending = false;
    let over = false;
    const start = () => {
      if (over) return this.#giveSending(count);
      sending = true;
      release();
    };
    const end = () => {
      over = true;
      if (sending) this.#giveSending(count);
      else {
        release();
        const waiting = this.#waitingToSend.findIndex((w) => w.grant === start);
        if (waiting >= 0) this.#waitingToSend.splice(waiting, 1);
      }
    };
    void sent.then(end, end);
    if (this.#waitingToSend.length === 0 && this.#freeSending >= count) {
      this.#freeSending -= count;
      start();
    } else this.#waitingToSend.push({ count, grant: start });
  }

  #giveSending(count: number): void {
    this.#freeSending += count;
    for (let next = this.#waitingToSend[0]; next !== undefined && next.count <= this.#freeSending; next = this.#waitingToSend[0]) {
      this.#waitingToSend.shift();
      this.#freeSending -= next.count;
      next.grant();
    }
  }

  /** For the metrics, read when they are scraped. */
  state(): AdmissionState {
    return {
      queued: this.#waiting.length,
      lanes: [
        { lane: "reserved", slots: this.#reserved, inUse: this.#reserved - this.#freeReserved },
        { lane: "shared", slots: this.#shared, inUse: this.#shared - this.#freeShared },
        { lane: "sending", slots: this.#shared, inUse: this.#shared - this.#freeSending },
      ],
    };
  }

  #slotsFor(weight: number): number {
    return Math.min(this.#shared, Math.max(1, Math.ceil(weight)));
  }

  /** The moving average work of serving a request of this arrival kind; 0 while none has been served (never shed then). */
  #expectedWork(kind: string): number {
    return this.#workMs.get(kind) ?? 0;
  }

  #acquire(signal: AbortSignal, want: Want): Promise<Held> {
    if (signal.aborted) return Promise.reject(abortError(signal));
    const { count, kind } = want;
    if (count === 1 && this.#freeReserved > 0) {
      this.#freeReserved--;
      this.#recorder?.admissionWaited(0);
      return Promise.resolve(this.#held("reserved", want));
    }
    const ahead = this.#waiting.filter((w) => w.ticket < want.ticket);
    if (ahead.length === 0 && this.#freeShared >= count) {
      this.#freeShared -= count;
      this.#recorder?.admissionWaited(0);
      return Promise.resolve(this.#held("shared", want));
    }
    // A request of a starving kind is let in whatever the estimates say, now and when its turn comes.
    const deadline = want.deadline !== undefined && !this.#starving(kind, want.timeoutMs ?? 0) ? want.deadline : undefined;
    if (deadline !== undefined && ahead.length > 0) {
      const waitMs = this.#expectedWaitMs(ahead, count);
      if (this.#now() + waitMs + this.#expectedHoldMs(kind, count) > deadline) return Promise.reject(overloaded(waitMs));
    }
    const queuedAt = this.#now();
    return new Promise((resolve, reject) => {
      const turnCame = () => {
        signal.removeEventListener("abort", cancel);
        this.#recorder?.admissionWaited((this.#now() - queuedAt) / 1000);
      };
      const entry: Waiter = {
        ticket: want.ticket,
        count,
        kind,
        deadline,
        timeoutMs: want.timeoutMs,
        grant: (lane) => {
          turnCame();
          resolve(this.#held(lane, want));
        },
        refuse: (error) => {
          turnCame();
          reject(error);
        },
      };
      const cancel = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        this.#recorder?.admissionWaited((this.#now() - queuedAt) / 1000);
        reject(abortError(signal));
        // The head may have been the one holding the others back.
        this.#grantWaiting();
      };
      // In ticket order: a new request goes last, a growing one back to its place.
      const behind = this.#waiting.findIndex((w) => w.ticket > want.ticket);
      if (behind < 0) this.#waiting.push(entry);
      else this.#waiting.splice(behind, 0, entry);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  /**
   * Whether requests of this kind and weight have gone without slots for longer than this request's whole deadline:
   * then it queues whatever the estimate says, so that no class is shed for good while others are served (an
   * estimate can be wrong for long, and shedding all of a class would never correct it).
   */
  #starving(kind: string, timeoutMs: number): boolean {
    const lastGranted = this.#lastGranted.get(kind);
    return lastGranted !== undefined && this.#now() - lastGranted > timeoutMs;
  }

  /**
   * How long a request of `count` slots would wait behind `ahead`. The shared lane does `#shared` slot-milliseconds
   * of work per millisecond: what is queued ahead, and the half still to run (on average) of what holds slots now.
   * A light request also gets the first reserved slot that comes free, so it waits at most for the light requests
   * ahead of it, on the reserved slots alone.
   */
  #expectedWaitMs(ahead: readonly Waiter[], count: number): number {
    const work = (waiters: readonly Waiter[]) => waiters.reduce((sum, w) => sum + this.#expectedWork(w.kind), 0);
    const sharedWaitMs = (work(ahead) + this.#sharedWorkInUse / 2) / this.#shared;
    if (count > 1 || this.#reserved === 0) return sharedWaitMs;
    return Math.min(sharedWaitMs, work(ahead.filter((w) => w.count === 1)) / this.#reserved);
  }

  /**
   * How long a request of this kind may hold its `count` slots once granted: its average, plus twice how far holds
   * of its kind stray from it, as TCP sizes its retransmission timeout from the round trip's average and deviation
   * (RFC 6298). Counted beside the wait: a page let in at the back of the line must also have time to run
   * (round3k's 504s were pages admitted 3 s before their deadline that took 7), and one that takes longer than its
   * kind's average is not rare (round3l's streamed pages cut at their deadline). The wait ahead is a sum of holds,
   * whose strays even out, and is counted at their averages. An estimate learnt under a load that shedding has since
   * lightened cannot refuse a kind for good: a request with nobody ahead is never refused, nor one of a kind that
   * has gone without slots for its whole deadline, and each of those teaches the estimate again.
   */
  #expectedHoldMs(kind: string, count: number): number {
    return (this.#expectedWork(kind) + 2 * (this.#workDeviationMs.get(kind) ?? 0)) / count;
  }

  #held(lane: Held["lane"], want: Want): Held {
    this.#lastGranted.set(want.kind, this.#now());
    const expectedWork = this.#expectedWork(want.kind);
    if (lane === "shared") this.#sharedWorkInUse += expectedWork;
    return { lane, count: want.count, kind: want.kind, since: this.#now(), expectedWork };
  }

  /** Gives `held` back; `served`: the request's work is over with an answer, and what it took teaches the moving average. */
  #release(held: Held, served: boolean): void {
    if (held.lane === "reserved") this.#freeReserved += held.count;
    else {
      this.#freeShared += held.count;
      this.#sharedWorkInUse = Math.max(0, this.#sharedWorkInUse - held.expectedWork);
    }
    if (served && held.count > 0) {
      const work = held.count * (this.#now() - held.since);
      const average = this.#workMs.get(held.kind);
      const deviation = this.#workDeviationMs.get(held.kind);
      // As RFC 6298 starts and moves its variation: half the first sample, then towards each stray from the old average.
      const stray = average === undefined ? work / 2 : Math.abs(work - average);
      this.#workDeviationMs.set(held.kind, deviation === undefined ? stray : deviation + workSmoothing * (stray - deviation));
      this.#workMs.set(held.kind, average === undefined ? work : average + workSmoothing * (work - average));
    }
    this.#grantWaiting();
  }

  #grantWaiting(): void {
    for (let head = this.#waiting[0]; head !== undefined && head.count <= this.#freeShared; head = this.#waiting[0]) {
      this.#waiting.shift();
      if (this.#refusedTooLate(head)) continue;
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
      if (this.#refusedTooLate(waiter)) continue;
      this.#freeReserved--;
      waiter.grant("reserved");
    }
  }

  /**
   * Refuses a waiter whose turn has come too late to run its own hold before its deadline: it would hold the slots
   * for an answer its client no longer waits for (a 504 after the work), while the waiters behind it could use them.
   * A kind that has gone without slots for its whole deadline still runs, as at arrival (see #starving).
   */
  #refusedTooLate(waiter: Waiter): boolean {
    if (waiter.deadline === undefined || this.#starving(waiter.kind, waiter.timeoutMs ?? 0)) return false;
    const holdMs = this.#expectedHoldMs(waiter.kind, waiter.count);
    if (this.#now() + holdMs <= waiter.deadline) return false;
    waiter.refuse(overloaded(holdMs));
    return true;
  }
}

/** What the caller tells admission about a request, beside its weight. */
export interface AdmissionRequest {
  /** What it is (an operation and its page size): requests of one kind and weight are expected to hold their slots alike. */
  kind?: string;
  /** What is left of its deadline. */
  timeoutMs?: number;
}

/** Weight of the newest request in the moving average: a few dozen requests make the estimate. */
const workSmoothing = 0.2;

/** A request's kind as admission learns it: what the caller names it, and the slots it arrived with. */
function arrivalKind(kind: string, count: number): string {
  return `${kind}/${count}`;
}

/** The refusal of a request shed at the door: retryable, after about the time the queue ahead would take. */
function overloaded(waitMs: number): ConnectError {
  const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new ConnectError(
    `overloaded: the requests queued ahead and this one would outlast its deadline; retry after ${retryAfterSeconds} s`,
    Code.Unavailable,
    { "retry-after": String(retryAfterSeconds) },
  );
}

interface Want {
  ticket: number;
  /** See arrivalKind. */
  kind: string;
  count: number;
  /** When, on the admission's clock, the request must be done; undefined: never shed. */
  deadline: number | undefined;
  /** Its whole deadline, from its arrival. */
  timeoutMs: number | undefined;
}

interface Held {
  lane: "reserved" | "shared";
  count: number;
  kind: string;
  /** When granted, on the admission's clock. */
  since: number;
  /** Its slot-milliseconds as expected when granted (see #sharedWorkInUse). */
  expectedWork: number;
}

interface Waiter {
  ticket: number;
  count: number;
  kind: string;
  /** See Want; undefined for a request never refused (no deadline, or let in as its kind was starving). */
  deadline: number | undefined;
  timeoutMs: number | undefined;
  grant: (lane: Held["lane"]) => void;
  /** Ends the wait with `error`, the waiter already out of the line. */
  refuse: (error: ConnectError) => void;
}

/** Slots only light requests may take: a quarter, at least one once there are two slots to split. */
function reservedSlots(slots: number): number {
  return slots < 2 ? 0 : Math.max(1, Math.floor(slots / 4));
}

/** What a request holds while it works; a request that learns its real size adjusts its weight to it. */
export interface HeldSlots {
  /** Holds one slot: a cheap request, whose statements go first (see ConnectionGate). */
  readonly light: boolean;
  /** Gives back what the new weight does not need, or waits (at its place in line, holding nothing) for what it needs more. */
  resize(weight: number): Promise<void>;
  /**
   * The answer the work makes holds its memory until `sent` settles (its door sends it after the work has returned
   * it): it is counted until then, in sending slots once some are free (see #handOver), in the slots it was made in
   * meanwhile. The caller gets the answer when the work ends.
   */
  keepUntil(sent: Promise<unknown>): void;
}

/** Transactions that weigh one slot: with the default 8 slots, pages of 1500 transactions in the shared ones, plus two light requests. */
export const transactionsPerSlot = 250;

export function transactionsWeight(transactions: number): number {
  return transactions / transactionsPerSlot;
}

/** A trace holds this many transactions in a typical page: the weight of a page of traces before it is read. */
export const expectedTransactionsPerTrace = 4;
