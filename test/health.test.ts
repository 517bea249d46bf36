import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { service as healthDefinition } from "grpc-health-check";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../gen/health/v1/health_pb.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase, type Database } from "../src/db/client.ts";
import { Telemetry } from "../src/observability/telemetry.ts";
import { createServer } from "../src/server/server.ts";
import { createTestDatabase, testEngine, type TestDatabase } from "./support/database.ts";
import { startOutageProxy, type OutageProxy } from "./support/proxy.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

// gRPC health checking (grpc.health.v1.Health) as Kubernetes' grpc probe and gRPC load balancers use it, called
// with gRPC's own health client definition on @grpc/grpc-js, and the HTTP probes /livez, /readyz and /healthz.

const typedApi = "tonquery.v1.TonQueryService";

interface HealthResponse {
  status: string;
}

/** grpc-js's dynamic client for the health service as grpc-health-check defines it. */
interface HealthStub extends grpc.Client {
  check(request: { service: string }, callback: (error: grpc.ServiceError | null, response?: HealthResponse) => void): grpc.ClientUnaryCall;
  watch(request: { service: string }): grpc.ClientReadableStream<HealthResponse>;
  list(request: object, callback: (error: grpc.ServiceError | null, response?: { statuses: Record<string, HealthResponse> }) => void): grpc.ClientUnaryCall;
}

const HealthClient = grpc.makeClientConstructor(healthDefinition as grpc.ServiceDefinition, "grpc.health.v1.Health");

function healthClient(baseUrl: string): HealthStub {
  return new HealthClient(new URL(baseUrl).host, grpc.credentials.createInsecure()) as unknown as HealthStub;
}

function check(client: HealthStub, service: string): Promise<string> {
  return new Promise((resolve, reject) => client.check({ service }, (error, response) => (error ? reject(error) : resolve(response?.status ?? ""))));
}

/** A Watch call, its statuses as they arrive, and how it ended. */
function watch(client: HealthStub, service: string) {
  const call = client.watch({ service });
  const statuses: string[] = [];
  let arrived = () => {};
  call.on("data", (response: HealthResponse) => {
    statuses.push(response.status);
    arrived();
  });
  // A failed call also reports its status, which is what the tests read.
  call.on("error", () => {});
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  return {
    call,
    statuses,
    ended,
    /** Resolves once the latest status received is `status`. */
    async until(status: string): Promise<void> {
      while (statuses.at(-1) !== status) await new Promise<void>((resolve) => (arrived = resolve));
    },
  };
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("grpc.health.v1.Health", () => {
  let server: TestServer;
  let client: HealthStub;
  beforeAll(async () => {
    server = await startTestServer(db.url);
    client = healthClient(server.baseUrl);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  it("answers Check with SERVING for the server and the typed API", async () => {
    expect(await check(client, "")).toBe("SERVING");
    expect(await check(client, typedApi)).toBe("SERVING");
  });

  it("answers Check over Connect, gRPC and gRPC-web alike, on the API's port", async () => {
    for (const protocol of rpcProtocols) {
      const health = createClient(Health, server.transport(protocol));
      expect((await health.check({ service: typedApi })).status, protocol).toBe(ServingStatus.SERVING);
    }
  });

  it("streams Watch over Connect, gRPC and gRPC-web alike", async () => {
    for (const protocol of rpcProtocols) {
      const health = createClient(Health, server.transport(protocol));
      const stop = new AbortController();
      const first = await health
        .watch({ service: "" }, { signal: stop.signal })
        [Symbol.asyncIterator]()
        .next();
      stop.abort();
      expect(first.value?.status, protocol).toBe(ServingStatus.SERVING);
    }
  });

  it("answers NOT_FOUND to a Check, and SERVICE_UNKNOWN without ending to a Watch, for an unknown service", async () => {
    const failure = await check(client, "no.such.Service").catch((error: unknown) => error);
    expect((failure as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
    for (const protocol of rpcProtocols) {
      const health = createClient(Health, server.transport(protocol));
      const connectFailure = await health.check({ service: "no.such.Service" }).catch((error: unknown) => error);
      expect(connectFailure, protocol).toBeInstanceOf(ConnectError);
      expect((connectFailure as ConnectError).code, protocol).toBe(Code.NotFound);
    }

    const watched = watch(client, "no.such.Service");
    await watched.until("SERVICE_UNKNOWN");
    // Still open: it ends only because the client cancels it.
    watched.call.cancel();
    expect((await watched.ended).code).toBe(grpc.status.CANCELLED);
    expect(watched.statuses).toEqual(["SERVICE_UNKNOWN"]);
  });

  it("lists both services", async () => {
    const listed = await new Promise((resolve, reject) => client.list({}, (error, response) => (error ? reject(error) : resolve(response))));
    expect(listed).toEqual({ statuses: { "": { status: "SERVING" }, [typedApi]: { status: "SERVING" } } });
  });

  it("answers the HTTP probes", async () => {
    for (const path of ["/livez", "/readyz", "/healthz"]) expect(await server.rest(path), path).toMatchObject({ status: 200, body: { status: "ok" } });
    const refused = await fetch(`${server.baseUrl}/readyz`, { method: "POST" });
    expect(refused.status).toBe(405);
  });
});

describe("health during a database outage", () => {
  let proxy: OutageProxy;
  let server: TestServer;
  let client: HealthStub;
  beforeAll(async () => {
    proxy = await startOutageProxy(db.url);
    server = await startTestServer(proxy.url);
    client = healthClient(server.baseUrl);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    await proxy?.close();
  });

  it("turns NOT_SERVING and readiness 503 while liveness stays 200, and SERVING again after", async () => {
    const watched = watch(client, typedApi);
    await watched.until("SERVING");

    await proxy.cut();
    // The availability probe notices the outage on its own; Watch tells when.
    await watched.until("NOT_SERVING");
    expect(await check(client, typedApi)).toBe("NOT_SERVING");
    expect(await check(client, "")).toBe("NOT_SERVING");
    expect(await server.rest("/livez")).toMatchObject({ status: 200, body: { status: "ok" } });
    expect(await server.rest("/readyz")).toMatchObject({ status: 503, body: { status: "unavailable", error: "database unavailable" } });
    expect(await server.rest("/healthz")).toMatchObject({ status: 503, body: { status: "unavailable" } });

    await proxy.restore();
    await watched.until("SERVING");
    expect(await check(client, typedApi)).toBe("SERVING");
    expect((await server.rest("/readyz")).status).toBe(200);
    expect(watched.statuses).toEqual(["SERVING", "NOT_SERVING", "SERVING"]);

    watched.call.cancel();
    expect((await watched.ended).code).toBe(grpc.status.CANCELLED);
  });
});

describe("health while the database answers but its connections serve nobody", () => {
  // Issue 23: after a network fault every pooled connection stayed checked out while the database answered its
  // probe; requests waited out their deadlines and readiness said 200 throughout. Here the pools report what they
  // reported then (every connection taken, statements waiting) while the test decides whether statements start.
  let blocked = false;
  let database: Database;
  let server: ReturnType<typeof createServer>;
  let baseUrl: string;
  let client: HealthStub;
  beforeAll(async () => {
    // A statement holds its connection at most 300 + 200 ms: pools blocked longer with none starting are stalled.
    const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", ACCESS_LOG: "false", STATEMENT_TIMEOUT_MS: "300", DB_CONNECT_TIMEOUT_MS: "200" });
    database = openDatabase(databaseOptions(config, db.url, { sharedSession: (await testEngine()) === "pglite" }));
    const asSeenThen: Database = {
      ...database,
      poolStates: () => database.poolStates().map((pool) => (blocked ? { ...pool, inUse: pool.max, waiting: 3 } : pool)),
    };
    server = createServer({ db: asSeenThen, config, telemetry: new Telemetry() });
    baseUrl = `http://127.0.0.1:${(await server.listen(0, "127.0.0.1")).port}`;
    client = healthClient(baseUrl);
  });
  afterAll(async () => {
    client?.close();
    await server?.close();
    await database?.end();
  });

  const readyz = async () => (await fetch(`${baseUrl}/readyz`)).status;
  /** Polls /readyz until it answers `status`, for at most `boundMs`; the status it last answered. */
  const readyzBecomes = async (status: number, boundMs: number) => {
    const until = Date.now() + boundMs;
    let last = await readyz();
    while (last !== status && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      last = await readyz();
    }
    return last;
  };

  it("is not ready while statements wait and none starts, and ready again once they do", async () => {
    const watched = watch(client, typedApi);
    await watched.until("SERVING");
    expect(await readyz()).toBe(200);

    blocked = true;
    // Stalled once blocked for longer than a statement may hold its connection (a bound, not a timing: a few samples).
    expect(await readyzBecomes(503, 3000)).toBe(503);
    await watched.until("NOT_SERVING");
    expect(await check(client, typedApi)).toBe("NOT_SERVING");
    expect(await fetch(`${baseUrl}/readyz`).then((r) => r.json())).toEqual({ status: "unavailable", error: "database connections stalled" });
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(503);
    expect((await fetch(`${baseUrl}/livez`)).status).toBe(200);

    // A statement starts (a lookup of a transaction the empty index lacks): the pools are busy, not stalled.
    const lookup = await fetch(`${baseUrl}/api/v3/adjacentTransactions?hash=${"ab".repeat(32)}&direction=out`);
    expect(lookup.status).not.toBe(504);
    await watched.until("SERVING");

    // Stalled again, then the pools empty: nothing waits any more.
    await watched.until("NOT_SERVING");
    blocked = false;
    await watched.until("SERVING");
    expect(await readyzBecomes(200, 3000)).toBe(200);
    expect(watched.statuses).toEqual(["SERVING", "NOT_SERVING", "SERVING", "NOT_SERVING", "SERVING"]);
    watched.call.cancel();
  });
});

describe("health during shutdown", () => {
  it("turns NOT_SERVING, answers readiness 503 on open connections and ends Watch streams cleanly", async () => {
    const own = await startTestServer(db.url);
    const client = healthClient(own.baseUrl);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const watched = watch(client, "");
      await watched.until("SERVING");
      expect(await get(agent, `${own.baseUrl}/readyz`)).toMatchObject({ status: 200 });

      const closed = own.server.close();
      // On the connection already open, during the shutdown's drain period: the load balancer learns to stop.
      expect(await get(agent, `${own.baseUrl}/readyz`)).toEqual({ status: 503, body: { status: "unavailable", error: "shutting down" } });
      const ended = await watched.ended;
      expect(ended.code).toBe(grpc.status.OK);
      expect(watched.statuses).toEqual(["SERVING", "NOT_SERVING"]);
      await closed;
    } finally {
      client.close();
      agent.destroy();
      await own.db.end();
    }
  });
});

function get(agent: http.Agent, url: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }));
      })
      .on("error", reject);
  });
}
