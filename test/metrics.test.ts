import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { scrapeMetrics, type Scrape } from "./support/metrics.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

// GET /metrics as Prometheus reads it: the text parsed by a Prometheus text-format parser, the counters compared
// before and after real calls through every door.

const onRealPostgres = process.env.TEST_DATABASE !== "pglite";
const rpcDoors = { connect: "connect", grpc: "grpc", "grpc-web": "grpc_web" } as const;

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
});
afterAll(async () => {
  await db?.drop();
});

/**
 * Scrapes until `ready` holds (at most 5 s): a request is counted when its response has closed on the server, which
 * for an HTTP/2 stream may be a moment after the client has its answer.
 */
async function scrapeUntil(baseUrl: string, ready: (scrape: Scrape) => boolean): Promise<Scrape> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const scrape = await scrapeMetrics(baseUrl);
    if (ready(scrape) || Date.now() > deadline) return scrape;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("/metrics", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(db.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("counts requests by door, operation and outcome code after real REST, Connect, gRPC and gRPC-web calls", async () => {
    const before = await scrapeMetrics(server.baseUrl);
    expect(before.contentType).toBe("text/plain; version=0.0.4; charset=utf-8");

    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);
    expect((await server.rest("/api/v3/adjacentTransactions?hash=zz")).status).toBe(422);
    expect((await server.rest("/no/such/path")).status).toBe(404);
    for (const protocol of rpcProtocols) {
      await server.client(protocol).getMasterchainInfo({});
      await expect(server.client(protocol).getAdjacentTransactions({ hash: "zz" })).rejects.toMatchObject({ code: Code.InvalidArgument });
    }

    const expected: Record<string, string>[] = [
      { door: "rest", operation: "GetMasterchainInfo", code: "200" },
      { door: "rest", operation: "GetAdjacentTransactions", code: "422" },
      { door: "http", operation: "other", code: "404" },
      ...Object.values(rpcDoors).flatMap((door) => [
        { door, operation: "GetMasterchainInfo", code: "OK" },
        { door, operation: "GetAdjacentTransactions", code: "INVALID_ARGUMENT" },
      ]),
    ];
    const delta = (scrape: Scrape, labels: Record<string, string>) => scrape.value("tonquery_requests_total", labels) - before.value("tonquery_requests_total", labels);
    const after = await scrapeUntil(server.baseUrl, (scrape) => expected.every((labels) => delta(scrape, labels) >= 1));
    expect(after.type("tonquery_requests_total")).toBe("COUNTER");
    for (const labels of expected) expect(delta(after, labels), JSON.stringify(labels)).toBe(1);
    // Every masterchainInfo ran its one statement, under its name.
    const statements = (scrape: Scrape) => scrape.count("tonquery_db_statement_duration_seconds", { statement: "masterchain_range" });
    expect(statements(after) - statements(before)).toBe(4);
  });

  it("has latency histograms with buckets from 1 ms to 10 s", async () => {
    await server.rest("/api/v3/masterchainInfo");
    const scrape = await scrapeUntil(server.baseUrl, (s) => s.count("tonquery_request_duration_seconds", { door: "rest", operation: "GetMasterchainInfo" }) > 0);
    for (const name of ["tonquery_request_duration_seconds", "tonquery_db_statement_duration_seconds", "tonquery_admission_wait_seconds"]) {
      expect(scrape.type(name), name).toBe("HISTOGRAM");
    }
    const labels = { door: "rest", operation: "GetMasterchainInfo" };
    const buckets = scrape.buckets("tonquery_request_duration_seconds", labels);
    expect(buckets.map(([le]) => le)).toEqual(["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"]);
    const counts = buckets.map(([, n]) => n);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(counts.at(-1)).toBe(scrape.count("tonquery_request_duration_seconds", labels));
    expect(scrape.sum("tonquery_request_duration_seconds", labels)).toBeGreaterThan(0);
    // Each door's series are its own (the parser's histogram grouping is not relied on).
    expect(scrape.buckets("tonquery_request_duration_seconds", { door: "http" }).length % 14).toBe(0);
  });

  it("shows admission, connection pools, the database's availability and the process", async () => {
    const scrape = await scrapeMetrics(server.baseUrl);
    expect(scrape.value("tonquery_admission_queue_length")).toBe(0);
    expect(scrape.value("tonquery_admission_slots", { lane: "reserved" })).toBe(2);
    expect(scrape.value("tonquery_admission_slots", { lane: "shared" })).toBe(6);
    expect(scrape.samples("tonquery_admission_slots_in_use", { lane: "shared" }).map((m) => m.value)).toEqual(["0"]);
    expect(scrape.count("tonquery_admission_wait_seconds")).toBeGreaterThan(0);
    const pools = scrape.samples("tonquery_db_connections_max").map((m) => [m.labels?.pool, Number(m.value)]);
    // DB_POOL_SIZE 10: a fifth plans each call's values; the embedded database's one session serves both.
    expect(pools).toEqual(db.engine === "postgresql" ? [["prepared", 8], ["custom_plan", 2]] : [["shared", 1]]);
    expect(scrape.samples("tonquery_db_connections_in_use").length).toBe(pools.length);
    expect(scrape.samples("tonquery_db_statements_waiting").length).toBe(pools.length);
    expect(scrape.value("tonquery_db_up")).toBe(1);
    expect(scrape.value("process_cpu_seconds_total")).toBeGreaterThan(0);
    expect(scrape.value("process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(scrape.value("nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(scrape.type("nodejs_eventloop_lag_seconds")).toBe("GAUGE");
  });

  it("answers HEAD without a body and refuses other methods", async () => {
    const head = await fetch(`${server.baseUrl}/metrics`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const post = await fetch(`${server.baseUrl}/metrics`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });
});

// A statement held back by a lock: the embedded database runs every connection in one session, where a lock holds
// nobody back, so this needs the real server.
describe.runIf(onRealPostgres)("/metrics while statements wait on a lock", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(db.url, { STATEMENT_TIMEOUT_MS: "1000", MAX_CONCURRENT_REQUESTS: "1" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("shows the queue, the connection in use, and counts the statement timeouts", async () => {
    const before = await scrapeMetrics(server.baseUrl);
    const timeouts = (scrape: Scrape) => scrape.value("tonquery_db_statement_timeouts_total", { statement: "masterchain_range" });
    const answers = await db.admin.begin(async (tx) => {
      await tx`lock table blocks in access exclusive mode`;
      // The one admission slot: the first request takes it and waits on the lock, the second waits for the slot.
      const requests = [server.rest("/api/v3/masterchainInfo"), server.rest("/api/v3/masterchainInfo")];
      const busy = await scrapeUntil(server.baseUrl, (s) => s.value("tonquery_admission_queue_length") === 1 && s.value("tonquery_db_connections_in_use", { pool: "prepared" }) === 1);
      expect(busy.value("tonquery_admission_queue_length")).toBe(1);
      expect(busy.value("tonquery_admission_slots_in_use", { lane: "shared" })).toBe(1);
      expect(busy.value("tonquery_db_connections_in_use", { pool: "prepared" })).toBe(1);
      return Promise.all(requests);
    });
    // Both statements outlasted STATEMENT_TIMEOUT_MS behind the lock (the second after queueing for the first).
    expect(answers.map((a) => a.status)).toEqual([504, 504]);
    const after = await scrapeUntil(server.baseUrl, (s) => s.value("tonquery_requests_total", { door: "rest", operation: "GetMasterchainInfo", code: "504" }) === 2);
    expect(timeouts(after) - timeouts(before)).toBe(2);
    expect(after.value("tonquery_requests_total", { door: "rest", operation: "GetMasterchainInfo", code: "504" })).toBe(2);
    const waited = after.sum("tonquery_admission_wait_seconds") - before.sum("tonquery_admission_wait_seconds");
    expect(waited).toBeGreaterThan(0.5);
    expect(after.value("tonquery_admission_queue_length")).toBe(0);
  });
});
