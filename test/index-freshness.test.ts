import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReplicaLag } from "../src/db/replicas.ts";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { indexSeqnoHeader, minIndexSeqnoHeader } from "../src/service/index-freshness.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

// The read-your-index headers on one database. Without replicas no X-Index-Seqno is sent (one database never goes
// back) and any X-Min-Index-Seqno is served by it; with the database named as its own replica (a replica URL that
// reaches the primary, as through a proxy), every answer carries the newest masterchain seqno of the database that
// served it. The routing between real replicas is in replicas.test.ts.

/** The demo dataset's newest masterchain block. */
const demoLastSeqno = 51317643;
const demoTxHash = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";
const onRealPostgres = process.env.TEST_DATABASE !== "pglite";

let db: TestDatabase;
let server: TestServer;
beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

it("no X-Index-Seqno comes from a service on a single database", async () => {
  const { status, headers } = await server.rest("/api/v3/masterchainInfo");
  expect(status).toBe(200);
  expect(headers.get(indexSeqnoHeader)).toBeNull();
});

// PGlite serves every connection in one session, which a second member's pools would interleave with the first's.
describe.runIf(onRealPostgres)("X-Index-Seqno, with replicas", () => {
  let replicated: TestServer;
  beforeAll(async () => {
    replicated = await startTestServer(db.url, { DATABASE_URL: db.url, DATABASE_REPLICA_URLS: db.url, DB_PROBE_INTERVAL_MS: "100" });
    const deadline = Date.now() + 10_000;
    while (!replicated.db.memberStats().every((m) => m.serving) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  });
  afterAll(async () => {
    await replicated?.close();
  });

  it.each(["/api/v3/masterchainInfo", `/api/v3/traces?tx_hash=${demoTxHash}`, `/api/v3/adjacentTransactions?hash=${demoTxHash}&direction=out`])(
    "comes with every REST answer: %s",
    async (path) => {
      const { status, headers } = await replicated.rest(path);
      expect(status).toBe(200);
      expect(headers.get(indexSeqnoHeader)).toBe(String(demoLastSeqno));
    },
  );

  it.each(rpcProtocols)("comes with every RPC answer over %s", async (protocol) => {
    let header: string | null = null;
    const response = await replicated.client(protocol).getMasterchainInfo({}, { onHeader: (h) => (header = h.get(indexSeqnoHeader)) });
    expect(response.last?.seqno).toBe(demoLastSeqno);
    expect(header).toBe(String(demoLastSeqno));
  });

  it("is served by the replica, which took every request", async () => {
    const [primary, replica] = replicated.db.memberStats();
    expect(primary?.requests).toBe(0);
    expect(replica?.requests).toBeGreaterThanOrEqual(6);
  });

  it("is not sent with an error", async () => {
    const { status, headers } = await replicated.rest("/api/v3/adjacentTransactions?hash=00&direction=out");
    expect(status).toBe(422);
    expect(headers.get(indexSeqnoHeader)).toBeNull();
  });

  it("is readable by browsers", async () => {
    const response = await fetch(`${replicated.baseUrl}/api/v3/masterchainInfo`, { headers: { origin: "https://example.org" } });
    expect(response.headers.get(indexSeqnoHeader)).toBe(String(demoLastSeqno));
    expect(response.headers.get("access-control-expose-headers")?.toLowerCase()).toContain(indexSeqnoHeader);
  });
});

const lastSeqnoOf = (body: unknown) => (body as { last: { seqno: number } }).last.seqno;

describe("X-Min-Index-Seqno", () => {
  const get = (value: string) => fetch(`${server.baseUrl}/api/v3/masterchainInfo`, { headers: { [minIndexSeqnoHeader]: value } });

  it("is served by the one database whatever it asks for: nothing is fresher", async () => {
    for (const value of [String(demoLastSeqno), "0", String(demoLastSeqno + 1000), ""]) {
      const response = await get(value);
      expect(response.status).toBe(200);
      expect(lastSeqnoOf(await response.json())).toBe(demoLastSeqno);
    }
  });

  it.each(["-1", "12abc", "1.5", "99999999999", "0x10"])("refuses %s like a bad parameter", async (value) => {
    const response = await get(value);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ error: "invalid x-min-index-seqno: expected a masterchain seqno" });
    const rpc = await server
      .client("grpc")
      .getMasterchainInfo({}, { headers: { [minIndexSeqnoHeader]: value } })
      .catch((err: unknown) => err);
    expect(rpc).toBeInstanceOf(ConnectError);
    expect((rpc as ConnectError).code).toBe(Code.InvalidArgument);
  });
});

describe("replica lag from WAL positions", () => {
  /** The primary's write positions as the probe read them, as [time ms, lsn]. */
  const primaryRead = (keepMs: number, positions: [number, bigint][]) => {
    const lag = new ReplicaLag(keepMs);
    for (const [at, lsn] of positions) lag.primaryAt({ lsn, seqno: undefined, at });
    return lag;
  };
  const lag = primaryRead(10_000, [
    [1000, 100n],
    [2000, 100n],
    [3000, 250n],
    [4000, 400n],
  ]);
  const replicaAt = (lsn: bigint) => ({ lsn, seqno: undefined, at: 4000 });

  it("is zero for a replica that has replayed what the primary last wrote, however long ago", () => {
    expect(lag.lagMs(replicaAt(400n), 60_000)).toBe(0);
    expect(lag.lagMs(replicaAt(500n), 4500)).toBe(0);
  });

  it("is the time since the primary was first seen past the replica's position", () => {
    expect(lag.lagMs(replicaAt(100n), 4500)).toBe(1500);
    expect(lag.lagMs(replicaAt(300n), 4500)).toBe(500);
    expect(lag.lagMs(replicaAt(300n), 9000)).toBe(5000);
  });

  it("is unknown (infinite) for a replica behind every position kept, or not measured yet", () => {
    expect(lag.lagMs(replicaAt(50n), 4500)).toBe(Number.POSITIVE_INFINITY);
    expect(lag.lagMs(undefined, 4500)).toBe(Number.POSITIVE_INFINITY);
  });

  it("keeps the newest position older than its window, so old lag stays visible", () => {
    const short = primaryRead(1000, [
      [1000, 100n],
      [2000, 200n],
      [5000, 300n],
      [6000, 400n],
    ]);
    // 200 was written by t=2000: a replica still at 150 has missed it for at least 4 s, not 1 s.
    expect(short.lagMs({ lsn: 150n, seqno: undefined, at: 6000 }, 6000)).toBe(4000);
    expect(short.lagMs({ lsn: 250n, seqno: undefined, at: 6000 }, 6000)).toBe(1000);
  });
});
