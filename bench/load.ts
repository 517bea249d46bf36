// Closed-loop load: `concurrency` workers, each sending its next request as soon as the previous one is answered.
//
// Warm-up (not measured): a probe at concurrency 1 for half the warm-up time; when requests are light (three or
// more answered in that time) the other half runs at full concurrency, which also opens the connections. A heavy
// request skips the second half: one round of `concurrency` slow requests would cost more than it teaches.
//
// Measured phase: workers stop starting requests at the duration (or after maxRequests); requests in flight are
// waited for, up to maxRunMs from the start of the phase. Whatever is still in flight then is aborted and
// counted as *censored*: its latency is only known to exceed what it had waited, so it enters the percentiles as
// +Infinity (a percentile that falls on one prints as "> maxRunMs"). Throughput is completed requests over the
// phase's elapsed time.
//
// Simultaneous loads (runSimultaneously, the mixed scenario): several closed loops, each with its own request and
// concurrency, on one time line: they run through the warm-up into the measured phase without a break, and each
// records the requests it starts in the measured phase.

import { failureStatus, isDeadlineExceeded } from "./clients.ts";

/** Sends one request; resolves to the response size in bytes (0 when unknown); rejects on error or abort. */
export type Send = (signal: AbortSignal) => Promise<number>;

export interface LatencyStats {
  n: number;
  errors: number;
  /** Requests the server answered with its deadline error (504 / DEADLINE_EXCEEDED): shed, counted apart from errors. */
  deadlineExceeded: number;
  /** Requests aborted at maxRunMs (their latency is above it). */
  censored: number;
  firstError?: string;
  /** Failed requests (errors and shed ones) by the status they were answered with: HTTP status, gRPC code name. */
  failuresByStatus: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Mean of the completed requests. */
  mean: number;
  /** Completed requests per second. */
  rps: number;
  elapsedMs: number;
  /** Mean response size (0 when the client does not see bytes). */
  bytesPerRequest: number;
}

export interface LoadOptions {
  concurrency: number;
  warmupMs: number;
  durationMs: number;
  /** 0 = no bound. */
  maxRequests: number;
  /** Hard bound of the measured phase, drain included; also bounds the warm-up. */
  maxRunMs: number;
  /** Called right before and right after the measured phase (CPU readings). */
  onMeasured?: (phase: "start" | "end") => void;
}

/** After this many errors a run stops: the numbers would be meaningless. */
const maxErrors = 200;

interface LoopResult {
  latencies: number[];
  completed: number;
  errors: number;
  deadlineExceeded: number;
  /** Time to the deadline answer of each shed request: they count in the percentiles (not in n or req/s). */
  shedLatencies: number[];
  censored: number;
  firstError: string | undefined;
  failuresByStatus: Record<string, number>;
  bytes: number;
  elapsedMs: number;
  aborted: boolean;
}

/** The time line of one loop, in ms from its start. */
interface LoopPhase {
  /** No request starts from this time on. */
  stopMs: number;
  /** Requests still in flight then are aborted (censored). */
  abortMs: number;
  /** Requests started from this time on are recorded, in the latencies and the counts; Infinity: none (a warm-up). */
  recordFromMs: number;
  /** Recorded requests after which no request starts; 0 = no bound. */
  maxRequests: number;
}

/** intervalMs: each worker starts at most one request per interval (0: the next one as soon as one is answered). */
async function loop(send: Send, concurrency: number, phase: LoopPhase, intervalMs = 0): Promise<LoopResult> {
  const start = performance.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), phase.abortMs);
  const r: LoopResult = {
    latencies: [],
    completed: 0,
    errors: 0,
    deadlineExceeded: 0,
    shedLatencies: [],
    censored: 0,
    firstError: undefined,
    failuresByStatus: {},
    bytes: 0,
    elapsedMs: 0,
    aborted: false,
  };
  let issued = 0;
  const worker = async () => {
    while (performance.now() - start < phase.stopMs && (phase.maxRequests === 0 || issued < phase.maxRequests) && r.errors < maxErrors && !controller.signal.aborted) {
      const t0 = performance.now();
      const record = t0 - start >= phase.recordFromMs;
      if (record) issued++;
      try {
        const size = await send(controller.signal);
        r.completed++;
        if (!record) continue;
        r.bytes += size;
        r.latencies.push(performance.now() - t0);
      } catch (err) {
        if (!record) continue;
        if (controller.signal.aborted) {
          r.censored++;
          continue;
        }
        const status = failureStatus(err);
        r.failuresByStatus[status] = (r.failuresByStatus[status] ?? 0) + 1;
        if (isDeadlineExceeded(err)) {
          r.deadlineExceeded++;
          r.shedLatencies.push(performance.now() - t0);
        } else {
          r.errors++;
          r.firstError ??= err instanceof Error ? err.message : String(err);
        }
      } finally {
        const pause = t0 + intervalMs - performance.now();
        if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearTimeout(timer);
  r.aborted = controller.signal.aborted;
  r.elapsedMs = performance.now() - start - (Number.isFinite(phase.recordFromMs) ? phase.recordFromMs : 0);
  return r;
}

/** The q-quantile of sorted samples, by nearest rank (the smallest value with at least q of them at or below it). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

export function stats(
  r: Pick<LoopResult, "latencies" | "errors" | "censored" | "elapsedMs" | "bytes" | "firstError"> &
    Partial<Pick<LoopResult, "deadlineExceeded" | "shedLatencies" | "failuresByStatus">>,
): LatencyStats {
  const completed = Float64Array.from(r.latencies);
  let sum = 0;
  for (const v of completed) sum += v;
  const shed = r.shedLatencies ?? [];
  const all = new Float64Array(completed.length + shed.length + r.censored);
  all.set(completed);
  all.set(shed, completed.length);
  all.fill(Number.POSITIVE_INFINITY, completed.length + shed.length);
  all.sort();
  const n = completed.length;
  return {
    n,
    errors: r.errors,
    deadlineExceeded: r.deadlineExceeded ?? 0,
    censored: r.censored,
    firstError: r.firstError,
    failuresByStatus: r.failuresByStatus ?? {},
    p50: quantile(all, 0.5),
    p90: quantile(all, 0.9),
    p99: quantile(all, 0.99),
    max: all.length > 0 ? (all[all.length - 1] ?? Number.NaN) : Number.NaN,
    mean: n > 0 ? sum / n : Number.NaN,
    rps: r.elapsedMs > 0 ? (n / r.elapsedMs) * 1000 : 0,
    elapsedMs: r.elapsedMs,
    bytesPerRequest: n > 0 ? r.bytes / n : 0,
  };
}

export interface LoadResult {
  stats: LatencyStats;
  /** Whether anything was aborted (the server may still be finishing that work). */
  aborted: boolean;
}

export async function runLoad(send: Send, options: LoadOptions): Promise<LoadResult> {
  let aborted = false;
  if (options.warmupMs > 0) {
    const half = options.warmupMs / 2;
    const warmup: LoopPhase = { stopMs: half, abortMs: options.maxRunMs, recordFromMs: Number.POSITIVE_INFINITY, maxRequests: 0 };
    const probe = await loop(send, 1, warmup);
    aborted ||= probe.aborted;
    if (probe.completed >= 3 && options.concurrency > 1) {
      const full = await loop(send, options.concurrency, warmup);
      aborted ||= full.aborted;
    }
  }
  options.onMeasured?.("start");
  const run = await loop(send, options.concurrency, { stopMs: options.durationMs, abortMs: options.maxRunMs, recordFromMs: 0, maxRequests: options.maxRequests });
  options.onMeasured?.("end");
  return { stats: stats(run), aborted: aborted || run.aborted };
}

export interface SimultaneousLoad {
  send: Send;
  concurrency: number;
  /** Each client starts at most one request per interval; 0 or absent: back to back. */
  intervalMs?: number;
}

export interface SimultaneousOptions {
  warmupMs: number;
  durationMs: number;
  /** How long requests still in flight at the end of the measured phase are waited for before they are aborted. */
  drainMs: number;
  /** Called when the measured phase starts and when it ends (not when the drain does). */
  onMeasured?: (phase: "start" | "end") => void;
}

/**
 * Several closed loops at once (heavy pages and the probes measured behind them), started together. Unlike runLoad
 * the warm-up runs straight into the measured phase: draining it first would let the heavy load fall away just as
 * measuring starts. Each loop records the requests it starts in the measured phase; no request starts after it,
 * and those in flight then are waited for up to drainMs, then aborted (censored). Each load comes back with its
 * result.
 */
export async function runSimultaneously<L extends SimultaneousLoad>(loads: readonly L[], options: SimultaneousOptions): Promise<(L & LoadResult)[]> {
  const endMs = options.warmupMs + options.durationMs;
  const phase: LoopPhase = { stopMs: endMs, abortMs: endMs + options.drainMs, recordFromMs: options.warmupMs, maxRequests: 0 };
  const at = (ms: number, mark: "start" | "end") =>
    new Promise<void>((resolve) =>
      setTimeout(() => {
        options.onMeasured?.(mark);
        resolve();
      }, ms),
    );
  const run = async (load: L) => {
    const r = await loop(load.send, load.concurrency, phase, load.intervalMs);
    return { ...load, stats: stats(r), aborted: r.aborted };
  };
  const [results] = await Promise.all([Promise.all(loads.map(run)), at(options.warmupMs, "start"), at(endMs, "end")]);
  return results;
}
