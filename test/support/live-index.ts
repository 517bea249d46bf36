import postgres from "postgres";
import { generateData } from "../../bench/generate/load.ts";
import { readChainStart } from "../../bench/generate/follow-start.ts";
import { startLiveWriter } from "../../bench/generate/follow.ts";
import { createTestDatabase, testEngine } from "./database.ts";
import { replicaClusterUnsupported, startReplicaCluster } from "./replica-cluster.ts";
import { startTestServer, type TestServer } from "./server.ts";

// The set-ups of the tests on a moving index: a generated index and the service reading it, on one server (the
// machine's PostgreSQL, or PGlite under TEST_DATABASE=pglite) or on a streaming replica of a primary that the writer
// writes to. PGlite's socket does not complete COPY, so there the live writer itself lays the index down first.

export interface LiveIndex {
  name: string;
  /**
   * How hard the writers may push: PGlite runs every statement of every connection one after another on one core,
   * so a writer at PostgreSQL's pace would starve the service (its health probe times out, requests fail).
   */
  pace: { flipIntervalMs: number; writerRate: number; writerConnections: number | undefined };
  /** Where writers write (the primary). */
  writeUrl: string;
  /** The service, reading the index (from the replica, in the replica set-up). */
  server: TestServer;
  /** The wallet the live writer makes busiest: the busiest of the index's last transactions. */
  busiestWallet: string;
  close(): Promise<void>;
}

/** Generated transactions: enough traces of every shape, generated in about a second. */
const generatedTransactions = 4000;
const seed = 22;

async function busiestWallet(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const start = await sql.begin("read only", (tx) => readChainStart(tx));
    const wallet = start?.accounts.find((a) => a.address.startsWith("0:"));
    if (wallet === undefined) throw new Error("the index has no wallet to follow");
    return wallet.address;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

export async function oneServerIndex(): Promise<LiveIndex> {
  const engine = await testEngine();
  const db = await createTestDatabase();
  if (engine === "postgresql") {
    await generateData({ url: db.url, transactions: generatedTransactions, seed });
  } else {
    const writer = await startLiveWriter({ url: db.url, rate: Number.POSITIVE_INFINITY, maxBatches: 120, seed, classifierLagMs: 0, connections: 1 });
    await writer.done;
  }
  const server = await startTestServer(db.url);
  return {
    name: engine === "postgresql" ? "PostgreSQL" : "PGlite",
    pace:
      engine === "postgresql"
        ? { flipIntervalMs: 2, writerRate: 150, writerConnections: undefined }
        : { flipIntervalMs: 20, writerRate: 20, writerConnections: 1 },
    writeUrl: db.url,
    server,
    busiestWallet: await busiestWallet(db.url),
    async close() {
      await server.close();
      await db.drop();
    },
  };
}

/** Why the replica set-up cannot run here, or undefined (PGlite has no replication: its run leaves the set-up out). */
export async function replicaIndexUnsupported(): Promise<string | undefined> {
  if ((await testEngine()) === "pglite") return "TEST_DATABASE=pglite: replication needs real PostgreSQL servers";
  return replicaClusterUnsupported();
}

export async function replicaIndex(): Promise<LiveIndex> {
  const cluster = await startReplicaCluster({
    replicas: 1,
    // The cluster commits without waiting for WAL flushes (synchronous_commit off), so WAL reaches the replica at the
    // WAL writer's rounds, 200 ms apart by default: the replica would see the writers' commits in bursts, not one by
    // one as a production replica of a busy primary does.
    settings: ["wal_writer_delay = 5ms"],
    load: (_admin, url) => generateData({ url, transactions: generatedTransactions, seed, create: true }).then(() => {}),
  });
  const [replica] = cluster.replicas;
  if (replica === undefined) throw new Error("no replica started");
  // Reads go to the replica as the service routes them in production; a lag bound of minutes keeps them there
  // while the writer keeps the primary busy.
  const server = await startTestServer(cluster.primary.url, {
    DATABASE_URL: cluster.primary.url,
    DATABASE_REPLICA_URLS: replica.url,
    DB_PROBE_INTERVAL_MS: "100",
    MAX_REPLICA_LAG_MS: "600000",
  });
  for (let waited = 0; !server.db.memberStats().some((m) => m.url.includes(`:${replica.port}/`) && m.serving); waited += 50) {
    if (waited > 20_000) throw new Error("the replica never served");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    name: "a streaming replica",
    pace: { flipIntervalMs: 2, writerRate: 150, writerConnections: undefined },
    writeUrl: cluster.primary.url,
    server,
    busiestWallet: await busiestWallet(cluster.primary.url),
    async close() {
      await server.close();
      await cluster.close();
    },
  };
}
