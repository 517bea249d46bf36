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

import { isDeadlineExceeded } from "./clients.ts";

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
  bytes: number;
  elapsedMs: number;
  aborted: boolean;
}

async function loop(send: Send, concurrency: number, stopMs: number, abortMs: number, maxRequests: number, record: boolean): Promise<LoopResult> {
  const start = performance.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), abortMs);
  const r: LoopResult = { latencies: [], completed: 0, errors: 0, deadlineExceeded: 0, shedLatencies: [], censored: 0, firstError: undefined, bytes: 0, elapsedMs: 0, aborted: false };
  let issued = 0;
  const worker = async () => {
    while (performance.now() - start < stopMs && (maxRequests === 0 || issued < maxRequests) && r.errors < maxErrors && !controller.signal.aborted) {
      issued++;
      const t0 = performance.now();
      try {
        const size = await send(controller.signal);
        r.bytes += size;
        r.completed++;
        if (record) r.latencies.push(performance.now() - t0);
      } catch (err) {
        if (controller.signal.aborted) {
          r.censored++;
        } else if (isDeadlineExceeded(err)) {
          r.deadlineExceeded++;
          if (record) r.shedLatencies.push(performance.now() - t0);
        } else {
          r.errors++;
          r.firstError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearTimeout(timer);
  r.aborted = controller.signal.aborted;
  r.elapsedMs = performance.now() - start;
  return r;
}

function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

export function stats(r: Pick<LoopResult, "latencies" | "errors" | "censored" | "elapsedMs" | "bytes" | "firstError"> & Partial<Pick<LoopResult, "deadlineExceeded" | "shedLatencies">>): LatencyStats {
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
    const probe = await loop(send, 1, half, options.maxRunMs, 0, false);
    aborted ||= probe.aborted;
    if (probe.completed >= 3 && options.concurrency > 1) {
      const full = await loop(send, options.concurrency, half, options.maxRunMs, 0, false);
      aborted ||= full.aborted;
    }
  }
  options.onMeasured?.("start");
  const run = await loop(send, options.concurrency, options.durationMs, options.maxRunMs, options.maxRequests, true);
  options.onMeasured?.("end");
  return { stats: stats(run), aborted: aborted || run.aborted };
}
