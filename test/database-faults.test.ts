import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase, runQuery, type Database } from "../src/db/client.ts";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startOutageProxy, type OutageProxy } from "./support/proxy.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// What the service's database access guarantees when the database misbehaves: a statement that times out mid-result,
// an outage, a host that stops answering, a statement that tries to turn writes back on, a request that is gone.

const onRealPostgres = process.env.TEST_DATABASE !== "pglite";
const never = new AbortController().signal;
/** A recorded wallet transfer of the demo dataset: its trace has transactions, messages and actions. */
const demoTxHash = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
});
afterAll(async () => {
  await db?.drop();
});

describe.runIf(onRealPostgres)("a statement that times out mid-result", () => {
  let server: TestServer;
  beforeAll(async () => {
    // Four prepared-statement connections, three of them kept busy by the failing statements: the innocent requests
    // keep landing on connections whose last statement failed mid-result.
    server = await startTestServer(db.url, { STATEMENT_TIMEOUT_MS: "300", DB_POOL_SIZE: "6" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("leaves every other request on its connection a correct answer", async () => {
    const path = `/api/v3/traces?tx_hash=${demoTxHash}&include_actions=true`;
    const expected = await server.rest(path);
    expect(expected.status).toBe(200);

    // Three rows arrive, then the fourth row outlasts the statement timeout: on one of the service's own connections,
    // taken as the service takes them (through its connection permits, which its leases count on).
    const timingOut = () =>
      // A signal of its own per statement: a request's route (its member) is looked up by its signal.
      runQuery(new AbortController().signal, server.sql, "test_times_out", (tx) => tx`select i, case when i > 3 then pg_sleep(1)::text end as late from generate_series(1, 10) as i`).then(
        () => "finished",
        // The statement timeout's SQLSTATE 57014, as runQuery reports it.
        (err: unknown) => (err instanceof ConnectError && err.cause instanceof Error ? (err.cause as { code?: string }).code : err),
      );
    const until = Date.now() + 3000;
    const disruptors = Array.from({ length: 3 }, async () => {
      const codes: unknown[] = [];
      while (Date.now() < until) codes.push(await timingOut());
      return codes;
    });
    const innocents = Array.from({ length: 4 }, async () => {
      const answers: { status: number; body: unknown }[] = [];
      while (Date.now() < until) answers.push(await server.rest(path));
      return answers;
    });
    const codes = (await Promise.all(disruptors)).flat();
    const answers = (await Promise.all(innocents)).flat();

    const wrong = answers.filter((a) => a.status !== 200 || JSON.stringify(a.body) !== JSON.stringify(expected.body));
    expect(wrong.map((a) => a.status)).toEqual([]);
    expect(answers.length).toBeGreaterThan(5);
    expect(new Set(codes)).toEqual(new Set(["57014"]));
  });
});

describe("a database outage", () => {
  let proxy: OutageProxy;
  let server: TestServer;
  beforeAll(async () => {
    proxy = await startOutageProxy(db.url);
    // A deadline far beyond what detection takes: a 504 would mean the outage was waited out.
    server = await startTestServer(proxy.url, { REQUEST_TIMEOUT_MS: "30000" });
  });
  afterAll(async () => {
    await server?.close();
    await proxy?.close();
  });

  const masterchainInfo = () => server.rest("/api/v3/masterchainInfo");

  it("fails requests with 503 at once while the database refuses connections, and recovers by itself", async () => {
    expect((await masterchainInfo()).status).toBe(200);
    await proxy.cut();
    const started = Date.now();
    const failures = await Promise.all(Array.from({ length: 20 }, masterchainInfo));
    expect(new Set(failures.map((f) => f.status))).toEqual(new Set([503]));
    // Failed fast, not after connection attempts or the deadline.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await server.rest("/healthz")).toMatchObject({ status: 503, body: { status: "unavailable" } });
    const rpc = await server.client("grpc").getMasterchainInfo({}).catch((err: unknown) => err);
    expect((rpc as ConnectError).code).toBe(Code.Unavailable);

    await proxy.restore();
    // The first request after the database is back is answered.
    expect((await masterchainInfo()).status).toBe(200);
    expect((await server.rest("/healthz")).status).toBe(200);
  });

  it("notices a host that stops answering instead of waiting out the deadline, and recovers by itself", async () => {
    expect((await masterchainInfo()).status).toBe(200);
    await proxy.blackhole();
    const started = Date.now();
    // Sent on a pooled connection that no longer answers: the probe finds the host gone and the request ends.
    const inFlight = await masterchainInfo();
    expect(inFlight).toMatchObject({ status: 503, body: { error: "database unavailable" } });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await masterchainInfo()).status).toBe(503);
    expect((await server.rest("/healthz")).status).toBe(503);

    await proxy.restore();
    expect((await masterchainInfo()).status).toBe(200);
    expect((await server.rest("/healthz")).status).toBe(200);
  });
});

describe("statements of a request", () => {
  let database: Database;
  const sent: string[] = [];
  beforeAll(() => {
    // One prepared-statement connection: a statement waits for it while another holds it.
    const config = loadConfig({ DB_POOL_SIZE: "2" });
    database = openDatabase(
      databaseOptions(config, db.url, { sharedSession: !onRealPostgres, observe: { built: () => {}, sent: (text) => sent.push(text) } }),
    );
  });
  afterAll(async () => {
    await database?.end();
  });

  it("never start once their request is gone, even when their connection comes free after that", async () => {
    const holder = runQuery(never, database.sql, "test", (tx) => tx`select pg_sleep(0.3) as slept, 'holder' as who`);
    await new Promise((r) => setTimeout(r, 50));
    const request = new AbortController();
    const waiting = runQuery(request.signal, database.sql, "test", (tx) => tx`select 'gone request' as who`);
    request.abort(new ConnectError("client went away", Code.Canceled));
    await expect(waiting).rejects.toMatchObject({ code: Code.Canceled });
    await holder;
    // The connection has come free and served another statement since.
    expect((await runQuery(never, database.sql, "test", (tx) => tx`select 'next' as who`))[0]?.who).toBe("next");
    expect(sent.some((text) => text.includes("gone request"))).toBe(false);
    expect(sent.some((text) => text.includes("'next'"))).toBe(true);
  });

  it.runIf(onRealPostgres)("run in read-only transactions that no statement can turn writable", async () => {
    // Turning the session default off, as a statement could, must not let the next statement write.
    await runQuery(never, database.sql, "test", (tx) => tx`select set_config('default_transaction_read_only', 'off', false)`);
    const write = runQuery(never, database.sql, "test", (tx) => tx`insert into marketplace_names (address, name) values ('0:00', 'x')`);
    await expect(write).rejects.toMatchObject({ code: Code.Internal });
    const cause = await write.catch((err: ConnectError) => err.cause);
    expect((cause as { code?: string }).code).toBe("25006");
    expect(await db.admin`select count(*)::int as n from marketplace_names where address = '0:00'`).toEqual([{ n: 0 }]);
  });
});
