import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, isSnapshotLost, openDatabase, runQuery, type Database, type Sql } from "../src/db/client.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startOutageProxy } from "./support/proxy.ts";
import { recordedIndex } from "./support/encoder-indexes.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { startTestServer } from "./support/server.ts";

// One request, one snapshot: what the data layer guarantees to the statements of a request opened with a snapshot
// (every request of the service is, see `admitted` in service.ts), whatever commits meanwhile.

const onRealPostgres = process.env.TEST_DATABASE !== "pglite";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

function open(url: string, env: Record<string, string> = {}): Database {
  return openDatabase(databaseOptions(loadConfig(env), url, { sharedSession: db.engine === "pglite" }));
}

/** A masterchain block committed by the test, as the index worker commits one. */
let nextSeqno = 1;
async function commitBlock(): Promise<void> {
  await db.admin`insert into blocks (workchain, shard, seqno) values (-1, -9223372036854775808, ${nextSeqno++})`;
}

const connectionsInUse = (database: Database) => database.poolStates().reduce((sum, pool) => sum + pool.inUse, 0);

/** The service's transactions still open on the test's database: an ended request's anchor waits briefly for the next. */
async function openTransactions(): Promise<number> {
  if (!onRealPostgres) return 0;
  const [open] = await db.admin<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'tonquery' and state like 'idle in transaction%'`;
  return open?.n ?? 0;
}

/** Every request's connection back, and its transaction ended. */
const settled = (database: Database) => expect.poll(async () => connectionsInUse(database) + (await openTransactions())).toBe(0);

const countBlocks = (signal: AbortSignal, sql: Sql) =>
  runQuery(signal, sql, "test_count_blocks", (tx) => tx<{ n: number; pid: number }[]>`select count(*)::int as n, pg_backend_pid() as pid from blocks`).then(
    ([row]) => row as { n: number; pid: number },
  );

describe("a request's snapshot", () => {
  let database: Database;
  beforeAll(() => {
    database = open(db.url);
  });
  afterAll(async () => {
    await database?.end();
  });

  it("is what every statement of the request reads, on every connection, whatever commits after its first", async () => {
    await commitBlock();
    const request = new AbortController();
    const route = database.route(request.signal, undefined, "parallel");
    const first = await countBlocks(request.signal, database.sql);
    const writes = commitBlock().then(commitBlock);
    // PGlite runs an open transaction's messages alone: there the writer waits for the request to end.
    if (onRealPostgres) await writes;
    // Three at once: beside the anchor on connections of their own (on PostgreSQL), all in the first one's snapshot.
    const parallel = await Promise.all([database.sql, database.sqlCustomPlan, database.sql].map((sql) => countBlocks(request.signal, sql)));
    expect(parallel.map((r) => r.n)).toEqual([first.n, first.n, first.n]);
    if (onRealPostgres) expect(new Set([first.pid, ...parallel.map((r) => r.pid)]).size).toBeGreaterThan(1);
    route.end();
    await writes;

    const next = new AbortController();
    const nextRoute = database.route(next.signal, undefined, "parallel");
    expect((await countBlocks(next.signal, database.sql)).n).toBe(first.n + 2);
    nextRoute.end();
  });

  it("read serially, runs every statement on its anchor, without exporting it: one connection, one transaction", async () => {
    await commitBlock();
    const request = new AbortController();
    const route = database.route(request.signal, undefined, "serial");
    let writes: Promise<void> | undefined;
    try {
      const first = await countBlocks(request.signal, database.sql);
      writes = commitBlock();
      if (onRealPostgres) await writes;
      const rest = await Promise.all([database.sql, database.sqlCustomPlan, database.sql].map((sql) => countBlocks(request.signal, sql)));
      expect(rest.map((r) => r.n)).toEqual([first.n, first.n, first.n]);
      expect(new Set([first.pid, ...rest.map((r) => r.pid)])).toEqual(new Set([first.pid]));
      if (onRealPostgres) {
        const [exported] = await db.admin<{ n: number }[]>`select count(*)::int as n from pg_ls_dir('pg_snapshots') as f`;
        expect(exported?.n).toBe(0);
      }
    } finally {
      route.end();
      await writes;
    }
  });

  it.runIf(onRealPostgres)("read in parallel, reads serially when the pool had more than a quarter of its connections in use as it opened", async () => {
    // DB_POOL_SIZE 5: four connections in the prepared pool, where anchors open.
    const small = open(db.url, { DB_POOL_SIZE: "5" });
    const held = new AbortController();
    const heldRoute = small.route(held.signal, undefined, "serial");
    try {
      await countBlocks(held.signal, small.sql);
      const pidsOf = async () => {
        const request = new AbortController();
        const route = small.route(request.signal, undefined, "parallel");
        try {
          const first = await countBlocks(request.signal, small.sql);
          const rest = await Promise.all([small.sql, small.sql, small.sqlCustomPlan].map((sql) => countBlocks(request.signal, sql)));
          return new Set([first.pid, ...rest.map((r) => r.pid)]).size;
        } finally {
          route.end();
        }
      };
      // Another request's anchor held, the request's own makes two of four in use: nothing exported, all on the anchor.
      expect(await pidsOf()).toBe(1);
      // None held, its own is one of four: it exports, and its statements spread.
      heldRoute.end();
      await settled(small);
      expect(await pidsOf()).toBeGreaterThan(1);
    } finally {
      heldRoute.end();
      await settled(small);
      await small.end();
    }
  });

  it.runIf(onRealPostgres)("ends in the same write as the next request's begins, which reads what was committed meanwhile", async () => {
    const first = new AbortController();
    const firstRoute = database.route(first.signal, undefined, "serial");
    const before = await countBlocks(first.signal, database.sql);
    await commitBlock();
    // The first request's transaction is still open on its anchor when it ends; the next takes that connection.
    firstRoute.end();
    const next = new AbortController();
    const nextRoute = database.route(next.signal, undefined, "serial");
    try {
      const after = await countBlocks(next.signal, database.sql);
      expect(after.pid).toBe(before.pid);
      expect(after.n).toBe(before.n + 1);
    } finally {
      nextRoute.end();
    }
  });

  it("is left once the request ends: its transaction committed within milliseconds and its connection back in the pool", async () => {
    const request = new AbortController();
    const route = database.route(request.signal, undefined, "parallel");
    await Promise.all([countBlocks(request.signal, database.sql), countBlocks(request.signal, database.sql)]);
    expect(connectionsInUse(database)).toBeGreaterThan(0);
    route.end();
    await settled(database);
    // Nothing more is run for a request that has ended.
    await expect(countBlocks(request.signal, database.sql)).rejects.toThrow(/ended/);
  });

  it("never makes requests wait for each other's connections: each queues its statements on its own anchor", async () => {
    // One connection in each pool: two requests each hold one as their anchor, and their parallel statements find
    // no other connection free.
    const small = open(db.url, { DB_POOL_SIZE: "2" });
    try {
      const requests = Array.from({ length: 4 }, async () => {
        const request = new AbortController();
        const route = small.route(request.signal, undefined, "parallel");
        try {
          const first = await countBlocks(request.signal, small.sql);
          const rest = await Promise.all([small.sql, small.sqlCustomPlan, small.sql, small.sqlCustomPlan].map((sql) => countBlocks(request.signal, sql)));
          return rest.every((r) => r.n === first.n);
        } finally {
          route.end();
        }
      });
      expect(await Promise.all(requests)).toEqual([true, true, true, true]);
      await settled(small);
    } finally {
      await small.end();
    }
  });
});

describe("the snapshots of the service's requests", () => {
  it("are measured at /metrics: how long each held its anchor connection, and where its statements ran", async () => {
    const server = await startTestServer(db.url);
    try {
      const answer = await server.rest("/api/v3/traces?account=0:0000000000000000000000000000000000000000000000000000000000000001&limit=5");
      expect(answer.status).toBe(200);
      const scraped = async () => (await fetch(`${server.baseUrl}/metrics`)).text();
      await expect.poll(async () => /^tonquery_db_snapshot_hold_seconds_count (\d+)/m.exec(await scraped())?.[1]).toBe("1");
      expect(await scraped()).toMatch(/^tonquery_db_snapshot_statements_total\{placement="anchor"\} [1-9]/m);
    } finally {
      await server.close();
    }
  });
});

describe.runIf(onRealPostgres)("the service's requests", () => {
  let recorded: TestDatabase;
  beforeAll(async () => {
    recorded = await recordedIndex();
  });
  afterAll(async () => {
    await recorded?.drop();
  });

  it("read a small page serially, on its anchor, and a page of 100 traces in parallel while the pool is idle", async () => {
    const server = await startTestServer(recorded.url);
    try {
      const placed = async (placement: "anchor" | "beside") => (await scrapeMetrics(server.baseUrl)).value("tonquery_db_snapshot_statements_total", { placement });
      const children = await server.rest("/api/v3/adjacentTransactions?hash=79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f&direction=out");
      expect(children.status).toBe(200);
      // Its statements: the rows (with their states), then their messages, then the address book.
      await expect.poll(() => placed("anchor")).toBeGreaterThanOrEqual(3);
      expect(await placed("beside")).toBe(0);
      const traces = await server.rest("/api/v3/traces?account=UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH&limit=100");
      expect(traces.status).toBe(200);
      await expect.poll(() => placed("beside")).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });
});

describe.runIf(onRealPostgres)("a request whose server fails after its snapshot is taken", () => {
  it("fails as a lost snapshot, never finished elsewhere, and runs again from the start once restarted", async () => {
    const proxy = await startOutageProxy(db.url);
    const database = open(proxy.url, { DB_CONNECT_TIMEOUT_MS: "500", DB_PROBE_INTERVAL_MS: "200" });
    try {
      const request = new AbortController();
      const route = database.route(request.signal, undefined, "parallel");
      await countBlocks(request.signal, database.sql);
      await proxy.cut();
      const lost = await countBlocks(request.signal, database.sql).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isSnapshotLost(lost)).toBe(true);
      await proxy.restore();
      // The primary alone: once it answers again, the rerun takes a new snapshot there.
      route.failed.clear();
      route.restart();
      await expect.poll(() => countBlocks(request.signal, database.sql).then((r) => r.n, () => -1), { timeout: 5000 }).toBeGreaterThanOrEqual(0);
      route.end();
      await settled(database);
    } finally {
      await database.end();
      await proxy.close();
    }
  });
});
