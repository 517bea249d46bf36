import { Code } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { log, setLogLevel } from "../src/runtime/log.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";
import { openWs } from "./support/stream-clients.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import http2 from "node:http2";
import { connect } from "node:net";

// The access log and request ids as an operator reads them: the JSON lines the server writes to stderr, captured
// where log.ts writes them, next to the X-Request-Id each response carries.

type Line = Record<string, unknown>;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const rpcDoors = { connect: "connect", grpc: "grpc", "grpc-web": "grpc_web" } as const;

let db: TestDatabase;
let server: TestServer;
let lines: Line[] = [];
let stderr: MockInstance;

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  server = await startTestServer(db.url, { ACCESS_LOG: "true" });
  stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    for (const text of String(chunk).split("\n")) if (text.startsWith("{")) lines.push(JSON.parse(text) as Line);
    return true;
  });
});
afterAll(async () => {
  stderr?.mockRestore();
  await server?.close();
  await db?.drop();
});
afterEach(() => {
  setLogLevel("info");
});

/** The lines of request `id` once its access line is written (when its response has closed on the server). */
async function linesOf(id: string, expectAccessLine = true): Promise<Line[]> {
  const deadline = Date.now() + 5000;
  const mine = () => lines.filter((l) => l.request_id === id);
  while (expectAccessLine && !mine().some((l) => l.message === "request") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  // A line that should not come has had as long as one that does.
  if (!expectAccessLine) await new Promise((r) => setTimeout(r, 200));
  return mine();
}

/** The one line of request `id`: its access line, and nothing else. */
async function accessLineOf(id: string): Promise<Line | undefined> {
  const [line, ...more] = await linesOf(id);
  expect(more).toEqual([]);
  expect(line).toMatchObject({ level: "info", message: "request", request_id: id });
  return line;
}

describe("the access log", () => {
  it("writes one line per REST request, with the client's X-Request-Id, echoed in the response", async () => {
    // Uncoded, so that the body fetch hands back is the bytes the server sent (the line counts bytes on the wire).
    const response = await fetch(`${server.baseUrl}/api/v3/masterchainInfo`, { headers: { "x-request-id": "rest-1.ab_C:9", "accept-encoding": "identity" } });
    const body = await response.arrayBuffer();
    expect(response.headers.get("x-request-id")).toBe("rest-1.ab_C:9");
    const line = await accessLineOf("rest-1.ab_C:9");
    expect(line).toMatchObject({
      door: "rest",
      operation: "GetMasterchainInfo",
      method: "GET",
      path: "/api/v3/masterchainInfo",
      status: 200,
      bytes: body.byteLength,
      client: "127.0.0.1",
    });
    expect(line?.duration_ms).toBeGreaterThan(0);
    expect(Date.parse(String(line?.time))).not.toBeNaN();
  });

  it("counts a REST answer's body bytes once over HTTP/2 too, a small one and one streamed in pieces", async () => {
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    try {
      for (const [id, path] of [
        ["h2-small", "/api/v3/masterchainInfo"],
        ["h2-page", "/api/v3/traces?limit=20"],
      ]) {
        const stream = session.request({ ":path": path, "x-request-id": id, "accept-encoding": "identity" });
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        await new Promise((resolve, reject) => stream.on("end", resolve).on("error", reject));
        const body = Buffer.concat(chunks);
        expect(body.byteLength, path).toBeGreaterThan(100);
        const line = await accessLineOf(id);
        // Node's HTTP/2 response ends by writing its last chunk through write(): counted at both, it came out double.
        expect(line, path).toMatchObject({ door: "rest", status: 200, bytes: body.byteLength });
      }
    } finally {
      session.close();
    }
  });

  it("writes one line per Connect, gRPC and gRPC-web call, with its code and the id in the response metadata", async () => {
    for (const protocol of rpcProtocols) {
      const id = `rpc-${protocol}`;
      let echoed: string | null = null;
      await server.client(protocol).getMasterchainInfo({}, { headers: { "x-request-id": id }, onHeader: (headers) => (echoed = headers.get("x-request-id")) });
      expect(echoed, protocol).toBe(id);
      const line = await accessLineOf(id);
      expect(line, protocol).toMatchObject({ door: rpcDoors[protocol], operation: "GetMasterchainInfo", method: "POST", status: 200, code: "OK" });
      expect(line?.bytes, protocol).toBeGreaterThan(0);
    }
  });

  it("writes one line per WebSocket session, when it ends, without its subscription", async () => {
    const address = "0:64BBFE7CD6D7EB61728F1F09824DC7DAAB95C3110A260908F0B482C223DA132C";
    const opened = performance.now();
    const client = await openWs(server.baseUrl, { headers: { "x-request-id": "ws-1" }, query: "?token=not-logged" });
    expect(client.headers["x-request-id"]).toBe("ws-1");
    const received: Record<string, unknown>[] = [];
    client.send({ operation: "subscribe", id: "s", types: ["transactions"], addresses: [address], include_address_book: true });
    received.push(await client.next());
    client.send({ operation: "ping", id: "p" });
    received.push(await client.next());
    expect(received).toEqual([
      { id: "s", status: "subscribed" },
      { id: "p", status: "pong" },
    ]);
    // Nothing while the session lasts: its line is written once, at its end.
    expect(await linesOf("ws-1", false)).toEqual([]);
    client.close();
    await client.closed;
    const lasted = performance.now() - opened;
    const line = await accessLineOf("ws-1");
    expect(line).toMatchObject({
      door: "rest",
      operation: "StreamTraces",
      method: "GET",
      path: "/api/streaming/v2/ws",
      status: 101,
      bytes: received.reduce((sum, message) => sum + Buffer.byteLength(JSON.stringify(message)), 0),
      client: "127.0.0.1",
    });
    expect(line).not.toHaveProperty("code");
    expect(line?.duration_ms).toBeGreaterThanOrEqual(200);
    expect(line?.duration_ms).toBeLessThanOrEqual(lasted);
    const text = JSON.stringify(line);
    for (const secret of [address, "transactions", "not-logged", "subscribe"]) expect(text).not.toContain(secret);
  });

  it("writes a line for a WebSocket handshake it refuses, with the status the client got, and counts every handshake", async () => {
    const requestsOf = async (code: string) =>
      (await scrapeMetrics(server.baseUrl)).samples("tonquery_requests_total", { door: "rest", operation: "StreamTraces", code }).reduce((sum, s) => sum + Number(s.value), 0);
    const [sessionsBefore, refusedBefore] = [await requestsOf("101"), await requestsOf("400")];
    // A version of the protocol the server does not speak: ws answers 400 on the socket itself.
    const url = new URL(server.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          "GET /api/streaming/v2/ws HTTP/1.1\r\nHost: tonquery\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\nx-request-id: ws-refused\r\n\r\n",
        );
      });
      let text = "";
      socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(await accessLineOf("ws-refused")).toMatchObject({ door: "rest", operation: "StreamTraces", path: "/api/streaming/v2/ws", status: 400 });
    // An upgrade to a path that has no WebSocket: the door's own 404.
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.end("GET /nowhere HTTP/1.1\r\nHost: tonquery\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nx-request-id: ws-nowhere\r\n\r\n");
      });
      socket.resume();
      socket.on("close", () => resolve());
      socket.on("error", reject);
    });
    expect(await accessLineOf("ws-nowhere")).toMatchObject({ door: "http", operation: "other", path: "/nowhere", status: 404 });
    // A session, counted when it ends, as REST StreamTraces with 101.
    const client = await openWs(server.baseUrl, { headers: { "x-request-id": "ws-counted" } });
    client.close();
    await client.closed;
    await accessLineOf("ws-counted");
    expect(await requestsOf("400")).toBe(refusedBefore + 1);
    expect(await requestsOf("101")).toBe(sessionsBefore + 1);
  });

  it("generates an id when the client sends none or one it cannot take", async () => {
    for (const sent of [undefined, "x".repeat(129), "has space", "caf\u00e9", ""]) {
      const response = await fetch(`${server.baseUrl}/healthz`, { headers: sent === undefined ? {} : { "x-request-id": sent } });
      const id = response.headers.get("x-request-id") ?? "";
      expect(id, String(sent)).toMatch(uuid);
      const [line] = await linesOf(id);
      expect(line).toMatchObject({ door: "http", operation: "other", path: "/healthz", status: 200 });
    }
    // The longest id taken as it is.
    const longest = "y".repeat(128);
    expect((await fetch(`${server.baseUrl}/healthz`, { headers: { "x-request-id": longest } })).headers.get("x-request-id")).toBe(longest);
  });

  it("puts the request's id on every error line of that request", async () => {
    // A bug, as the service sees it: a statement that fails for no reason of the client's or the database's health.
    await db.admin.begin("read write", (tx) => tx`alter table blocks rename to blocks_away`);
    try {
      const rest = await fetch(`${server.baseUrl}/api/v3/masterchainInfo`, { headers: { "x-request-id": "broken-rest" } });
      expect(rest.status).toBe(500);
      expect(await rest.json()).toEqual({ error: "internal error" });
      const restLines = await linesOf("broken-rest");
      expect(restLines.map((l) => [l.level, l.message])).toEqual([
        ["error", "request failed"],
        ["info", "request"],
      ]);
      expect(restLines[0]).toMatchObject({ where: "REST /api/v3/masterchainInfo", code: "Internal", error: { code: "42P01" } });
      expect(restLines[1]).toMatchObject({ status: 500 });

      await expect(server.client("grpc").getMasterchainInfo({}, { headers: { "x-request-id": "broken-grpc" } })).rejects.toMatchObject({ code: Code.Internal });
      const grpcLines = await linesOf("broken-grpc");
      expect(grpcLines.map((l) => [l.level, l.message])).toEqual([
        ["error", "request failed"],
        ["info", "request"],
      ]);
      expect(grpcLines[1]).toMatchObject({ door: "grpc", code: "INTERNAL" });

      // LOG_LEVEL=warn: the error line stays, the access line goes.
      setLogLevel("warn");
      expect((await fetch(`${server.baseUrl}/api/v3/masterchainInfo`, { headers: { "x-request-id": "broken-quiet" } })).status).toBe(500);
      expect((await linesOf("broken-quiet", false)).map((l) => l.message)).toEqual(["request failed"]);
    } finally {
      await db.admin.begin("read write", (tx) => tx`alter table blocks_away rename to blocks`);
    }
    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);
  });
});

describe("ACCESS_LOG=false", () => {
  let quiet: TestServer;
  beforeAll(async () => {
    quiet = await startTestServer(db.url, { ACCESS_LOG: "false" });
  });
  afterAll(async () => {
    await quiet?.close();
  });

  it("writes no access line, and the id is still returned", async () => {
    const response = await fetch(`${quiet.baseUrl}/api/v3/masterchainInfo`, { headers: { "x-request-id": "not-logged" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-request-id")).toBe("not-logged");
    expect(await linesOf("not-logged", false)).toEqual([]);
  });
});

describe("a log line", () => {
  it("describes errors wherever they are among its fields, and writes other values as JSON does", async () => {
    const failure = new Error("statement failed", { cause: Object.assign(new Error("connection reset"), { code: "ECONNRESET" }) });
    log.error("top", { error: failure, n: 1 });
    log.warn("nested", { member: { url: "postgres://db", errors: [failure] } });
    log.warn("plain", { text: 'quote " and \\ backslash', list: [1, "two", null], nested: { ok: true } });
    await new Promise((resolve) => setImmediate(resolve));
    const described = { name: "Error", message: "statement failed", cause: { name: "Error", message: "connection reset", code: "ECONNRESET" } };
    expect(lines.find((l) => l.message === "top")).toMatchObject({ level: "error", error: described, n: 1 });
    expect(lines.find((l) => l.message === "nested")).toMatchObject({ member: { url: "postgres://db", errors: [described] } });
    expect(lines.find((l) => l.message === "plain")).toMatchObject({ text: 'quote " and \\ backslash', list: [1, "two", null], nested: { ok: true } });
  });
});
