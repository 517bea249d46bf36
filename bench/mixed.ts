// The mixed-load scenario: cheap requests (probes) measured while heavy pages run, which is what a user of a shared
// service sees. --mixed-heavy-clients clients (6) loop the hot account's pages of 1000 traces (case
// traces.hot.l1000) over REST (scenario mixed.rest) or gRPC (mixed.grpc), while --mixed-probe-clients clients (2)
// per probe loop REST GETs of masterchainInfo and of one trace by tx hash with its actions (traces.tx_hash.actions).
// The probes go over REST in both scenarios, as toncenter's clients send them; what changes is how the heavy pages
// reach the server. A probe client waits --mixed-probe-interval-ms (50) between the starts of its requests: back to
// back, a fast masterchainInfo loop would take a core of its own and measure its own load, not the heavy pages'.
// All loops run together through a warm-up into the measured time (load.ts, runSimultaneously).
// With --writer-rate N each scenario also runs as <id>.writer, with the live writer appending N masterchain blocks
// a second to the database from before the warm-up to the end: the same loads on an index that moves.

import type { BenchOptions, Protocol } from "./args.ts";
import type { BenchCase } from "./cases.ts";
import { createProtocolClient } from "./clients.ts";
import { runSimultaneously } from "./load.ts";
import { cpuMeter, type ServerProcess } from "./monitor.ts";
import type { MixedLoadRequests, MixedLoadResult } from "./report.ts";
import { startLiveWriter } from "./generate/follow.ts";

const heavyCase = "traces.hot.l1000";
const probeCases = ["masterchainInfo", "traces.tx_hash.actions"];
/** One scenario per protocol of the heavy clients; each runs only when its protocol is among --protocols. */
const heavyProtocols: readonly Protocol[] = ["rest", "grpc"];

export interface MixedScenario {
  /** mixed.rest, mixed.grpc, mixed.pages: selected with --cases like a case id. */
  id: string;
  heavyProtocol: Protocol;
  heavy: BenchCase;
  probes: BenchCase[];
  /** Masterchain blocks a second the live writer appends meanwhile; 0: none. */
  writerRate: number;
  /** Instead of heavy and probes: closed-loop classes of pages with their own client counts (see pageMixScenario). */
  pageMix?: PageMixClass[];
}

/** One class of a page mix: its page, and the clients looping it back to back. */
interface PageMixClass {
  page: BenchCase;
  clients: number;
}

/**
 * Issue 23's failure 3, mixed.pages: 46 clients loop small pages of the hot account (23 of 10 traces, 23 of 20) while
 * 2 loop pages of 100, all over REST. Admission weighs a page before reading it (4 transactions a trace) and
 * revises the weight once its traces are read; a 100-trace page that turned out heavier went back to the end of
 * the line, behind the newer small ones, and 7 of 10 ended in 504. Every class is reported (role "heavy": every
 * page should be answered).
 */
function pageMixScenario(cases: readonly BenchCase[]): MixedScenario | undefined {
  const byId = (id: string) => cases.find((c) => c.id === id);
  const ten = byId("traces.hot.l10");
  const hundred = byId("traces.hot.l100");
  if (ten === undefined || hundred === undefined || ten.method !== "getTraces") return undefined;
  // The bench's cases have no 20-trace page: the 10-trace one, asking for 20.
  const twenty: BenchCase = {
    ...ten,
    id: "traces.hot.l20",
    title: ten.title.replace(/limit 10$/, "limit 20"),
    request: { ...ten.request, limit: 20 },
    restPath: ten.restPath.replace(/([?&]limit=)10(?=&|$)/, "$120"),
    tags: { ...ten.tags, limit: 20 },
  };
  return {
    id: "mixed.pages",
    heavyProtocol: "rest",
    heavy: hundred,
    probes: [],
    writerRate: 0,
    pageMix: [
      { page: ten, clients: 23 },
      { page: twenty, clients: 23 },
      { page: hundred, clients: 2 },
    ],
  };
}

/** The scenarios the data allows (they need a hot account and a complete trace), built from the cases. */
export function buildMixedScenarios(cases: readonly BenchCase[], writerRate = 0): MixedScenario[] {
  const byId = (id: string) => cases.find((c) => c.id === id);
  const heavy = byId(heavyCase);
  const probes = probeCases.map(byId).filter((c) => c !== undefined);
  if (heavy === undefined || probes.length < probeCases.length) return [];
  const still: MixedScenario[] = heavyProtocols.map((protocol) => ({ id: `mixed.${protocol}`, heavyProtocol: protocol, heavy, probes, writerRate: 0 }));
  const pageMix = pageMixScenario(cases);
  if (pageMix !== undefined) still.push(pageMix);
  // The writer's runs come after all the others: it grows the database they read.
  const moving = writerRate > 0 ? still.map((s) => ({ ...s, id: `${s.id}.writer`, writerRate })) : [];
  return [...still, ...moving];
}

export function describeMixedScenario(s: MixedScenario, options: Pick<BenchOptions, "mixedHeavyClients" | "mixedProbeClients" | "mixedProbeIntervalMs">): string {
  if (s.pageMix !== undefined) return `${s.pageMix.map((c) => `${c.clients} clients loop ${c.page.id}`).join(", ")}, back to back over rest`;
  const probes = s.probes.map((p) => p.id).join(" and ");
  const writer = s.writerRate > 0 ? `, the live writer appending ${s.writerRate} masterchain blocks a second` : "";
  return `${options.mixedHeavyClients} clients loop ${s.heavy.id} over ${s.heavyProtocol} while ${options.mixedProbeClients} per probe loop ${probes} over rest, one request per ${options.mixedProbeIntervalMs} ms at most${writer}`;
}

/** What the scenario reads about the bench's database: the backends connected to it (their CPU) and when it is idle. */
export interface DatabaseWatch {
  backends(): Promise<string[]>;
  databaseIdle(): Promise<void>;
}

export async function runMixedScenario(s: MixedScenario, options: BenchOptions, server: ServerProcess, database: DatabaseWatch): Promise<MixedLoadResult> {
  const load = (role: MixedLoadRequests["role"], c: BenchCase, protocol: Protocol, clients: number, intervalMs: number) => {
    // A connection for each client (HTTP/1.1), so that no request waits on the client's side.
    const client = createProtocolClient(protocol, options.client, server.port, Math.max(1, clients));
    return { role, case: c.id, restPath: c.restPath, protocol, clients, client, send: client.prepare(c).send, concurrency: clients, intervalMs };
  };
  const loads =
    s.pageMix?.map((c) => load("heavy", c.page, s.heavyProtocol, c.clients, 0)) ?? [
      load("heavy", s.heavy, s.heavyProtocol, options.mixedHeavyClients, 0),
      ...s.probes.map((p) => load("probe", p, "rest", options.mixedProbeClients, options.mixedProbeIntervalMs)),
    ];
  const meter = cpuMeter(server);
  let peakRssMb = Number.NaN;
  const writer = s.writerRate > 0 ? await startLiveWriter({ url: options.databaseUrl, rate: s.writerRate }) : undefined;
  try {
    const results = await runSimultaneously(loads, {
      warmupMs: options.mixedWarmupMs,
      durationMs: options.mixedDurationMs,
      drainMs: options.maxRunMs,
      onMeasured: (phase) => {
        if (phase === "start") {
          server.takePeakRssMb();
          meter.start();
        } else {
          meter.stop();
          peakRssMb = server.takePeakRssMb();
        }
      },
    });
    const written = await writer?.stop();
    const spent = meter.spentMs(new Set(await database.backends()));
    // Requests aborted at the bound may still keep the server and PostgreSQL busy: let them finish first.
    if (results.some((r) => r.aborted)) {
      await server.waitIdle();
      await database.databaseIdle();
    }
    return {
      scenario: s.id,
      warmupMs: options.mixedWarmupMs,
      durationMs: options.mixedDurationMs,
      drainMs: options.maxRunMs,
      requests: results.map(({ role, case: id, restPath, protocol, clients, stats }) => ({ role, case: id, restPath, protocol, clients, stats })),
      cpuCores: { server: spent.server / options.mixedDurationMs, postgres: spent.postgres / options.mixedDurationMs },
      peakRssMb,
      writer:
        written === undefined
          ? undefined
          : { rate: s.writerRate, batchesPerSecond: written.batches / written.seconds, transactionsPerSecond: written.transactions / written.seconds },
    };
  } finally {
    await writer?.stop().catch(() => {});
    await Promise.all(loads.map((l) => l.client.close()));
  }
}
