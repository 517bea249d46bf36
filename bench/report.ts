// Targets, the JSON result and the Markdown table.

import os from "node:os";
import type { BenchOptions, Protocol } from "./args.ts";
import type { BenchCase, DatasetFacts } from "./cases.ts";
import type { CapturedStatement, ResponseSummary } from "./capture.ts";
import type { StatementPlans } from "./explain.ts";
import { answerCutStatus } from "./clients.ts";
import { type LatencyStats, quantile } from "./load.ts";

export type RunProtocol = Protocol | "floor";

export interface RunResult {
  case: string;
  protocol: RunProtocol;
  concurrency: number;
  stats: LatencyStats;
  /** CPU per completed request, in ms: the server process, every postgres process, the bench process. */
  cpuPerRequestMs: { server: number; postgres: number; bench: number };
  /** Peak VmRSS of the server during the run (server runs only). */
  peakRssMb?: number;
  /**
   * The rest of the machine during the run, in cores (CPU ms over the run's ms): processes other than the server,
   * the bench's PostgreSQL backends and the bench; idle; taken by the hypervisor. Absent from round3h and earlier runs.
   */
  machineCores?: { others: number; idle: number; steal: number };
  /**
   * The server's event loop thread per completed request, in ms: on a core, and runnable but waiting for one (the
   * run queue: the cores were taken by PostgreSQL, the load generator or the server's own other threads). Their sum
   * over the run's time is how busy the one thread every request passes through was. Absent from round3i and earlier.
   */
  eventLoopPerRequestMs?: { run: number; wait: number };
}

/** One kind of request of a mixed-load scenario: the heavy clients' pages, or one probe. */
export interface MixedLoadRequests {
  role: "heavy" | "probe";
  case: string;
  restPath: string;
  protocol: Protocol;
  /** Closed-loop clients sending it. */
  clients: number;
  stats: LatencyStats;
}

export interface MixedLoadResult {
  /** mixed.rest, mixed.grpc (the protocol of the heavy clients). */
  scenario: string;
  warmupMs: number;
  durationMs: number;
  /** How long requests in flight at the end of the measured time were waited for; those aborted then show as "> drainMs". */
  drainMs: number;
  /** The heavy pages first, then each probe. */
  requests: MixedLoadRequests[];
  /** CPU over the measured time in cores: the server process, the PostgreSQL backends of the bench's database. */
  cpuCores: { server: number; postgres: number };
  peakRssMb: number;
  /** The live writer during the run (scenarios .writer): asked rate and what it committed (--writer-rate). */
  writer?: { rate: number; batchesPerSecond: number; transactionsPerSecond: number };
}

export interface CaseResult {
  id: string;
  title: string;
  method: string;
  restPath: string;
  request: unknown;
  response: ResponseSummary;
  /** The handler's statements; long parameter lists are shortened here (the replay used them whole). */
  statements: (Omit<CapturedStatement, "parameters"> & { parameters: unknown[]; plans?: StatementPlans })[];
  debugCount: number;
  /** Answers of each protocol that did not match the handler's in-process answer. */
  checks: { protocol: Protocol; ok: boolean; detail: string }[];
}

/** Which round's targets a line belongs to: the table reads issue 25's first, then the older ones, then the run's own. */
export type TargetGroup = "issue25" | "earlier" | "run";

export const targetGroupTitles: Record<TargetGroup, string> = {
  issue25: "Issue 25 (performance round 3)",
  earlier: "Earlier rounds' targets (issues 14 and 23)",
  run: "The run itself",
};

export interface Target {
  group: TargetGroup;
  name: string;
  /** null: not measured in this run (the cases or protocols it needs were not selected). */
  pass: boolean | null;
  /** Failing: why, in measured numbers; holding: by what margin. */
  detail: string;
  failures: string[];
}

export interface BenchResult {
  startedAt: string;
  finishedAt: string;
  durationS: number;
  options: Omit<BenchOptions, "databaseUrl"> & { database: string };
  environment: Record<string, string | number>;
  dataset: DatasetFacts;
  server: {
    pid: number;
    poolSize: number;
    /** VmHWM of the last server process, or the sampled peak of one that died, whichever is higher. */
    peakRssMb: number;
    finalRssMb: number;
    sampledPeakRssMb: number;
    crashes: { case: string; protocol: RunProtocol; concurrency: number; code: number | null; signal: string | null; peakRssMb: number }[];
  };
  cases: CaseResult[];
  runs: RunResult[];
  mixed: MixedLoadResult[];
  targets: Target[];
}

export const targetsSpec = {
  /** The page cases the floor targets judge: every trace, adjacentTransactions and getBlockTransactionsExt case. */
  pageOps: ["traces", "adjacentTransactions", "getBlockTransactionsExt"],
  /** The handler methods of those cases, as a result's cases record them (bench/compare.ts). */
  pageMethods: ["getTraces", "getAdjacentTransactions", "getBlockTransactionsExt"],
  /** Issue 25: at this concurrency every page case reaches this share of its floor's throughput (req/s)... */
  throughputConcurrency: 16,
  throughputOfFloor: 0.8,
  /** ...and the server spends no more CPU per page than PostgreSQL does (server CPU / PostgreSQL CPU at most this). */
  serverCpuOfPostgres: 1,
  /** Issue 14, kept by issue 25: p50 over the SQL floor at concurrency 1. */
  floorRatio: { rest: 1.3, rpc: 1.5 },
  /** Issue 25: VmHWM of the server over the whole bench (issue 14: 300 MB). */
  rssMb: 250,
  /** The concurrency at which no request may be shed at the deadline, unless the floor alone takes that long. */
  deadlineConcurrency: 16,
  /** Issue 25: masterchainInfo over REST at this concurrency, at least this multiple of its floor statement's own rate (issue 14: 4,000 req/s). */
  masterchainInfoConcurrency: 16,
  masterchainInfoOfFloor: 1.5,
  // Earlier rounds' targets.
  hotVsCold: 2,
  limit100P50Ms: 100,
  limit100Transactions: 2_000_000,
  /** p99 of every probe of a mixed-load scenario, at the default 6 heavy clients. */
  mixedProbeP99Ms: 100,
};

/** The concurrency-1 bound of a door's p50 over the floor's (issue 14). */
export const floorRatioBound = (protocol: RunProtocol) => (protocol === "rest" ? targetsSpec.floorRatio.rest : targetsSpec.floorRatio.rpc);

const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : "—");
const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)) : "—");

/** Latency for the tables: an aborted request (+∞) shows as slower than the bound it was aborted at. */
const latency = (v: number, boundMs: number) => (v === Number.POSITIVE_INFINITY ? `> ${boundMs}` : ms(v));

/** Failed requests by status, then the aborted ones: "504 × 3, DEADLINE_EXCEEDED × 1, aborted × 2", or "none". */
export function failuresText(stats: LatencyStats): string {
  const parts = Object.entries(stats.failuresByStatus ?? {}).map(([status, n]) => `${status} × ${n}`);
  if (stats.censored > 0) parts.push(`aborted × ${stats.censored}`);
  return parts.length === 0 ? "none" : parts.join(", ");
}

const failedCount = (stats: LatencyStats) => stats.errors + stats.deadlineExceeded + stats.censored;

/** Whether the server and the floor's client were warmed with every case first (--server-warmup-ms; runs before it had no such option). */
function serverWarmup(options: BenchResult["options"]): string {
  const ms = options.serverWarmupMs ?? 0;
  return ms > 0 ? `after every case was sent over every protocol and replayed as the floor for ${ms} ms (--server-warmup-ms)` : "the server not warmed with every case first";
}

function writerText(w: NonNullable<MixedLoadResult["writer"]>): string {
  return `live writer: ${fmt(w.batchesPerSecond, 1)} masterchain blocks/s committed (${w.rate}/s asked), ${fmt(w.transactionsPerSecond, 0)} transactions/s`;
}

/** The console lines of a mixed-load scenario's result. */
export function mixedText(r: MixedLoadResult): string {
  const lat = (v: number) => latency(v, r.drainMs).padStart(7);
  const lines = r.requests.map(
    (q) =>
      `  ${q.role.padEnd(5)} ${q.case.padEnd(24)} ${q.protocol.padEnd(5)} c=${String(q.clients).padEnd(3)} n=${String(q.stats.n).padEnd(6)} p50 ${lat(q.stats.p50)} ms  p99 ${lat(q.stats.p99)} ms  max ${lat(q.stats.max)} ms  failed: ${failuresText(q.stats)}`,
  );
  lines.push(`  CPU over the measured time: server ${fmt(r.cpuCores.server, 2)} cores, PostgreSQL ${fmt(r.cpuCores.postgres, 2)} cores; peak RSS ${fmt(r.peakRssMb, 0)} MB`);
  if (r.writer !== undefined) lines.push(`  ${writerText(r.writer)}`);
  return lines.join("\n");
}

function shedSummary(runs: number, shed: number): string {
  return shed === 0 ? `${runs} runs, none shed` : `${shed} of ${runs} runs shed requests`;
}

/**
 * Why a run missed its floor bound at concurrency 1, from what the run measured: the time over the floor, and the
 * server's own CPU per request next to what the bound leaves it (at concurrency 1 the server's work adds to the floor's).
 */
function floorGapReason(run: RunResult, floor: RunResult, bound: number): string {
  const over = run.stats.p50 - floor.stats.p50;
  const allowed = (bound - 1) * floor.stats.p50;
  const loop = run.eventLoopPerRequestMs;
  const waited = loop === undefined ? "" : `, its event loop ${ms(loop.run)} ms on a core and ${ms(loop.wait)} ms waiting for one`;
  return `${ms(over)} ms over the floor where ${ms(allowed)} ms is allowed; server CPU ${ms(run.cpuPerRequestMs.server)} ms/req${waited}`;
}

/** CPU of a run in cores: CPU per request × requests per second. */
const cores = (cpuMsPerRequest: number, rps: number) => (cpuMsPerRequest * rps) / 1000;

/**
 * What a run at concurrency 16 spent per request and how much of the machine that was: at that concurrency the
 * server, PostgreSQL and the load generator share the cores, so the CPU per request bounds the throughput; where the
 * three together take less than the cores, something else (waiting, another process) held the run back.
 */
function cpuShareReason(run: RunResult, cpus: number, unit: string): string {
  const c = run.cpuPerRequestMs;
  const m = run.machineCores;
  const rest = m === undefined ? "" : `, other processes ${fmt(m.others, 2)}, idle ${fmt(m.idle, 2)}, taken by the hypervisor ${fmt(m.steal, 2)}`;
  return `${eventLoopReason(run)}server CPU ${ms(c.server)} ms vs PostgreSQL ${ms(c.postgres)} ms per ${unit}; the server's CPU makes up ${fmt(cores(c.server, run.stats.rps), 2)} of the ${cpus} cores at c${run.concurrency}, PostgreSQL's ${fmt(cores(c.postgres, run.stats.rps), 2)}, the load generator's ${fmt(cores(c.bench, run.stats.rps), 2)}${rest}`;
}

/** CPU a request cost every process of a run: the server's (none for the floor), PostgreSQL's and the load generator's. */
const totalCpuMs = (run: RunResult) => run.cpuPerRequestMs.server + run.cpuPerRequestMs.postgres + run.cpuPerRequestMs.bench;

/**
 * The rate a run reaches over its floor's, as the two runs' CPU per request predict it: at concurrency 16 the
 * processes fill the cores, so each reaches about the cores over its CPU per request, and the ratio of the rates is
 * the inverse ratio of the CPUs. `fit` is how far the bench's runs fall short of that prediction (their idle share),
 * measured over all of them.
 */
export interface CpuBudget {
  /** CPU per request, all processes, at which the run would reach `bound` of its floor's rate. */
  allowedMs: number;
  /** What of it is left to the server once PostgreSQL and the load generator have spent theirs (can be negative). */
  serverMs: number;
}

export function cpuBudget(run: RunResult, floor: RunResult, fit: number, bound: number): CpuBudget {
  const allowedMs = (totalCpuMs(floor) * fit) / bound;
  return { allowedMs, serverMs: allowedMs - run.cpuPerRequestMs.postgres - run.cpuPerRequestMs.bench };
}

/** Measured rate ratio over the CPU-predicted one, for each run with its floor: sorted. */
function cpuFits(pairs: readonly { run: RunResult; floor: RunResult }[]): number[] {
  const fits: number[] = [];
  for (const { run, floor } of pairs) {
    const predicted = totalCpuMs(floor) / totalCpuMs(run);
    if (predicted > 0 && Number.isFinite(predicted) && floor.stats.rps > 0) fits.push(run.stats.rps / floor.stats.rps / predicted);
  }
  return fits.sort((a, b) => a - b);
}

/**
 * The server's event loop at the run's rate: what it spent on a core and waiting for one per request, and the share
 * of the run's time the two fill. Near 1 the one thread is the bottleneck; its waiting is time the cores went to
 * other processes (or the server's own other threads) while it had work. The rest of the server's CPU is its other
 * threads': V8's workers (parallel scavenges, concurrent marking and sweeping); libuv's pool has no work here.
 */
function eventLoopReason(run: RunResult): string {
  const loop = run.eventLoopPerRequestMs;
  if (loop === undefined) return "";
  const otherThreads = run.cpuPerRequestMs.server - loop.run;
  return `the server's event loop ran ${ms(loop.run)} ms and waited ${ms(loop.wait)} ms for a core per request, busy ${fmt(cores(loop.run + loop.wait, run.stats.rps), 2)} of its time, its other threads (the collector's helpers) ran ${ms(otherThreads)} ms; `;
}

/** "12% above the bound", "3% below it": how far a ratio is from its bound, for the passing lines' margins. */
function margin(value: number, bound: number, higherIsBetter: boolean): string {
  const share = higherIsBetter ? value / bound - 1 : 1 - value / bound;
  return `${fmt(Math.abs(share) * 100, 0)} % ${share >= 0 ? "inside" : "outside"} the bound`;
}

const runLabel = (r: RunResult) => `${r.case} ${r.protocol}`;

export function findRun(runs: readonly RunResult[], caseId: string, protocol: RunProtocol, concurrency: number): RunResult | undefined {
  return runs.find((r) => r.case === caseId && r.protocol === protocol && r.concurrency === concurrency);
}

/**
 * The targets of the run, issue 25's first (group "issue25"), then the earlier rounds' that still hold meaning
 * ("earlier"), then the run's own soundness ("run"). Each failing line says why in measured numbers; each holding one
 * its margin. `cpus`: the cores the server, PostgreSQL and the load generator share.
 */
export function evaluateTargets(
  cases: readonly BenchCase[],
  runs: readonly RunResult[],
  dataset: DatasetFacts,
  peakRssMb: number,
  crashes: BenchResult["server"]["crashes"],
  mixed: readonly MixedLoadResult[],
  deadlineMs: number,
  cpus: number = os.availableParallelism(),
): Target[] {
  const targets: Target[] = [];
  const serverRuns = runs.filter((r) => r.protocol !== "floor");
  const pageOps = new Set<string>(targetsSpec.pageOps);
  const pageCases = new Set(cases.filter((c) => pageOps.has(String(c.tags.op))).map((c) => c.id));
  const c16 = targetsSpec.throughputConcurrency;
  const pageRunsAt16 = serverRuns.filter((r) => r.concurrency === c16 && pageCases.has(r.case));

  // Issue 25: throughput at concurrency 16 against the floor's.
  {
    const failures: string[] = [];
    let tightest: { run: RunResult; ratio: number } | undefined;
    const pairs: { run: RunResult; floor: RunResult }[] = [];
    for (const r of pageRunsAt16) {
      const floor = findRun(runs, r.case, "floor", c16);
      if (floor !== undefined && floor.stats.rps > 0) pairs.push({ run: r, floor });
    }
    const checked = pairs.length;
    const fits = cpuFits(pairs);
    const fit = fits.length === 0 ? 1 : quantile(fits, 0.5);
    let beyondAnyServer = 0;
    let beyondReadingTheRows = 0;
    for (const { run: r, floor } of pairs) {
      const ratio = r.stats.rps / floor.stats.rps;
      if (tightest === undefined || ratio < tightest.ratio) tightest = { run: r, ratio };
      if (!(ratio >= targetsSpec.throughputOfFloor)) {
        const budget = cpuBudget(r, floor, fit, targetsSpec.throughputOfFloor);
        // The floor's client reads the same rows with the same driver and does nothing else with them: a server that
        // must read them at least as the floor does cannot spend less.
        const readingTheRowsMs = floor.cpuPerRequestMs.bench;
        const belowReadingTheRows = budget.serverMs > 0 && budget.serverMs < readingTheRowsMs;
        if (budget.serverMs <= 0) beyondAnyServer++;
        else if (belowReadingTheRows) beyondReadingTheRows++;
        const left =
          budget.serverMs <= 0
            ? "leave the server nothing: no server reaches it in this run"
            : `leave the server ${ms(budget.serverMs)} ms (it spent ${ms(r.cpuPerRequestMs.server)}, ×${fmt(r.cpuPerRequestMs.server / budget.serverMs, 2)} of that)${
                belowReadingTheRows
                  ? `, less than the floor's client spent reading the same rows (${ms(readingTheRowsMs)} ms): no server that reads them with this driver reaches it in this run`
                  : ""
              }`;
        failures.push(
          `${runLabel(r)}: ${fmt(r.stats.rps, r.stats.rps < 10 ? 1 : 0)} vs floor ${fmt(floor.stats.rps, floor.stats.rps < 10 ? 1 : 0)} req/s (×${fmt(ratio, 2)} < ${targetsSpec.throughputOfFloor}); ${cpuShareReason(r, cpus, "request")}; the floor's PostgreSQL ${ms(floor.cpuPerRequestMs.postgres)} ms + its client ${ms(floor.cpuPerRequestMs.bench)} ms per request; ×${targetsSpec.throughputOfFloor} allows ${ms(budget.allowedMs)} ms of CPU per request in all, where this run's PostgreSQL ${ms(r.cpuPerRequestMs.postgres)} ms and load generator ${ms(r.cpuPerRequestMs.bench)} ms ${left}`,
        );
      }
    }
    // Why they fail, in one line: the CPU per request the rates follow, and how many no server could have held.
    const cpuModel =
      fits.length === 0 || failures.length === 0
        ? ""
        : `; the rates follow the CPU per request (a run's rate over its floor's, measured, over what their CPU per request predicts: median ×${fmt(fit, 2)}, ×${fmt(quantile(fits, 0.1), 2)}-${fmt(quantile(fits, 0.9), 2)} from the 10th to the 90th percentile of ${fits.length} runs); ${beyondAnyServer} of the ${failures.length} failing would fail with a server that spent no CPU, ${beyondReadingTheRows} more with one that spent only what the floor's client spends reading the rows with the same driver`;
    targets.push({
      group: "issue25",
      name: `throughput ≥ ${targetsSpec.throughputOfFloor}× the SQL floor's at concurrency ${c16}, every trace, adjacentTransactions and getBlockTransactionsExt case`,
      pass: checked === 0 ? null : failures.length === 0,
      detail:
        checked === 0 || tightest === undefined
          ? `no floor measured at concurrency ${c16}`
          : `${checked - failures.length}/${checked} hold; ${failures.length === 0 ? "tightest" : "worst"} ${runLabel(tightest.run)} ×${fmt(tightest.ratio, 2)} of the floor's req/s (${margin(tightest.ratio, targetsSpec.throughputOfFloor, true)})${cpuModel}`,
      failures,
    });
  }

  // Issue 25: the server's CPU per page at most PostgreSQL's.
  {
    const failures: string[] = [];
    let worst: { run: RunResult; ratio: number } | undefined;
    let checked = 0;
    for (const r of pageRunsAt16) {
      const { server, postgres } = r.cpuPerRequestMs;
      if (!(postgres > 0) || !Number.isFinite(server)) continue;
      checked++;
      const ratio = server / postgres;
      if (worst === undefined || ratio > worst.ratio) worst = { run: r, ratio };
      if (!(ratio <= targetsSpec.serverCpuOfPostgres)) failures.push(`${runLabel(r)}: ${cpuShareReason(r, cpus, "page")} (×${fmt(ratio, 2)})`);
    }
    targets.push({
      group: "issue25",
      name: `server CPU per request ≤ PostgreSQL's, every trace, adjacentTransactions and getBlockTransactionsExt case (concurrency ${c16})`,
      pass: checked === 0 ? null : failures.length === 0,
      detail:
        checked === 0 || worst === undefined
          ? `no page case run at concurrency ${c16}`
          : `${checked - failures.length}/${checked} hold; worst ${runLabel(worst.run)}: server ${ms(worst.run.cpuPerRequestMs.server)} ms vs PostgreSQL ${ms(worst.run.cpuPerRequestMs.postgres)} ms (×${fmt(worst.ratio, 2)}, ${margin(worst.ratio, targetsSpec.serverCpuOfPostgres, false)})`,
      failures,
    });
  }

  // Issue 14's floor ratio at concurrency 1, kept by issue 25.
  {
    const failures: string[] = [];
    let checked = 0;
    let worst: { run: RunResult; ratio: number; bound: number } | undefined;
    for (const r of serverRuns.filter((r) => r.concurrency === 1 && pageCases.has(r.case))) {
      const floor = findRun(runs, r.case, "floor", 1);
      if (floor === undefined || !(floor.stats.p50 > 0)) continue;
      checked++;
      const bound = floorRatioBound(r.protocol);
      const ratio = r.stats.p50 / floor.stats.p50;
      if (worst === undefined || ratio / bound > worst.ratio / worst.bound) worst = { run: r, ratio, bound };
      if (!(ratio <= bound)) failures.push(`${runLabel(r)}: ${ms(r.stats.p50)} ms vs floor ${ms(floor.stats.p50)} ms (×${fmt(ratio, 2)} > ${bound}); ${floorGapReason(r, floor, bound)}`);
    }
    targets.push({
      group: "issue25",
      name: `p50 ≤ ${targetsSpec.floorRatio.rest}× the SQL floor over REST and ≤ ${targetsSpec.floorRatio.rpc}× over Connect/gRPC, every trace, adjacentTransactions and getBlockTransactionsExt case at concurrency 1`,
      pass: checked === 0 ? null : failures.length === 0,
      detail:
        checked === 0 || worst === undefined
          ? "no floor measured at concurrency 1"
          : `${checked - failures.length}/${checked} hold; ${failures.length === 0 ? "tightest" : "worst"} ${runLabel(worst.run)} ×${fmt(worst.ratio, 2)} where ${worst.bound} is allowed (${margin(worst.ratio, worst.bound, false)})`,
      failures,
    });
  }

  {
    const runsByPeak = serverRuns.filter((r) => Number.isFinite(r.peakRssMb ?? Number.NaN));
    const highest = runsByPeak.reduce<RunResult | undefined>((w, r) => (w === undefined || (r.peakRssMb ?? 0) > (w.peakRssMb ?? 0) ? r : w), undefined);
    const first = runsByPeak[0];
    const where = [
      highest ? `highest in a run: ${fmt(highest.peakRssMb ?? Number.NaN, 0)} MB in ${runLabel(highest)} c=${highest.concurrency}` : "",
      first ? `the first run (${runLabel(first)} c=${first.concurrency}) already ${fmt(first.peakRssMb ?? Number.NaN, 0)} MB` : "",
    ].filter((s) => s !== "");
    const pass = Number.isFinite(peakRssMb) ? peakRssMb <= targetsSpec.rssMb : null;
    const against = pass === null ? "" : pass ? `, ${fmt(targetsSpec.rssMb - peakRssMb, 0)} MB below the bound` : `, ${fmt(peakRssMb - targetsSpec.rssMb, 0)} MB above the bound`;
    targets.push({
      group: "issue25",
      name: `server peak RSS ≤ ${targetsSpec.rssMb} MB over the whole bench`,
      pass,
      detail: `peak ${fmt(peakRssMb, 0)} MB (VmHWM of the server process over the whole bench)${against}${where.length ? `; ${where.join("; ")}` : ""}`,
      failures: [],
    });
  }

  {
    // The floor replays the page's statements without the server: when even it takes longer than the deadline at
    // this concurrency, no service could answer in time, and the case is excused.
    const atBound = serverRuns.filter((r) => r.concurrency === targetsSpec.deadlineConcurrency);
    const excused: string[] = [];
    const failures: string[] = [];
    for (const r of atBound.filter((r) => (r.stats.deadlineExceeded ?? 0) > 0)) {
      const floor = findRun(runs, r.case, "floor", r.concurrency);
      const cut = r.stats.failuresByStatus[answerCutStatus] ?? 0;
      const line = `${runLabel(r)}: ${r.stats.deadlineExceeded} past the deadline${cut > 0 ? ` (${cut} of them cut after their head)` : ""}, ${r.stats.n} answered${floor ? `; floor p50 ${latency(floor.stats.p50, deadlineMs)} ms, p99 ${latency(floor.stats.p99, deadlineMs)} ms` : ""}`;
      if (floor !== undefined && floor.stats.p99 >= deadlineMs) excused.push(line);
      else failures.push(line);
    }
    const slowest = atBound.reduce<RunResult | undefined>((w, r) => (w === undefined || r.stats.p99 > w.stats.p99 ? r : w), undefined);
    const headroom = failures.length === 0 && slowest ? `; slowest p99 ${latency(slowest.stats.p99, deadlineMs)} ms (${runLabel(slowest)})` : "";
    targets.push({
      group: "issue25",
      name: `no 504 / DEADLINE_EXCEEDED (nor a streamed answer cut) at concurrency ${targetsSpec.deadlineConcurrency}, except where the floor's p99 alone reaches the deadline (${deadlineMs} ms)`,
      pass: atBound.length === 0 ? null : failures.length === 0,
      detail: atBound.length === 0 ? "not run" : [shedSummary(atBound.length, failures.length + excused.length) + headroom, ...(excused.length === 0 ? [] : [`excused: ${excused.join("; ")}`])].join("; "),
      failures,
    });
  }

  {
    const c = targetsSpec.masterchainInfoConcurrency;
    const run = findRun(serverRuns, "masterchainInfo", "rest", c);
    const floor = findRun(runs, "masterchainInfo", "floor", c);
    const ratio = run && floor ? run.stats.rps / floor.stats.rps : Number.NaN;
    const pass = run === undefined || floor === undefined ? null : ratio >= targetsSpec.masterchainInfoOfFloor;
    targets.push({
      group: "issue25",
      name: `masterchainInfo over REST at concurrency ${c} ≥ ${targetsSpec.masterchainInfoOfFloor}× its floor statement's own rate`,
      pass,
      detail:
        run === undefined || floor === undefined
          ? `not run (needs masterchainInfo over REST and its floor at concurrency ${c})`
          : `${fmt(run.stats.rps, 0)} vs the floor's ${fmt(floor.stats.rps, 0)} req/s (×${fmt(ratio, 2)}, ${margin(ratio, targetsSpec.masterchainInfoOfFloor, true)})${pass ? "" : `; ${cpuShareReason(run, cpus, "request")}; the floor's PostgreSQL ${ms(floor.cpuPerRequestMs.postgres)} ms + its client ${ms(floor.cpuPerRequestMs.bench)} ms per request`}`,
      failures: [],
    });
  }

  // Earlier rounds' targets that still mean something.
  {
    const failures: string[] = [];
    let checked = 0;
    let worst = 0;
    const details: string[] = [];
    for (const hot of cases.filter((c) => c.tags.op === "traces" && c.tags.selector === "hot" && !c.tags.actions && !c.tags.offset && !c.tags.encoding && !c.tags.cursor)) {
      const cold = cases.find((c) => c.tags.op === "traces" && c.tags.selector === "cold" && c.tags.limit === hot.tags.limit && !c.tags.actions && !c.tags.offset);
      if (cold === undefined) continue;
      for (const r of serverRuns.filter((r) => r.case === hot.id && r.concurrency === 1)) {
        const rc = findRun(runs, cold.id, r.protocol, 1);
        if (rc === undefined) continue;
        checked++;
        const ratio = r.stats.p50 / rc.stats.p50;
        worst = Math.max(worst, ratio);
        if (r.protocol === "rest") details.push(`limit ${hot.tags.limit}: ×${fmt(ratio, 2)}`);
        if (!(ratio <= targetsSpec.hotVsCold)) failures.push(`limit ${hot.tags.limit} ${r.protocol}: hot ${ms(r.stats.p50)} ms vs cold ${ms(rc.stats.p50)} ms (×${fmt(ratio, 2)})`);
      }
    }
    targets.push({
      group: "earlier",
      name: `traces: hot account p50 within ${targetsSpec.hotVsCold}× the cold account's at the same limit (concurrency 1)`,
      pass: checked === 0 ? null : failures.length === 0,
      detail: checked === 0 ? "hot/cold cases not run" : `${checked - failures.length}/${checked} hold; worst ×${fmt(worst, 2)}${details.length ? ` (REST ${details.join(", ")})` : ""}`,
      failures,
    });
  }

  {
    const failures: string[] = [];
    const limit100 = new Set(cases.filter((c) => c.tags.limit === 100).map((c) => c.id));
    const checkedRuns = serverRuns.filter((r) => limit100.has(r.case) && r.concurrency === 1);
    let worst: RunResult | undefined;
    for (const r of checkedRuns) {
      if (worst === undefined || r.stats.p50 > worst.stats.p50) worst = r;
      if (!(r.stats.p50 <= targetsSpec.limit100P50Ms)) failures.push(`${runLabel(r)}: ${ms(r.stats.p50)} ms`);
    }
    const scale =
      dataset.transactions >= targetsSpec.limit100Transactions
        ? ""
        : ` — dataset has ${dataset.transactions.toLocaleString("en-US")} transactions, not ${targetsSpec.limit100Transactions.toLocaleString("en-US")}: indicative only`;
    targets.push({
      group: "earlier",
      name: `no case above ${targetsSpec.limit100P50Ms} ms p50 at limit 100 (concurrency 1, ${targetsSpec.limit100Transactions / 1e6}M transactions)`,
      pass: checkedRuns.length === 0 ? null : failures.length === 0,
      detail: checkedRuns.length === 0 || worst === undefined ? "no limit-100 case run" : `worst ${runLabel(worst)} ${ms(worst.stats.p50)} ms${scale}`,
      failures,
    });
  }

  // Issue 14's targets are for an index at rest: the runs with the live writer (--writer-rate) are reported beside
  // them, not judged by them.
  const still = mixed.filter((m) => m.writer === undefined);
  if (still.length > 0) {
    const requests = still.flatMap((m) => m.requests.map((q) => ({ scenario: m.scenario, drainMs: m.drainMs, ...q })));
    const probes = requests.filter((q) => q.role === "probe");
    const heavy = requests.filter((q) => q.role === "heavy");
    const worst = probes.reduce<(typeof probes)[number] | undefined>((w, q) => (w === undefined || !(q.stats.p99 <= w.stats.p99) ? q : w), undefined);
    const slowOrFailed = probes.filter((q) => !(q.stats.p99 < targetsSpec.mixedProbeP99Ms) || failedCount(q.stats) > 0);
    targets.push({
      group: "earlier",
      name: `mixed load: every probe p99 < ${targetsSpec.mixedProbeP99Ms} ms and none failed, while ${[...new Set(heavy.map((q) => q.clients))].join(", ")} heavy clients page`,
      pass: slowOrFailed.length === 0,
      detail: worst === undefined ? "no probe" : `worst p99 ${latency(worst.stats.p99, worst.drainMs)} ms (${worst.scenario} ${worst.case})`,
      failures: slowOrFailed.map(
        (q) => `${q.scenario} ${q.case}: p99 ${latency(q.stats.p99, q.drainMs)} ms, max ${latency(q.stats.max, q.drainMs)} ms, n=${q.stats.n}, failed: ${failuresText(q.stats)}`,
      ),
    });
    targets.push({
      group: "earlier",
      name: "mixed load: every heavy page answered (none shed at the deadline, none failed)",
      pass: heavy.every((q) => failedCount(q.stats) === 0),
      detail: heavy.map((q) => `${q.scenario}: ${q.stats.n} pages, p50 ${latency(q.stats.p50, q.drainMs)} ms`).join("; "),
      failures: heavy.filter((q) => failedCount(q.stats) > 0).map((q) => `${q.scenario} ${q.case}: ${q.stats.n} answered, failed: ${failuresText(q.stats)}`),
    });
  }

  // The run's own soundness.
  if (crashes.length > 0) {
    targets.push({
      group: "run",
      name: "the server never died",
      pass: false,
      detail: `${crashes.length} crashes`,
      failures: crashes.map((c) => `${c.case} ${c.protocol} c=${c.concurrency}: code ${c.code}, signal ${c.signal}, RSS ${fmt(c.peakRssMb, 0)} MB`),
    });
  }
  const aborted = runs.filter((r) => r.stats.censored > 0);
  if (aborted.length > 0) {
    targets.push({
      group: "run",
      name: "every request answered within the run bound (--max-run-ms)",
      pass: false,
      detail: `${aborted.length} runs had requests aborted`,
      failures: aborted.map((r) => `${runLabel(r)} c=${r.concurrency}: ${r.stats.censored} aborted, ${r.stats.n} answered`),
    });
  }
  const errored = runs.filter((r) => r.stats.errors > 0);
  if (errored.length > 0) {
    targets.push({
      group: "run",
      name: "no request failed",
      pass: false,
      detail: `${errored.length} runs had errors`,
      failures: errored.map((r) => `${runLabel(r)} c=${r.concurrency}: ${r.stats.errors} errors, first: ${r.stats.firstError ?? ""}`),
    });
  }
  const order: readonly TargetGroup[] = ["issue25", "earlier", "run"];
  return targets.sort((a, b) => order.indexOf(a.group) - order.indexOf(b.group));
}

const mark = (pass: boolean | null) => (pass === null ? "n/a" : pass ? "HOLD" : "FAIL");

/** The targets by group, as the console shows them: each group under its heading, each target hold / FAIL / n/a. */
export function targetsText(targets: readonly Target[]): string {
  const lines: string[] = [];
  for (const [group, title] of Object.entries(targetGroupTitles) as [TargetGroup, string][]) {
    const inGroup = targets.filter((t) => t.group === group);
    if (inGroup.length === 0) continue;
    if (lines.length > 0) lines.push("");
    lines.push(`${title}:`);
    for (const t of inGroup) {
      lines.push(`${mark(t.pass).padEnd(4)}  ${t.name}: ${t.detail}`);
      for (const f of t.failures.slice(0, 12)) lines.push(`        ${f}`);
      if (t.failures.length > 12) lines.push(`        … ${t.failures.length - 12} more`);
    }
  }
  return `${lines.join("\n")}\n`;
}

function shortQuery(query: string, max = 90): string {
  const flat = query.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

const escapeCell = (s: string) => s.replace(/\|/g, "\\|");

export function markdown(result: BenchResult): string {
  const out: string[] = [];
  const d = result.dataset;
  const n = (v: number) => v.toLocaleString("en-US");
  out.push(`# tonquery bench, ${result.startedAt}`, "");
  out.push(
    `Dataset: ${n(d.transactions)} transactions, ${n(d.traces)} traces, ${n(d.messages)} messages, ${n(d.actions)} actions, ${n(d.blocks)} blocks, ${n(d.accounts)} accounts.`,
  );
  if (d.hot) out.push(`Hot account ${d.hot.account}: ${n(d.hot.transactions)} transactions in ${n(d.hot.traces)} traces.`);
  if (d.cold) out.push(`Cold account ${d.cold.account}: ${n(d.cold.transactions)} transactions in ${n(d.cold.traces)} traces.`);
  if (d.tiny) out.push(`Tiny account ${d.tiny.account}: ${n(d.tiny.transactions)} transactions in ${n(d.tiny.traces)} traces.`);
  const env = result.environment;
  out.push(
    "",
    `Machine: ${env.cpus} CPUs (${env.cpuModel}), node ${env.node}, ${env.postgres}. Server pool ${result.server.poolSize} connections.`,
    `Runs: ${result.options.warmupMs} ms warm-up + ${result.options.durationMs} ms measured per (case, protocol, concurrency), client mode "${result.options.client}", ${serverWarmup(result.options)}. Whole bench ${fmt(result.durationS / 60, 1)} min.`,
    "",
    "## Targets",
  );
  // Every failing line in full: the console shows the first twelve of each target.
  for (const [group, title] of Object.entries(targetGroupTitles) as [TargetGroup, string][]) {
    const inGroup = result.targets.filter((t) => t.group === group);
    if (inGroup.length === 0) continue;
    out.push("", `### ${title}`, "", "| | target | result |", "|---|---|---|");
    for (const t of inGroup) {
      const failures = t.failures.length > 0 ? `<br>${t.failures.map(escapeCell).join("<br>")}` : "";
      out.push(`| ${mark(t.pass)} | ${escapeCell(t.name)} | ${escapeCell(t.detail)}${failures} |`);
    }
  }

  out.push(
    "",
    `Server memory: peak RSS ${fmt(result.server.peakRssMb, 0)} MB (VmHWM), highest sampled VmRSS ${fmt(result.server.sampledPeakRssMb, 0)} MB, ${fmt(result.server.finalRssMb, 0)} MB at the end.`,
    "",
    "## Latency and throughput",
    "",
    "ours/floor = p50 of the server over p50 of the same statements replayed through `postgres` at the same concurrency. CPU columns: milliseconds of CPU per request of the server process and of all postgres processes.",
    "",
    "| case | protocol | c | p50 ms | p99 ms | req/s | floor p50 ms | floor req/s | ours/floor | server CPU ms/req | pg CPU ms/req | KB/resp | peak RSS MB | n | errors |",
    "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  );
  for (const c of result.cases) {
    for (const r of result.runs.filter((r) => r.case === c.id && r.protocol !== "floor")) {
      const floor = findRun(result.runs, r.case, "floor", r.concurrency);
      const ratio = floor ? r.stats.p50 / floor.stats.p50 : Number.NaN;
      const lat = (v: number) => latency(v, result.options.maxRunMs);
      const rps = (v: number) => fmt(v, v < 10 ? 1 : 0);
      const shedCount = r.stats.deadlineExceeded ?? 0;
      const failed = `${r.stats.errors}${shedCount > 0 ? ` (+${shedCount} 504)` : ""}${r.stats.censored > 0 ? ` (+${r.stats.censored} aborted)` : ""}`;
      out.push(
        `| ${c.id} | ${r.protocol} | ${r.concurrency} | ${lat(r.stats.p50)} | ${lat(r.stats.p99)} | ${rps(r.stats.rps)} | ${floor ? lat(floor.stats.p50) : "—"} | ${floor ? rps(floor.stats.rps) : "—"} | ${fmt(ratio, 2)} | ${fmt(r.cpuPerRequestMs.server, 2)} | ${fmt(r.cpuPerRequestMs.postgres, 2)} | ${fmt(r.stats.bytesPerRequest / 1024, 1)} | ${fmt(r.peakRssMb ?? Number.NaN, 0)} | ${r.stats.n} | ${failed} |`,
      );
    }
  }

  if (result.mixed.length > 0) {
    const o = result.options;
    out.push(
      "",
      "## Mixed load",
      "",
      `Cheap probes measured while heavy pages run: ${o.mixedHeavyClients} clients loop the heavy request over the scenario's protocol while ${o.mixedProbeClients} client(s) per probe loop each probe over REST (each client starting at most one request per ${o.mixedProbeIntervalMs} ms); ${o.mixedWarmupMs} ms warm-up, then ${o.mixedDurationMs} ms measured (the requests started in it; those in flight at its end are waited for). Failed: by HTTP status or gRPC code (504 / DEADLINE_EXCEEDED: the server's deadline); aborted: unanswered ${o.maxRunMs} ms after the end (shown as "> ${o.maxRunMs}"). Target: every probe p99 < ${targetsSpec.mixedProbeP99Ms} ms with 6 heavy clients.`,
      "",
      "| scenario | role | request | protocol | clients | answered | p50 ms | p99 ms | max ms | req/s | failed |",
      "|---|---|---|---|--:|--:|--:|--:|--:|--:|---|",
    );
    for (const m of result.mixed) {
      for (const q of m.requests) {
        const lat = (v: number) => latency(v, m.drainMs);
        out.push(
          `| ${m.scenario} | ${q.role} | ${q.case} | ${q.protocol} | ${q.clients} | ${q.stats.n} | ${lat(q.stats.p50)} | ${lat(q.stats.p99)} | ${lat(q.stats.max)} | ${fmt(q.stats.rps, q.stats.rps < 10 ? 1 : 0)} | ${failuresText(q.stats)} |`,
        );
      }
    }
    out.push("");
    for (const m of result.mixed) {
      const writer = m.writer === undefined ? "" : `; ${writerText(m.writer)}`;
      out.push(`- ${m.scenario}: server ${fmt(m.cpuCores.server, 2)} cores, PostgreSQL ${fmt(m.cpuCores.postgres, 2)} cores over the measured time; peak RSS ${fmt(m.peakRssMb, 0)} MB${writer}.`);
    }
    out.push("", "Requests: " + [...new Map(result.mixed.flatMap((m) => m.requests.map((q) => [q.case, q.restPath] as const))).entries()].map(([id, path]) => `${id} \`${escapeCell(path)}\``).join(", ") + ".");
  }

  out.push("", "## Cases", "", "| case | request | response | statements (rounds) |", "|---|---|---|---|");
  for (const c of result.cases) {
    // Memoised: a page read in many chunks has statements that follow several others each, whose paths multiply.
    const rounds = new Map<number, number>();
    const depth = (i: number): number => {
      const known = rounds.get(i);
      if (known !== undefined) return known;
      const s = c.statements[i];
      const value = s === undefined || s.after.length === 0 ? 1 : 1 + Math.max(...s.after.map(depth));
      rounds.set(i, value);
      return value;
    };
    c.statements.forEach((_, i) => depth(i));
    const maxRound = Math.max(0, ...rounds.values());
    out.push(`| ${c.id} | ${escapeCell(c.title)}<br>\`${escapeCell(c.restPath.length > 100 ? `${c.restPath.slice(0, 99)}…` : c.restPath)}\` | ${c.response.items} ${c.response.description} | ${c.statements.length} (${maxRound} sequential) |`);
  }

  out.push(
    "",
    "## EXPLAIN",
    "",
    "Steady plan = the plan a warm server runs (plan_cache_mode auto after five executions), with ANALYZE. Seq scans are listed from the custom, generic and steady plans; transactions, messages, traces and actions must never be scanned sequentially.",
    "",
    "| case | # | statement | access (steady plan) | plan | exec ms | seq scans |",
    "|---|--:|---|---|---|--:|---|",
  );
  for (const c of result.cases) {
    c.statements.forEach((s, i) => {
      const p = s.plans;
      if (p === undefined) return;
      const seq = p.seqScans.length === 0 ? "none" : p.seqScans.map((x) => `${x.severity.toUpperCase()} ${x.relation} (${n(x.tableRows)} rows, ${x.plan})`).join("<br>");
      const differs = p.steady && p.custom && p.steady.access.join() !== p.custom.access.join() ? ` (custom plan: ${p.custom.access.join("; ")})` : "";
      const kind = p.steady ? (p.steady.generic ? "generic" : "custom") + (p.steady.jit ? `, JIT ${fmt(p.steady.jit.totalMs, 1)} ms` : "") + differs : "—";
      out.push(
        `| ${c.id} | ${i + 1} | \`${escapeCell(shortQuery(s.query))}\` | ${escapeCell(p.error ? `error: ${p.error}` : p.access.join("<br>"))} | ${kind} | ${ms(p.steady?.executionMs ?? Number.NaN)} | ${escapeCell(seq)} |`,
      );
    });
  }
  const mismatches = result.cases.flatMap((c) => c.checks.filter((k) => !k.ok).map((k) => `${c.id} ${k.protocol}: ${k.detail}`));
  if (mismatches.length > 0) out.push("", "## Answer checks that failed", "", ...mismatches.map((m) => `- ${m}`));
  out.push("");
  return out.join("\n");
}

/**
 * Shortens long parameters for the JSON file (the replay used them whole): arrays, and the array literals postgres
 * has already serialised them into by the time the statement ran.
 */
export function shortenParameters(parameters: readonly unknown[]): unknown[] {
  return parameters.map((p) => {
    if (Array.isArray(p) && p.length > 5) return [...p.slice(0, 5), `… ${p.length - 5} more (${p.length} in all)`];
    if (typeof p === "string" && p.length > 240) {
      const items = p.startsWith("{") ? `, ${p.split(",").length} elements` : "";
      return `${p.slice(0, 200)}… (${p.length} characters${items})`;
    }
    return p;
  });
}
