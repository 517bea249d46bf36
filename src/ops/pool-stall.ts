import type { Database } from "../db/client.ts";

/** What the watch reads of the database: its pools' permits and waiters, and its members' statement counts. */
export type PoolActivity = Pick<Database, "poolStates" | "memberStats">;

export interface PoolStallOptions {
  /**
   * How long statements may wait for a connection (or every connection stay taken) while none starts before the
   * pools count as stalled: past the longest a statement may hold its connection, opening it included (the
   * statement timeout plus the connect timeout), nothing legitimate can explain it.
   */
  stallAfterMs: number;
}

/**
 * Whether the database's connection pools have stalled: statements wait for a connection, or every connection is
 * taken, and no statement has started for longer than any statement may hold its connection.
 *
 * The availability probe runs on a connection of its own, so it can find the database answering while the pools
 * serve nobody (issue 23: every permit leaked after a network fault, every request waiting out its deadline, and
 * readiness 200 throughout). Readiness must say "not serving" then, so that a load balancer sends the work
 * elsewhere and an operator sees why. A pool that merely works hard is not stalled: its statements end within the
 * statement timeout and the next ones start, which moves the count.
 *
 * Sampled on a timer (so that Watch streams learn of a change) and on every question (so that an answer is never a
 * sample behind).
 */
export class PoolStallWatch {
  readonly #db: PoolActivity;
  readonly #stallAfterMs: number;
  readonly #listeners = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  #statementsStarted: number | undefined;
  /** Since when statements have been blocked with none starting; undefined while they are not. */
  #blockedSince: number | undefined;
  #stalled = false;

  constructor(db: PoolActivity, options: PoolStallOptions) {
    this.#db = db;
    this.#stallAfterMs = options.stallAfterMs;
  }

  /** Whether the pools are stalled now. */
  get stalled(): boolean {
    this.#sample();
    return this.#stalled;
  }

  /** Calls `listener` whenever `stalled` changes, until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  start(): void {
    if (this.#timer !== undefined) return;
    // A few samples per bound: a stall is reported at most a quarter of the bound late.
    this.#timer = setInterval(() => this.#sample(), Math.max(10, Math.min(1000, Math.floor(this.#stallAfterMs / 4))));
    // Watching must never keep a process alive that has nothing else to do.
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #sample(): void {
    const started = this.#db.memberStats().reduce((sum, member) => sum + member.statements, 0);
    const blocked = this.#db.poolStates().some((pool) => pool.waiting > 0 || (pool.max > 0 && pool.inUse >= pool.max));
    const now = Date.now();
    if (!blocked || started !== this.#statementsStarted) {
      this.#blockedSince = undefined;
      this.#statementsStarted = started;
    }
    if (blocked) this.#blockedSince ??= now;
    const stalled = this.#blockedSince !== undefined && now - this.#blockedSince > this.#stallAfterMs;
    if (stalled === this.#stalled) return;
    this.#stalled = stalled;
    for (const listener of this.#listeners) listener();
  }
}
