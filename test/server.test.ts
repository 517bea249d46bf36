import { Code, ConnectError } from "@connectrpc/connect";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecording } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedMasterchainInfo } from "../src/recordings/recorded.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startOutageProxy, type OutageProxy } from "./support/proxy.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await new IndexLoader()
    .addMasterchainInfo(await readRecording<RecordedMasterchainInfo>("masterchainInfo_mainnet_gem_1.json"))
    .write(db.admin);
});
afterAll(async () => {
  await db?.drop();
});

describe("HTTP surface", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(db.url);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("reports health", async () => {
    expect(await server.rest("/healthz")).toMatchObject({ status: 200, body: { status: "ok" } });
  });

  it("answers unknown paths with a JSON 404", async () => {
    const { status, body } = await server.rest("/api/v3/nope");
    expect(status).toBe(404);
    expect(body).toEqual({ error: "not found: GET /api/v3/nope" });
  });

  it("refuses other methods on REST paths", async () => {
    const response = await fetch(`${server.baseUrl}/api/v3/masterchainInfo`, { method: "POST", body: "{}" });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
    expect(await response.json()).toEqual({ error: "method POST not allowed: use GET" });
  });

  it("ignores unknown query parameters, as toncenter does", async () => {
    expect((await server.rest("/api/v3/masterchainInfo?foo=bar")).status).toBe(200);
  });

  it("answers CORS preflights for browser clients", async () => {
    const response = await fetch(`${server.baseUrl}/tonquery.v1.TonQueryService/GetMasterchainInfo`, {
      method: "OPTIONS",
      headers: { origin: "https://example.org", "access-control-request-method": "POST", "access-control-request-headers": "content-type,x-grpc-web" },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-allow-methods")).toContain("POST");
    expect(response.headers.get("access-control-allow-headers")).toBe("content-type,x-grpc-web");
  });

  it("exposes gRPC-web status headers to browsers", async () => {
    const response = await fetch(`${server.baseUrl}/api/v3/masterchainInfo`, { headers: { origin: "https://example.org" } });
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-expose-headers")).toContain("Grpc-Status");
  });

  it("serves REST over HTTP/2 cleartext too", async () => {
    const session = http2.connect(server.baseUrl);
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const stream = session.request({ ":path": "/api/v3/masterchainInfo" });
        let text = "";
        stream.setEncoding("utf8");
        stream.on("data", (chunk: string) => (text += chunk));
        stream.on("end", () => resolve(text));
        stream.on("error", reject);
      });
      expect(JSON.parse(body)).toHaveProperty("last.seqno", 51317643);
    } finally {
      session.close();
    }
  });

  it("drops a connection that never says anything only after its own timeout, without disturbing others", async () => {
    const { connect } = await import("node:net");
    const idle = connect(Number(new URL(server.baseUrl).port), "127.0.0.1");
    await new Promise((resolve) => idle.once("connect", resolve));
    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);
    idle.destroy();
  });
});

describe("database outage", () => {
  let proxy: OutageProxy;
  let server: TestServer;
  beforeAll(async () => {
    proxy = await startOutageProxy(db.url);
    server = await startTestServer(proxy.url);
  });
  afterAll(async () => {
    await server?.close();
    await proxy?.close();
  });

  it("gives clean 503s while the database is away and recovers by itself", async () => {
    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);

    await proxy.cut();
    const during = await server.rest("/api/v3/masterchainInfo");
    expect(during).toMatchObject({ status: 503, body: { error: "database unavailable" } });
    expect(await server.rest("/healthz")).toMatchObject({ status: 503, body: { status: "unavailable" } });
    for (const protocol of rpcProtocols) {
      const failure = await server.client(protocol).getMasterchainInfo({}).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(ConnectError);
      expect((failure as ConnectError).code).toBe(Code.Unavailable);
      expect((failure as ConnectError).rawMessage).toBe("database unavailable");
    }

    await proxy.restore();
    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);
    expect((await server.rest("/healthz")).status).toBe(200);
    expect((await server.client("grpc").getMasterchainInfo({})).last?.seqno).toBe(51317643);
  });
});

describe.runIf(process.env.TEST_DATABASE !== "pglite")("PostgreSQL session guarantees", () => {
  let server: TestServer;
  beforeAll(async () => {
    // PGlite's socket ignores session settings sent at connect time, so these hold on a real server only.
    server = await startTestServer(db.url, { STATEMENT_TIMEOUT_MS: "300" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("connects read-only", async () => {
    const failure = await server.sql`insert into marketplace_names values ('0:00', 'x')`.catch((err: unknown) => err);
    expect((failure as { code?: string }).code).toBe("25006");
  });

  it("turns a statement timeout into 504 and DeadlineExceeded", async () => {
    const release = await lockBlocks(db);
    try {
      const rest = await server.rest("/api/v3/masterchainInfo");
      expect(rest).toMatchObject({ status: 504, body: { error: "timeout: the query took longer than the statement timeout" } });
      const failure = await server.client("grpc").getMasterchainInfo({}).catch((err: unknown) => err);
      expect((failure as ConnectError).code).toBe(Code.DeadlineExceeded);
    } finally {
      await release();
    }
    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);
  });

  it("lets a request in flight finish on graceful shutdown, then refuses new connections", async () => {
    const own = await startTestServer(db.url);
    const release = await lockBlocks(db);
    const inFlight = own.rest("/api/v3/masterchainInfo");
    await new Promise((r) => setTimeout(r, 100));
    const closed = own.server.close();
    await new Promise((r) => setTimeout(r, 100));
    await release();
    expect((await inFlight).status).toBe(200);
    await closed;
    await expect(fetch(`${own.baseUrl}/healthz`)).rejects.toThrow();
    await own.db.end();
  });

  it("ends a request that waits for its turn at the server's deadline when the client set none", async () => {
    const own = await startTestServer(db.url, { MAX_CONCURRENT_REQUESTS: "1", REQUEST_TIMEOUT_MS: "300", STATEMENT_TIMEOUT_MS: "20000" });
    const release = await lockBlocks(db);
    try {
      // The first request holds the only slot while its statement waits for the lock; its own answer ends at the
      // deadline, the slot stays taken.
      const first = await own.rest("/api/v3/masterchainInfo");
      expect(first).toMatchObject({ status: 504 });
      const started = Date.now();
      const failure = await own.client("grpc").getMasterchainInfo({}).catch((err: unknown) => err);
      expect((failure as ConnectError).code).toBe(Code.DeadlineExceeded);
      expect((failure as ConnectError).rawMessage).toBe("the request took longer than the server's deadline of 300 ms");
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await release();
    }
    expect((await own.client("connect").getMasterchainInfo({})).last?.seqno).toBe(51317643);
    await own.close();
  });
});

/** Holds an exclusive lock on blocks until the returned function is called. */
async function lockBlocks(database: TestDatabase): Promise<() => Promise<void>> {
  const reserved = await database.admin.reserve();
  await reserved`begin`;
  await reserved`lock table blocks in access exclusive mode`;
  return async () => {
    await reserved`rollback`;
    reserved.release();
  };
}
