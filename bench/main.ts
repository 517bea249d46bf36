// npm run bench -- [--help]. See bench/README.md.

import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase, redactUrl } from "../src/db/client.ts";
import { caseSelected, parseOptions, type BenchOptions } from "./args.ts";
import { buildCases, inQuickBench, readDataset, type BenchCase } from "./cases.ts";
import { captureCase, createRecorder, replay, type Capture } from "./capture.ts";
import { createProtocolClient } from "./clients.ts";
import { Explainer, type StatementPlans } from "./explain.ts";
import { runLoad } from "./load.ts";
import { buildMixedScenarios, describeMixedScenario, runMixedScenario } from "./mixed.ts";
import { cpuMeter, databaseBackendPids, machineCores, openMonitorSql, startServer, type ServerProcess } from "./monitor.ts";
import { perfFile, perfNodeFlags, perfRecorder, perfUnavailable } from "./perf-record.ts";
import type { Send } from "./load.ts";
import {
  evaluateTargets,
  markdown,
  mixedText,
  shortenParameters,
  targetsText,
  type BenchResult,
  type CaseResult,
  type MixedLoadResult,
  type RunProtocol,
  type RunResult,
} from "./report.ts";

const log = (line: string) => process.stdout.write(`${line}\n`);
const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : "—");


interface Probes {
  server: ServerProcess | undefined;
  /** pids of the PostgreSQL backends connected to the bench's database (the server's and the floor's pools). */
  backends(): Promise<string[]>;
  /** Resolves when no statement runs on the bench's database (or after 60 s). */
  databaseIdle(): Promise<void>;
}

const round = (n: number) => Math.round(n * 1000) / 1000;

async function measure(
  label: { case: string; protocol: RunProtocol; concurrency: number },
  send: Send,
  options: BenchOptions,
  probes: Probes,
  floorP50: number | undefined,
): Promise<RunResult> {
  const { server } = probes;
  const meter = cpuMeter(server);
  const perf = options.perfDir !== undefined && server !== undefined && label.protocol !== "floor" ? perfRecorder(server.pid, perfFile(options.perfDir, label)) : undefined;
  let perfSaved: Promise<void> = Promise.resolve();
  const { stats, aborted } = await runLoad(send, {
    concurrency: label.concurrency,
    warmupMs: options.warmupMs,
    durationMs: options.durationMs,
    maxRequests: options.maxRequests,
    maxRunMs: options.maxRunMs,
    onMeasured: (phase) => {
      if (phase === "start") {
        server?.takePeakRssMb();
        meter.start();
        perf?.start();
      } else {
        meter.stop();
        if (perf !== undefined) perfSaved = perf.stop();
      }
    },
  });
  await perfSaved;
  const spent = meter.spentMs(new Set(await probes.backends()));
  const per = (ms: number) => (stats.n > 0 ? ms / stats.n : Number.NaN);
  const result: RunResult = {
    ...label,
    stats,
    cpuPerRequestMs: { server: per(spent.server), postgres: per(spent.postgres), bench: per(spent.bench) },
    peakRssMb: label.protocol === "floor" ? undefined : server?.takePeakRssMb(),
    machineCores: machineCores(spent, stats.elapsedMs),
    ...(label.protocol !== "floor" && server !== undefined && { eventLoopPerRequestMs: { run: per(spent.eventLoop.runMs), wait: per(spent.eventLoop.waitMs) } }),
  };
  // Aborted requests may still keep the server and PostgreSQL busy: let them finish before the next run.
  if (aborted) {
    await server?.waitIdle();
    await probes.databaseIdle();
  }
  const ratio = floorP50 !== undefined && label.protocol !== "floor" ? `  ours/floor ${(stats.p50 / floorP50).toFixed(2)}` : "";
  if (options.quick && label.protocol !== "floor") {
    const floor = floorP50 === undefined ? null : round(floorP50);
    const line = { case: label.case, door: label.protocol, p50_ms: round(stats.p50), p99_ms: round(stats.p99), floor_p50_ms: floor, ratio: floor === null ? null : round(stats.p50 / (floorP50 as number)) };
    log(JSON.stringify(line));
  }
  const errors = stats.errors > 0 ? `  ERRORS ${stats.errors}: ${stats.firstError ?? ""}` : "";
  const shed = stats.deadlineExceeded > 0 ? `  504/DEADLINE_EXCEEDED ${stats.deadlineExceeded}` : "";
  const censored = stats.censored > 0 ? `  ${stats.censored} aborted at ${options.maxRunMs} ms` : "";
  const cpu = result.cpuPerRequestMs;
  const machine = result.machineCores;
  const loop = result.eventLoopPerRequestMs;
  const rest =
    (machine === undefined ? "" : `  cores: others ${machine.others.toFixed(2)} idle ${machine.idle.toFixed(2)} steal ${machine.steal.toFixed(2)}`) +
    (loop === undefined ? "" : `  loop/req run ${ms(loop.run)} wait ${ms(loop.wait)}`);
  log(
    `  ${label.protocol.padEnd(8)} c=${String(label.concurrency).padEnd(3)} p50 ${ms(stats.p50).padStart(7)} ms  p99 ${ms(stats.p99).padStart(7)} ms  ${stats.rps.toFixed(stats.rps < 10 ? 1 : 0).padStart(6)} req/s  n=${String(stats.n).padEnd(5)} cpu/req srv ${ms(cpu.server)} pg ${ms(cpu.postgres)} bench ${ms(cpu.bench)}${rest}${ratio}${censored}${shed}${errors}`,
  );
  return result;
}

/** Requests in flight while the server warms up: enough to run its concurrent paths, light on memory. */
const warmUpConcurrency = 4;

/**
 * Sends every case over every protocol (and replays it as the floor when `floorDb` is given), unmeasured, for
 * options.serverWarmupMs in all, in two passes so that each path runs again after the others have. A server's first
 * seconds of work are V8 compiling and re-compiling what a request runs (a sixth of its CPU on masterchainInfo's
 * first run after start, which then gave 3,928 req/s against 5,654 and 6,548 for the same run repeated), and code
 * compiled for the first case alone is faster than code that has served them all (masterchainInfo over REST: about
 * 12 % less server CPU per request, profiled). The runs compare a service that has been up for a while, serving
 * everything, with its floor, so the bench's own client and driver, and the floor's PostgreSQL backends, warm up too.
 */
async function warmUp(cases: readonly BenchCase[], captures: ReadonlyMap<string, Capture>, options: BenchOptions, port: number, floorDb: ReturnType<typeof openDatabase> | undefined): Promise<void> {
  if (options.serverWarmupMs === 0 || cases.length === 0) return;
  const clients = options.protocols.map((protocol) => createProtocolClient(protocol, options.client, port, warmUpConcurrency));
  try {
    const sends: Send[] = [];
    for (const c of cases) {
      const { statements } = captures.get(c.id) as Capture;
      if (floorDb !== undefined) sends.push(async (signal) => (await replay(floorDb, statements, signal), 0));
      for (const client of clients) sends.push(client.prepare(c).send);
    }
    const passes = 2;
    const slotMs = options.serverWarmupMs / passes / sends.length;
    for (let pass = 0; pass < passes; pass++) {
      for (const send of sends) await runLoad(send, { concurrency: warmUpConcurrency, warmupMs: 0, durationMs: slotMs, maxRequests: 0, maxRunMs: options.maxRunMs });
    }
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  if (options === undefined) return 0;
  const startedAt = new Date();
  const admin = postgres(options.databaseUrl, { max: 4, onnotice: () => {} });
  const [{ version: pgVersion } = { version: "?" }] = await admin<{ version: string }[]>`select version()`;
  log(`reading the dataset at ${redactUrl(options.databaseUrl)} …`);
  const dataset = await readDataset(admin);
  await admin.end({ timeout: 5 });
  const allCases = buildCases(dataset);
  const allScenarios = buildMixedScenarios(allCases, options.writerRate);
  const allIds = [...allCases.map((c) => c.id), ...allScenarios.map((s) => s.id)];
  const cases = allCases.filter((c) => caseSelected(c.id, options.cases, allIds) && (options.cases.length > 0 || !options.quick || inQuickBench(c)));
  // A quick run is for iterating on the cases; the mixed load (a minute of its own) runs only when named.
  const mixedSelected = (id: string) => (options.quick ? options.cases.length > 0 : true) && caseSelected(id, options.cases, allIds);
  const scenarios = allScenarios.filter((s) => mixedSelected(s.id) && options.protocols.includes(s.heavyProtocol));
  log(
    `${dataset.transactions.toLocaleString("en-US")} transactions, ${dataset.traces.toLocaleString("en-US")} traces; hot account ${dataset.hot?.transactions ?? 0} tx, cold ${dataset.cold?.transactions ?? 0} tx, tiny ${dataset.tiny?.transactions ?? 0} tx`,
  );
  if (options.list) {
    for (const c of allCases) log(`${cases.includes(c) ? "*" : " "} ${c.id.padEnd(26)} ${c.title}\n    ${c.restPath}`);
    for (const s of allScenarios) log(`${scenarios.includes(s) ? "*" : " "} ${s.id.padEnd(26)} ${describeMixedScenario(s, options)}`);
    return 0;
  }
  if (cases.length === 0 && scenarios.length === 0) throw new Error(`no case matches --cases ${options.cases.join(",")} (see --list)`);

  const config = loadConfig({ ...options.serverEnv, DATABASE_URL: options.databaseUrl, HOST: "127.0.0.1", PORT: "0" });
  const runsPerCase = options.concurrency.length * (options.protocols.length + (options.floor ? 1 : 0));
  const estimateS = (cases.length * runsPerCase * (options.warmupMs + options.durationMs) + scenarios.length * (options.mixedWarmupMs + options.mixedDurationMs)) / 1000;
  log(
    `${cases.length} cases × ${runsPerCase} runs and ${scenarios.length} mixed-load scenarios, about ${Math.ceil(estimateS / 60)} min of load (plus capture, EXPLAIN and draining)`,
  );

  // 1. The handlers' statements, recorded in-process.
  log("capturing the statements of each case …");
  const recorder = createRecorder(options.databaseUrl, config);
  const captures = new Map<string, Capture>();
  for (const c of cases) {
    const capture = await captureCase(recorder, config, c);
    captures.set(c.id, capture);
    const sent = capture.debugCount === capture.statements.length ? "" : `  (postgres debug saw ${capture.debugCount} statements!)`;
    log(`  ${c.id.padEnd(26)} ${capture.statements.length} statements, ${capture.response.items} ${capture.response.description}${sent}`);
  }
  await recorder.end();

  // 2. EXPLAIN of every statement.
  const plans = new Map<string, StatementPlans[]>();
  if (options.explain) {
    log("explaining …");
    const explainer = new Explainer(options.databaseUrl);
    for (const c of cases) {
      const list: StatementPlans[] = [];
      for (const s of captures.get(c.id)?.statements ?? []) list.push(await explainer.explain(s));
      plans.set(c.id, list);
      const bad = list.flatMap((p) => p.seqScans.filter((x) => x.severity !== "info").map((x) => `${x.severity} ${x.relation} (${x.plan})`));
      const errors = list.filter((p) => p.error !== undefined).map((p) => p.error);
      log(`  ${c.id.padEnd(26)} ${bad.length === 0 ? "index access only" : bad.join(", ")}${errors.length ? `  errors: ${errors.join("; ")}` : ""}`);
    }
    await explainer.end();
  }

  // 3. The server, in its own process.
  if (options.perfDir !== undefined) {
    const why = perfUnavailable();
    if (why !== undefined) throw new Error(`--perf: ${why}`);
    await mkdir(options.perfDir, { recursive: true });
  }
  const serverNodeArgs = options.perfDir === undefined ? options.serverNodeArgs : [...options.serverNodeArgs, ...perfNodeFlags];
  const start = async () => {
    const s = await startServer(options.databaseUrl, options.serverEnv, serverNodeArgs);
    log(`server pid ${s.pid} on port ${s.port}, pool ${s.poolSize}`);
    return s;
  };
  let server = await start();
  /** Peak RSS (MB) of every server process that has ended, and the crashes. */
  let endedPeakMb = 0;
  const crashes: BenchResult["server"]["crashes"] = [];
  const floorDb = openDatabase(databaseOptions(config, options.databaseUrl));
  const monitorSql = openMonitorSql(options.databaseUrl);
  const probes: Probes = {
    server: undefined,
    backends: () => databaseBackendPids(monitorSql),
    async databaseIdle() {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const [row] = await monitorSql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state = 'active'`;
        if ((row?.n ?? 0) === 0) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    },
  };

  /** If the server died during the run just ended, records the crash and starts a new one. */
  const restartIfDied = async (run: { case: string; protocol: RunProtocol; concurrency: number }) => {
    const exit = server.exit();
    if (exit === undefined) return;
    const peak = server.lifetimePeakRssMb();
    log(`  SERVER DIED during ${run.case} ${run.protocol} c=${run.concurrency} (code ${exit.code}, signal ${exit.signal}, last sampled RSS peak ${peak.toFixed(0)} MB); restarting`);
    crashes.push({ ...run, code: exit.code, signal: exit.signal, peakRssMb: peak });
    endedPeakMb = Math.max(endedPeakMb, peak);
    server = await start();
    await warmUp(cases, captures, options, server.port, undefined);
  };

  const caseResults: CaseResult[] = [];
  const runs: RunResult[] = [];
  const mixed: MixedLoadResult[] = [];
  let sampledPeak = 0;
  try {
    if (options.serverWarmupMs > 0) {
      const started = performance.now();
      await warmUp(cases, captures, options, server.port, options.floor ? floorDb : undefined);
      log(`warmed up: every case over ${options.protocols.join(", ")}${options.floor ? " and the floor" : ""} for ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    for (const c of cases) {
      const capture = captures.get(c.id) as Capture;
      log(`${c.id}: ${c.title}`);
      probes.server = server;
      const checks = await checkAnswers(c, capture, options, server.port);
      for (const k of checks.filter((k) => !k.ok)) log(`  answer check failed, ${k.protocol}: ${k.detail}`);

      const floorP50 = new Map<number, number>();
      if (options.floor) {
        for (const concurrency of options.concurrency) {
          const send: Send = async (signal) => {
            await replay(floorDb, capture.statements, signal);
            return 0;
          };
          const r = await measure({ case: c.id, protocol: "floor", concurrency }, send, options, probes, undefined);
          floorP50.set(concurrency, r.stats.p50);
          runs.push(r);
        }
      }
      for (const protocol of options.protocols) {
        for (const concurrency of options.concurrency) {
          const client = createProtocolClient(protocol, options.client, server.port, concurrency);
          try {
            const { send } = client.prepare(c);
            probes.server = server;
            const r = await measure({ case: c.id, protocol, concurrency }, send, options, probes, floorP50.get(concurrency));
            sampledPeak = Math.max(sampledPeak, r.peakRssMb ?? 0);
            runs.push(r);
          } finally {
            await client.close();
          }
          await restartIfDied({ case: c.id, protocol, concurrency });
        }
      }
      const casePlans = plans.get(c.id);
      caseResults.push({
        id: c.id,
        title: c.title,
        method: c.method,
        restPath: c.restPath,
        request: c.request,
        response: capture.response,
        statements: capture.statements.map((s, i) => ({ ...s, parameters: shortenParameters(s.parameters), plans: casePlans?.[i] })),
        debugCount: capture.debugCount,
        checks,
      });
    }
    for (const s of scenarios) {
      log(`${s.id}: ${describeMixedScenario(s, options)}; ${options.mixedWarmupMs} ms warm-up, ${options.mixedDurationMs} ms measured`);
      const r = await runMixedScenario(s, options, server, probes);
      log(mixedText(r));
      sampledPeak = Math.max(sampledPeak, Number.isFinite(r.peakRssMb) ? r.peakRssMb : 0);
      mixed.push(r);
      await restartIfDied({ case: s.id, protocol: s.heavyProtocol, concurrency: options.mixedHeavyClients });
    }
  } finally {
    await floorDb.end();
    await monitorSql.end({ timeout: 5 });
  }
  const memory = server.memory();
  // What an operator's Prometheus would see after the bench (of the last server process, should one have crashed).
  const metricsText = await server.scrapeMetrics().catch((err: unknown) => `# scraping /metrics failed: ${String(err)}\n`);
  const accessLines = server.accessLines();
  await server.stop();
  const peakRssMb = Math.max(memory.hwmMb, endedPeakMb);

  const targets = evaluateTargets(cases, runs, dataset, peakRssMb, crashes, mixed, config.requestTimeoutMs, os.cpus().length);
  const finishedAt = new Date();
  const cpus = os.cpus();
  const { databaseUrl, ...rest } = options;
  const result: BenchResult = {
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    durationS: (finishedAt.getTime() - startedAt.getTime()) / 1000,
    options: { ...rest, database: redactUrl(databaseUrl) },
    environment: { cpus: cpus.length, cpuModel: cpus[0]?.model ?? "?", memoryMb: Math.round(os.totalmem() / 2 ** 20), node: process.version, postgres: pgVersion.split(" on ")[0] ?? pgVersion },
    dataset,
    server: { pid: server.pid, poolSize: server.poolSize, peakRssMb, finalRssMb: memory.rssMb, sampledPeakRssMb: sampledPeak, crashes },
    cases: caseResults,
    runs,
    mixed,
    targets,
  };
  const outDir = resolve(options.outDir);
  await mkdir(outDir, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
  const jsonPath = join(outDir, `${stamp}.json`);
  const mdPath = join(outDir, "latest.md");
  const metricsPath = join(outDir, `${stamp}.metrics.txt`);
  await writeFile(metricsPath, metricsText);
  await writeFile(jsonPath, `${JSON.stringify(result, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}\n`);
  await writeFile(mdPath, markdown(result));
  log("");
  log(targetsText(targets));
  log(`server: ${accessLines} access log lines; /metrics at the end: ${metricsPath}`);
  log(`results: ${jsonPath}\n         ${mdPath}`);
  return 0;
}

/** Each protocol's answer, decoded once, must have as many items as the handler's in-process answer. */
async function checkAnswers(c: BenchCase, capture: Capture, options: BenchOptions, port: number): Promise<CaseResult["checks"]> {
  const checks: CaseResult["checks"] = [];
  for (const protocol of options.protocols) {
    const client = createProtocolClient(protocol, options.client, port, 1);
    try {
      const got = await client.prepare(c).check();
      const ok = got.items === capture.response.items;
      checks.push({ protocol, ok, detail: ok ? `${got.items} ${got.description}` : `${got.items} ${got.description}, the handler answered ${capture.response.items}` });
    } catch (err) {
      checks.push({ protocol, ok: false, detail: (err as Error).message });
    } finally {
      await client.close();
    }
  }
  return checks;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
