// Alternated A/B: two or more variants of the server (this build with other settings or Node flags, or another
// checkout's build) started side by side on the same index and loaded in turns, one window each, the order reversed
// every other round, so that the machine's drift (other guests, the page cache, PostgreSQL's background work) falls
// on every variant alike. On this 2-core machine a full bench run moves by 10-20 % from one run to the next; the
// changes measured and left in the README were compared this way, and only a difference well above the spread of
// one variant's own windows counts.
//
//   npm run bench:ab -- --case traces.hot.l100 --protocol rest --concurrency 16 \
//     --variant main --variant pool4=DB_POOL_SIZE=4 --variant nomaglev=--no-maglev --variant base=@../base
//
// A variant is NAME or NAME=SPEC, SPEC a comma-separated list of VAR=value (environment), --flag (a Node flag) and
// @DIR (a checkout whose build, DIR/dist/bench/server-process.js, serves this variant; built beforehand).

import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { allProtocols, defaultDatabaseUrl, type Protocol } from "./args.ts";
import { buildCases, readDataset } from "./cases.ts";
import { createProtocolClient } from "./clients.ts";
import { runLoad } from "./load.ts";
import { cpuMeter, databaseBackendPids, openMonitorSql, type ServerProcess, startServer } from "./monitor.ts";

export interface Variant {
  name: string;
  env: Record<string, string>;
  nodeArgs: string[];
  /** Another checkout's server entry; undefined: this checkout's build. */
  entry: string | undefined;
}

export function parseVariant(text: string): Variant {
  const at = text.indexOf("=");
  const name = at < 0 ? text : text.slice(0, at);
  if (name === "") throw new Error(`a variant needs a name: "${text}"`);
  const variant: Variant = { name, env: {}, nodeArgs: [], entry: undefined };
  if (at < 0) return variant;
  for (const item of text.slice(at + 1).split(",").filter((part) => part !== "")) {
    if (item.startsWith("--")) variant.nodeArgs.push(item);
    else if (item.startsWith("@")) variant.entry = resolve(item.slice(1), "dist/bench/server-process.js");
    else {
      const eq = item.indexOf("=");
      if (eq <= 0) throw new Error(`not VAR=value, --flag or @DIR: "${item}" in variant ${name}`);
      variant.env[item.slice(0, eq)] = item.slice(eq + 1);
    }
  }
  return variant;
}

/** The variants' order in each round: as given, then reversed, so that none always follows the same one. */
export function alternation(variants: number, rounds: number): number[][] {
  const order = Array.from({ length: variants }, (_, index) => index);
  return Array.from({ length: rounds }, (_, round) => (round % 2 === 0 ? order : [...order].reverse()));
}

/** The middle of sorted values (the mean of the two middle ones for an even count); NaN for none. */
export function median(sorted: readonly number[]): number {
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export interface Window {
  requests: number;
  errors: number;
  elapsedMs: number;
  p50Ms: number;
  serverCpuMs: number;
  postgresCpuMs: number;
}

/** A window's completed requests per second. */
const windowRate = (w: Window) => (w.elapsedMs > 0 ? (1000 * w.requests) / w.elapsedMs : 0);

export interface VariantSummary {
  requestsPerSecond: number;
  /** The lowest and highest of the windows' own rates: the spread a difference must stand out of. */
  windowRange: [number, number];
  serverCpuMsPerRequest: number;
  postgresCpuMsPerRequest: number;
  /** Median of the windows' p50s. */
  p50Ms: number;
  requests: number;
  errors: number;
}

export function summarise(windows: readonly Window[]): VariantSummary {
  let requests = 0;
  let errors = 0;
  let elapsedMs = 0;
  let serverCpuMs = 0;
  let postgresCpuMs = 0;
  const rates: number[] = [];
  const p50s: number[] = [];
  for (const w of windows) {
    requests += w.requests;
    errors += w.errors;
    elapsedMs += w.elapsedMs;
    serverCpuMs += w.serverCpuMs;
    postgresCpuMs += w.postgresCpuMs;
    rates.push(windowRate(w));
    p50s.push(w.p50Ms);
  }
  p50s.sort((a, b) => a - b);
  const per = (ms: number) => (requests > 0 ? ms / requests : Number.NaN);
  return {
    requestsPerSecond: elapsedMs > 0 ? (1000 * requests) / elapsedMs : 0,
    windowRange: [Math.min(...rates), Math.max(...rates)],
    serverCpuMsPerRequest: per(serverCpuMs),
    postgresCpuMsPerRequest: per(postgresCpuMs),
    p50Ms: median(p50s),
    requests,
    errors,
  };
}

/**
 * A variant's rate over the first variant's, round by round (their windows ran next to each other, so the machine's
 * slower drift cancels out), sorted: the median is the comparison, the ends say how far one round can mislead.
 */
export function pairedRatios(first: readonly Window[], other: readonly Window[]): number[] {
  const ratios: number[] = [];
  for (let round = 0; round < Math.min(first.length, other.length); round++) {
    const base = windowRate(first[round] as Window);
    if (base > 0) ratios.push(windowRate(other[round] as Window) / base);
  }
  return ratios.sort((a, b) => a - b);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      "database-url": { type: "string", default: defaultDatabaseUrl },
      case: { type: "string" },
      protocol: { type: "string", default: "rest" },
      concurrency: { type: "string", default: "16" },
      "window-ms": { type: "string", default: "2500" },
      rounds: { type: "string", default: "6" },
      variant: { type: "string", multiple: true, default: [] },
      help: { type: "boolean", default: false },
    },
  });
  const variants = (values.variant ?? []).map(parseVariant);
  if (values.help || values.case === undefined || variants.length < 2) {
    process.stdout.write(
      "npm run bench:ab -- --case ID --variant NAME[=SPEC] --variant NAME[=SPEC] [...] [--protocol rest] [--concurrency 16] [--window-ms 2500] [--rounds 6] [--database-url URL]\n",
    );
    return values.help ? 0 : 2;
  }
  const protocol = values.protocol as Protocol;
  if (!allProtocols.includes(protocol)) throw new Error(`unknown protocol ${protocol}`);
  const concurrency = Number(values.concurrency);
  const windowMs = Number(values["window-ms"]);
  const databaseUrl = values["database-url"] as string;

  const monitorSql = openMonitorSql(databaseUrl);
  const servers: ServerProcess[] = [];
  try {
    const benchCase = buildCases(await readDataset(monitorSql)).find((c) => c.id === values.case);
    if (benchCase === undefined) throw new Error(`no case ${values.case} (see npm run bench -- --list)`);
    for (const v of variants) servers.push(await startServer(databaseUrl, v.env, v.nodeArgs, v.entry));
    const senders = servers.map((server) => createProtocolClient(protocol, "raw", server.port, concurrency));
    const sends = senders.map((client) => client.prepare(benchCase).send);
    const windows: Window[][] = variants.map(() => []);
    // The first round only warms every variant up.
    for (const [round, order] of alternation(variants.length, Number(values.rounds) + 1).entries()) {
      for (const index of order) {
        const server = servers[index] as ServerProcess;
        const meter = cpuMeter(server);
        const { stats } = await runLoad(sends[index] as (typeof sends)[number], {
          concurrency,
          warmupMs: Math.min(500, windowMs / 4),
          durationMs: windowMs,
          maxRequests: 0,
          maxRunMs: Math.max(30_000, 4 * windowMs),
          onMeasured: (phase) => (phase === "start" ? meter.start() : meter.stop()),
        });
        if (round === 0) continue;
        const spent = meter.spentMs(new Set(await databaseBackendPids(monitorSql)));
        windows[index]?.push({
          requests: stats.n,
          errors: stats.errors + stats.deadlineExceeded,
          elapsedMs: stats.elapsedMs,
          p50Ms: stats.p50,
          serverCpuMs: spent.server,
          postgresCpuMs: spent.postgres,
        });
      }
    }
    await Promise.all(senders.map((client) => client.close()));
    process.stdout.write(`${benchCase.id} over ${protocol}, ${concurrency} in flight, ${values.rounds} alternated windows of ${windowMs} ms each\n`);
    variants.forEach((v, index) => {
      const s = summarise(windows[index] ?? []);
      const ratios = pairedRatios(windows[0] ?? [], windows[index] ?? []);
      const percent = (ratio: number | undefined) => `${(100 * (ratio ?? Number.NaN) - 100).toFixed(1)} %`;
      const relative =
        index === 0 || ratios.length === 0
          ? ""
          : `  (req/s vs ${variants[0]?.name}: ${percent(median(ratios))} per round, from ${percent(ratios[0])} to ${percent(ratios[ratios.length - 1])})`;
      process.stdout.write(
        `${v.name.padEnd(12)} ${s.requestsPerSecond.toFixed(1).padStart(8)} req/s [${s.windowRange.map((r) => r.toFixed(1)).join("-")}]  server ${s.serverCpuMsPerRequest.toFixed(2)} ms/req  PostgreSQL ${s.postgresCpuMsPerRequest.toFixed(2)} ms/req  p50 ${s.p50Ms.toFixed(1)} ms  n=${s.requests}${s.errors > 0 ? `  failed ${s.errors}` : ""}${relative}\n`,
      );
    });
    return 0;
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await monitorSql.end({ timeout: 5 });
  }
}

if (import.meta.main) process.exitCode = await main();
