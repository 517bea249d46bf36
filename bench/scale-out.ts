// Scale-out measurement: the mixed load (bench/mixed.ts: heavy pages of 1000 traces with cheap probes behind them)
// against one tonquery instance, against two instances behind a round-robin balancer, and against two instances
// reading a primary and a streaming replica; then the failover of a replica killed under that load.
//
// It starts its own primary and replica from the machine's PostgreSQL binaries (test/support/replica-cluster.ts,
// as the replica tests do), fills the primary with the generator (npm run generate-data), and starts each instance as
// the bench does (bench/monitor.ts startServer: a process of its own, with npm start's Node flags). The failover runs
// the two instances in this process instead, to read which database members they route to (Database.memberStats).
//
//   npm run bench:scale-out -- [--transactions 200000] [--warmup-ms 3000] [--duration-ms 20000] [--out bench/results]

import { mkdir, readFile, writeFile } from "node:fs/promises";
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase, type Database } from "../src/db/client.ts";
import { Telemetry } from "../src/observability/telemetry.ts";
import { createServer } from "../src/server/server.ts";
import { startReplicaCluster, type ReplicaCluster } from "../test/support/replica-cluster.ts";
import { buildCases, readDataset, type BenchCase } from "./cases.ts";
import { createProtocolClient } from "./clients.ts";
import { runSimultaneously, type LatencyStats, type Send } from "./load.ts";
import { buildMixedScenarios } from "./mixed.ts";
import { cpuMeter, startServer, type ServerProcess } from "./monitor.ts";

const { values: args } = parseArgs({
  options: {
    transactions: { type: "string", default: "200000" },
    "warmup-ms": { type: "string", default: "3000" },
    "duration-ms": { type: "string", default: "20000" },
    "heavy-clients": { type: "string", default: "6" },
    "probe-clients": { type: "string", default: "2" },
    "probe-interval-ms": { type: "string", default: "50" },
    out: { type: "string", default: "bench/results" },
  },
  strict: true,
});
const warmupMs = Number(args["warmup-ms"]);
const durationMs = Number(args["duration-ms"]);
const heavyClients = Number(args["heavy-clients"]);
const probeClients = Number(args["probe-clients"]);
const probeIntervalMs = Number(args["probe-interval-ms"]);

interface Measured {
  topology: string;
  requests: { role: "heavy" | "probe"; case: string; clients: number; stats: LatencyStats }[];
  /** CPU over the measured time, in cores: the tonquery processes, the cluster's PostgreSQL processes, this bench. */
  cores: { tonquery: number; postgres: number; loadGenerator: number };
}

/** The processes of the cluster's servers (postmasters and their children), by pid. */
async function clusterProcesses(cluster: ReplicaCluster): Promise<Set<string>> {
  const pids = new Set<string>();
  for (const node of [cluster.primary, ...cluster.replicas]) {
    const postmaster = (await readFile(`${node.dataDir}/postmaster.pid`, "utf8").catch(() => "")).split("\n")[0];
    if (!postmaster) continue;
    pids.add(postmaster);
    const children = await promisify(execFile)("pgrep", ["-P", postmaster]).catch(() => ({ stdout: "" }));
    for (const pid of children.stdout.split("\n").filter(Boolean)) pids.add(pid);
  }
  return pids;
}

/** Where a load's requests go: round robin over the instances, as a balancer would send them. */
interface Target {
  ports: number[];
}

function balanced(target: Target, c: BenchCase, clients: number): { send: Send; close: () => Promise<unknown> } {
  const perInstance = target.ports.map((port) => createProtocolClient("rest", "raw", port, Math.max(1, clients)));
  const sends = perInstance.map((client) => client.prepare(c).send);
  let turn = 0;
  return { send: (signal) => (sends[turn++ % sends.length] as Send)(signal), close: () => Promise.all(perInstance.map((client) => client.close())) };
}

async function mixedLoad(target: Target, heavy: BenchCase, probes: BenchCase[], onMeasured?: (phase: "start" | "end") => void) {
  const loads = [
    { role: "heavy" as const, case: heavy.id, clients: heavyClients, ...balanced(target, heavy, heavyClients), concurrency: heavyClients, intervalMs: 0 },
    ...probes.map((p) => ({ role: "probe" as const, case: p.id, clients: probeClients, ...balanced(target, p, probeClients), concurrency: probeClients, intervalMs: probeIntervalMs })),
  ];
  try {
    return await runSimultaneously(loads, { warmupMs, durationMs, drainMs: 20_000, onMeasured });
  } finally {
    await Promise.all(loads.map((l) => l.close()));
  }
}

async function measureTopology(topology: string, cluster: ReplicaCluster, servers: ServerProcess[], heavy: BenchCase, probes: BenchCase[]): Promise<Measured> {
  const meters = servers.map((s) => cpuMeter(s));
  const results = await mixedLoad({ ports: servers.map((s) => s.port) }, heavy, probes, (phase) => {
    for (const meter of meters) phase === "start" ? meter.start() : meter.stop();
  });
  const postgres = await clusterProcesses(cluster);
  const spent = meters.map((meter) => meter.spentMs(postgres));
  return {
    topology,
    requests: results.map((r) => ({ role: r.role, case: r.case, clients: r.clients, stats: r.stats })),
    cores: {
      tonquery: spent.reduce((sum, s) => sum + s.server, 0) / durationMs,
      postgres: (spent[0]?.postgres ?? 0) / durationMs,
      loadGenerator: (spent[0]?.bench ?? 0) / durationMs,
    },
  };
}

interface Failover {
  killedAfterMs: number;
  /** Per instance: from the start of pg_ctl stop -m immediate until the instance had the replica marked down. */
  markedDownMs: number[];
  /** Requests each instance routed to the replica after marking it down, until it was restarted. */
  routedAfterDown: number[];
  /** Statements that failed on the replica and ran again elsewhere. */
  movedStatements: number;
  /** Per instance: from the replica's restart (pg_ctl start began) until the instance routed to it again. */
  servingAgainMs: number[];
  requests: Measured["requests"];
}

/** Two instances in this process, the replica killed a third into the measured time and restarted at two thirds. */
async function measureFailover(cluster: ReplicaCluster, heavy: BenchCase, probes: BenchCase[]): Promise<Failover> {
  const [replica] = cluster.replicas;
  if (replica === undefined) throw new Error("no replica");
  const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", DATABASE_URL: cluster.primary.url, DATABASE_REPLICA_URLS: replica.url });
  const instances: { db: Database; close: () => Promise<void>; port: number }[] = [];
  for (let i = 0; i < 2; i++) {
    const telemetry = new Telemetry();
    const db = openDatabase(databaseOptions(config, cluster.primary.url, { telemetry }));
    const server = createServer({ db, config, telemetry });
    const { port } = await server.listen(0, "127.0.0.1");
    instances.push({ db, port, close: async () => (await server.close(), await db.end()) });
  }
  const replicaStats = (db: Database) => db.memberStats().find((m) => m.role === "replica");
  const poll = async (condition: () => boolean) => {
    const deadline = Date.now() + 60_000;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error("failover: an instance did not reach the expected state within 60 s");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  try {
    await poll(() => instances.every((i) => replicaStats(i.db)?.serving === true));
    let measuredAt = 0;
    const events = (async () => {
      await poll(() => measuredAt > 0);
      await new Promise((resolve) => setTimeout(resolve, durationMs / 3));
      const killedAt = Date.now();
      const down = instances.map(async (i) => (await poll(() => replicaStats(i.db)?.up === false), { ms: Date.now() - killedAt, requests: replicaStats(i.db)?.requests ?? 0 }));
      await cluster.stop(replica, "immediate");
      const markedDown = await Promise.all(down);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + durationMs / 3 - Date.now())));
      const routedAfterDown = instances.map((i, k) => (replicaStats(i.db)?.requests ?? 0) - (markedDown[k]?.requests ?? 0));
      const restartedAt = Date.now();
      const started = cluster.start(replica);
      const servingAgainMs = await Promise.all(instances.map(async (i) => (await poll(() => replicaStats(i.db)?.serving === true), Date.now() - restartedAt)));
      await started;
      return { killedAfterMs: killedAt - measuredAt, markedDownMs: markedDown.map((d) => d.ms), routedAfterDown, servingAgainMs };
    })();
    const results = await mixedLoad({ ports: instances.map((i) => i.port) }, heavy, probes, (phase) => {
      if (phase === "start") measuredAt = Date.now();
    });
    const timeline = await events;
    return {
      ...timeline,
      movedStatements: instances.reduce((sum, i) => sum + (replicaStats(i.db)?.failovers ?? 0), 0),
      requests: results.map((r) => ({ role: r.role, case: r.case, clients: r.clients, stats: r.stats })),
    };
  } finally {
    await Promise.all(instances.map((i) => i.close()));
  }
}

const ms = (v: number) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : "> 20000");
/** Failed requests (by status), apart from those shed at the server's deadline (504) and those never answered. */
const failed = (s: LatencyStats) => {
  const byStatus = Object.entries(s.failuresByStatus).filter(([status]) => status !== "504");
  const parts = [byStatus.length === 0 ? "none" : byStatus.map(([status, n]) => `${n}× ${status}`).join(", ")];
  if (s.deadlineExceeded > 0) parts.push(`${s.deadlineExceeded} shed (504)`);
  if (s.censored > 0) parts.push(`${s.censored} unanswered`);
  return parts.join("; ");
};

function report(transactions: number, measured: Measured[], failover: Failover): string {
  const rows = measured.flatMap((m) =>
    m.requests.map(
      (r) => `| ${m.topology} | ${r.role} | ${r.case} | ${r.clients} | ${r.stats.n} | ${ms(r.stats.p50)} | ${ms(r.stats.p99)} | ${r.stats.rps.toFixed(r.role === "heavy" ? 2 : 0)} | ${failed(r.stats)} |`,
    ),
  );
  const heavyRps = (m: Measured) => m.requests.find((r) => r.role === "heavy")?.stats.rps ?? Number.NaN;
  const base = measured[0] as Measured;
  return [
    `# tonquery scale-out, ${new Date().toISOString()}`,
    "",
    `Index: ${transactions.toLocaleString("en")} generated transactions (seed 1) on a primary and one streaming replica started for the run (fsync off), on this machine (2 cores shared by everything).`,
    `Mixed load as \`npm run bench -- --cases mixed\`: ${heavyClients} clients loop the hot account's pages of 1000 traces over REST while ${probeClients} clients per probe loop masterchainInfo and one trace with actions (one request per ${probeIntervalMs} ms at most); each client's requests go round robin over the instances. ${warmupMs} ms warm-up, ${durationMs} ms measured.`,
    "",
    "| topology | role | request | clients | answered | p50 ms | p99 ms | req/s | failed; shed at the deadline |",
    "|---|---|---|--:|--:|--:|--:|--:|---|",
    ...rows,
    "",
    ...measured.map(
      (m) =>
        `- ${m.topology}: heavy pages ${heavyRps(m).toFixed(2)}/s (×${(heavyRps(m) / heavyRps(base)).toFixed(2)}); CPU in cores: tonquery ${m.cores.tonquery.toFixed(2)}, PostgreSQL ${m.cores.postgres.toFixed(2)}, load generator ${m.cores.loadGenerator.toFixed(2)}.`,
    ),
    "",
    "## Failover",
    "",
    `Two instances (in the bench process) on the primary and the replica, default DB_PROBE_INTERVAL_MS and MAX_REPLICA_LAG_MS, the same load. The replica was killed (\`pg_ctl stop -m immediate\`) ${ms(failover.killedAfterMs)} ms into the measured time and restarted ${ms(durationMs / 3)} ms later.`,
    "",
    `- marked down by each instance ${failover.markedDownMs.map(ms).join(" / ")} ms after the kill started; requests routed to it afterwards: ${failover.routedAfterDown.join(" / ")}; statements moved to another member after failing on it: ${failover.movedStatements}`,
    `- serving again ${failover.servingAgainMs.map(ms).join(" / ")} ms after \`pg_ctl start\` began`,
    ...failover.requests.map((r) => `- ${r.role} ${r.case}: ${r.stats.n} answered, p50 ${ms(r.stats.p50)} ms, p99 ${ms(r.stats.p99)} ms, failed ${failed(r.stats)}`),
    "",
  ].join("\n");
}

async function main() {
  const transactions = Number(args.transactions);
  const cluster = await startReplicaCluster({
    replicas: 1,
    settings: ["shared_buffers = 128MB"],
    load: async (_admin, url) => {
      const generator = new URL("./generate/main.ts", import.meta.url).pathname;
      await promisify(execFile)(process.execPath, [generator, "--transactions", String(transactions), "--seed", "1", "--create", "--database-url", url], {
        maxBuffer: 64 * 1024 * 1024,
      });
    },
  });
  try {
    await cluster.caughtUp();
    const [primary, replica] = [cluster.primary, cluster.replicas[0]];
    if (replica === undefined) throw new Error("no replica");
    const scenario = buildMixedScenarios(buildCases(await readDataset(cluster.admin))).find((s) => s.heavyProtocol === "rest");
    if (scenario === undefined) throw new Error("the generated index has no hot account or complete trace for the mixed load");
    const replicated = { DATABASE_REPLICA_URLS: replica.url };
    // Admission is per instance: two on one host admit twice the work unless each gets half the slots.
    const halfSlots = { ...replicated, MAX_CONCURRENT_REQUESTS: String(Math.ceil(loadConfig({}).maxConcurrentRequests / 2)) };
    const topologies: [string, Record<string, string>[]][] = [
      ["1 instance, primary", [{}]],
      ["2 instances, primary", [{}, {}]],
      ["2 instances, primary + replica", [replicated, replicated]],
      [`2 instances with MAX_CONCURRENT_REQUESTS=${halfSlots.MAX_CONCURRENT_REQUESTS}, primary + replica`, [halfSlots, halfSlots]],
    ];
    const measured: Measured[] = [];
    for (const [name, envs] of topologies) {
      const servers = await Promise.all(envs.map((env) => startServer(primary.url, env, [])));
      try {
        process.stderr.write(`scale-out: ${name}\n`);
        measured.push(await measureTopology(name, cluster, servers, scenario.heavy, scenario.probes));
      } finally {
        await Promise.all(servers.map((s) => s.stop()));
      }
    }
    process.stderr.write("scale-out: failover\n");
    const failover = await measureFailover(cluster, scenario.heavy, scenario.probes);
    const text = report(transactions, measured, failover);
    const dir = new URL(`../${args.out}/scale-out/`, import.meta.url);
    await mkdir(dir, { recursive: true });
    await writeFile(new URL("latest.md", dir), text);
    await writeFile(new URL(`${new Date().toISOString().replace(/[:.]/g, "-")}.json`, dir), JSON.stringify({ transactions, measured, failover }, null, 2));
    process.stdout.write(text);
  } finally {
    await cluster.close();
  }
}

await main();
