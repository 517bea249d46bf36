import { Code, ConnectError } from "@connectrpc/connect";

/**
 * Whether the database can be reached, known ahead of the requests that need it.
 *
 * Without it an outage shows up late and as the wrong error: a request whose connection attempt hangs (a
 * black-holed host) or whose statement never gets an answer waits for its whole deadline and ends in 504, and a
 * hung connection stays checked out of the pool after the database is back. So a probe (`select 1` on a connection
 * of its own, bounded by `timeoutMs`) runs every `upIntervalMs` while the database is up, at once when a statement
 * fails for a connection reason, and every `downIntervalMs` while it is down. A probe that fails or does not answer
 * in time marks the database down: statements in flight end at once with Unavailable (their connections are
 * dropped by `onDown`), and new requests fail within a probe's bound instead of queueing. A request that arrives
 * while the database is down runs a probe itself (one at a time, shared), so the first request after the
 * database is back succeeds rather than waiting for the next scheduled probe.
 */
export class DatabaseAvailability {
  readonly #probe: (timeoutMs: number) => Promise<void>;
  readonly #options: AvailabilityOptions;
  #up = true;
  #downSince: number | undefined;
  #running: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** Aborted when the database goes down: what statements in flight race against. */
  #upPeriod = new AbortController();
  readonly #subscribers = new Set<(up: boolean) => void>();

  constructor(probe: (timeoutMs: number) => Promise<void>, options: AvailabilityOptions) {
    this.#probe = probe;
    this.#options = options;
  }

  /** Fires when the database goes down; a fresh signal after every recovery. */
  get downSignal(): AbortSignal {
    return this.#upPeriod.signal;
  }

  /** What the last probe found, without probing: for those who follow changes (see subscribe) rather than ask. */
  get up(): boolean {
    return this.#up;
  }

  /** Calls `listener` on every change, until the returned function is called (a health Watch stream follows it). */
  subscribe(listener: (up: boolean) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  start(): void {
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Resolves at once while the database is up; while it is down, probes (or joins the probe under way) and fails fast. */
  async ready(): Promise<void> {
    if (this.#up) return;
    // Requests that arrive together share one probe; one arriving after it failed starts the next, so the
    // first request after the database is back finds it back.
    if (!(await this.#probeNow())) throw unavailable();
  }

  /** A statement failed for a connection reason: check now rather than at the next scheduled probe. */
  suspect(): void {
    void this.#probeNow();
  }

  /** Runs one probe (or joins the one under way) and returns whether the database answered. */
  #probeNow(): Promise<boolean> {
    this.#running ??= this.#probe(this.#options.timeoutMs).then(
      () => true,
      () => false,
    ).then((ok) => {
      this.#running = undefined;
      this.#set(ok);
      return ok;
    });
    return this.#running;
  }

  #set(up: boolean): void {
    if (up === this.#up) return;
    this.#up = up;
    if (up) {
      const downMs = this.#downSince === undefined ? 0 : Date.now() - this.#downSince;
      this.#downSince = undefined;
      this.#upPeriod = new AbortController();
      this.#options.onChange?.(true, downMs);
    } else {
      this.#downSince = Date.now();
      this.#upPeriod.abort(unavailable());
      this.#options.onDown();
      this.#options.onChange?.(false, 0);
    }
    for (const listener of this.#subscribers) listener(up);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        void this.#probeNow().then(() => this.#schedule());
      },
      this.#up ? this.#options.upIntervalMs : this.#options.downIntervalMs,
    );
    // The probe must never keep a process alive that has nothing else to do.
    this.#timer.unref();
  }
}

export interface AvailabilityOptions {
  /** Bound of one probe, connecting included. */
  timeoutMs: number;
  upIntervalMs: number;
  downIntervalMs: number;
  /** Called once each time the database goes down, before anyone waits on it: drop connections that may hang. */
  onDown: () => void;
  onChange?: (up: boolean, downMs: number) => void;
}

function unavailable(): ConnectError {
  return new ConnectError("database unavailable", Code.Unavailable);
}
