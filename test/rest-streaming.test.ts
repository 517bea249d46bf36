import http from "node:http";
import http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { chunksOf, chunkTransactions } from "../src/handlers/traces.ts";
import type { TraceRow } from "../src/db/traces.ts";
import { ResponseBody } from "../src/rest/body.ts";
import { createTestDatabase, type TestDatabase, testEngine } from "./support/database.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { decodedBody, rawRequest, rawRequestHttp2 } from "./support/raw-http.ts";
import { pauseStream, type PausedStream } from "./support/paused-stream.ts";
import { settled, until } from "./support/polling.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// REST answers over REST_HOLD_MAX_BYTES sent as they are written (src/rest/body.ts): chunked, at the client's pace,
// and cut short visibly when they fail after their head went out. The demo's page of every trace (1.8 MB, 35 traces)
// is over the default bound; TRACE_CHUNK_SIZE=2 reads it in 18 chunks, so that the reading's progress can be seen in
// the statements it runs (one `trace_transactions` per chunk). Every server here reads pages in the same chunks:
// the address book lists addresses in the order the chunks met them.

type Line = Record<string, unknown>;

let db: TestDatabase;
/** The default REST_HOLD_MAX_BYTES: the demo page is streamed once 1 MiB of it is made. */
let streaming: TestServer;
/** Streams past 64 KiB, within the page's first chunk: what the server reads while the client stops shows. */
let early: TestServer;
/** REST_HOLD_MAX_BYTES far above the page: the same page held, with its ETag, as every page was before. */
let holding: TestServer;
let lines: Line[] = [];
let stderr: MockInstance;

const page = "/api/v3/traces?limit=1000&include_actions=true";
/** The demo's 35 traces, 2 at a time (about 100 KB of JSON a chunk). */
const chunks = 18;
const earlyEnv = { TRACE_CHUNK_SIZE: "2", ACCESS_LOG: "true", REST_HOLD_MAX_BYTES: "65536" };
const engine = await testEngine();

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  [streaming, early, holding] = await Promise.all([
    startTestServer(db.url, { TRACE_CHUNK_SIZE: "2" }),
    startTestServer(db.url, earlyEnv),
    startTestServer(db.url, { TRACE_CHUNK_SIZE: "2", REST_HOLD_MAX_BYTES: "1000000000" }),
  ]);
  stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    for (const text of String(chunk).split("\n")) if (text.startsWith("{")) lines.push(JSON.parse(text) as Line);
    return true;
  });
});
afterAll(async () => {
  stderr?.mockRestore();
  await Promise.all([streaming?.close(), early?.close(), holding?.close()]);
  await db?.drop();
});

/** How many times `server` has run `statement` (trace_page: once per run of a page; trace_transactions: per chunk). */
async function statements(server: TestServer, statement: string): Promise<number> {
  return (await scrapeMetrics(server.baseUrl)).count("tonquery_db_statement_duration_seconds", { statement });
}

/** Chunks of pages read so far by `server`. */
const chunksRead = (server: TestServer) => statements(server, "trace_transactions");

/** What a request holds while it is served: admission slots and database connections. */
async function held(server: TestServer): Promise<{ slots: number; connections: number }> {
  const scrape = await scrapeMetrics(server.baseUrl);
  const sum = (name: string) => scrape.samples(name).reduce((total, sample) => total + Number(sample.value), 0);
  return { slots: sum("tonquery_admission_slots_in_use"), connections: sum("tonquery_db_connections_in_use") };
}

type Paused = PausedStream<Outcome>;

interface Outcome {
  body: Buffer;
  /** The stream ended normally (END_STREAM), rather than by a reset. */
  complete: boolean;
  rstCode: number;
}

/**
 * An HTTP/2 request that stops reading once `pauseAfter` bytes of its body have come: the client's flow-control
 * window (64 KB) then holds the server to what it has not read, as a slow client's would.
 */
function pausedRequest(server: TestServer, path: string, headers: Record<string, string> = {}, pauseAfter = 1): Promise<Paused> {
  const session = http2.connect(server.baseUrl);
  session.on("error", () => {});
  const stream = session.request({ ":path": path, ...headers });
  const chunks: Buffer[] = [];
  let complete = false;
  const outcome = new Promise<Outcome>((resolve) => {
    stream.on("end", () => (complete = true));
    stream.on("error", () => {});
    stream.on("close", () => {
      resolve({ body: Buffer.concat(chunks), complete, rstCode: stream.rstCode ?? 0 });
      session.close();
    });
  });
  return new Promise((resolve, reject) => {
    let responseHeaders: http2.IncomingHttpHeaders = {};
    stream.once("response", (h) => (responseHeaders = h));
    let received = 0;
    stream.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (received >= pauseAfter) return;
      received += chunk.length;
      if (received < pauseAfter) return;
      resolve(pauseStream(stream, responseHeaders, outcome));
    });
    stream.once("close", () => reject(new Error("the stream closed before its first bytes")));
  });
}

/** Headers that must be alike between a GET and a HEAD: all but the per-message ones (a HEAD has no body to chunk). */
function comparable(headers: http.IncomingHttpHeaders): http.IncomingHttpHeaders {
  const { date: _date, connection: _connection, "keep-alive": _keepAlive, "transfer-encoding": _te, "x-request-id": _id, ...rest } = headers;
  return rest;
}

function expectStreamedHead(headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders) {
  expect(headers["content-length"]).toBeUndefined();
  expect(headers.etag).toBeUndefined();
  expect(headers["cache-control"]).toBe("no-cache");
}

describe("an answer over REST_HOLD_MAX_BYTES", () => {
  it("is streamed chunked, without Content-Length or ETag, byte for byte the held answer, in every coding", async () => {
    const whole = await rawRequest(holding.baseUrl, page);
    expect(whole.headers.etag).toMatch(/^W\//);
    expect(Number(whole.headers["content-length"])).toBe(whole.body.length);
    expect(whole.body.length).toBeGreaterThan(streaming.config.restHoldMaxBytes);
    for (const coding of ["identity", "gzip", "br"]) {
      const streamed = await rawRequest(streaming.baseUrl, page, { "accept-encoding": coding });
      expect(streamed.status).toBe(200);
      expectStreamedHead(streamed.headers);
      expect(streamed.headers["transfer-encoding"], coding).toBe("chunked");
      expect(streamed.headers["content-encoding"]).toBe(coding === "identity" ? undefined : coding);
      expect(streamed.headers.vary).toBe("Accept-Encoding");
      expect(decodedBody(streamed).equals(whole.body), coding).toBe(true);
      const head = await rawRequest(streaming.baseUrl, page, { "accept-encoding": coding }, "HEAD");
      expect(head.body.length).toBe(0);
      expect(comparable(head.headers)).toEqual(comparable(streamed.headers));
    }
    for (const coding of ["identity", "br"]) {
      const small = await rawRequest(early.baseUrl, page, { "accept-encoding": coding });
      expectStreamedHead(small.headers);
      expect(decodedBody(small).equals(whole.body), coding).toBe(true);
    }
    const overHttp2 = await rawRequestHttp2(streaming.baseUrl, page, { "accept-encoding": "br" });
    expectStreamedHead(overHttp2.headers);
    expect(decodedBody(overHttp2).equals(whole.body)).toBe(true);
  });

  it("is read no faster than the client takes it: a client that stops reading stops the page's reading", async () => {
    const before = await chunksRead(early);
    // The client reads the first 300 KB (3 chunks), then stops.
    const paused = await pausedRequest(early, page, {}, 300_000);
    expectStreamedHead(paused.headers);
    // Stuck on the client: what it has read, what the connection holds (its window, the server's batch), the chunk
    // read ahead; not the page's eighteen.
    const whileStopped = (await settled(() => chunksRead(early))) - before;
    expect(whileStopped).toBeLessThanOrEqual(chunks / 2);
    expect((await held(early)).slots).toBeGreaterThan(0);

    const { body, complete } = await paused.resume();
    expect(complete).toBe(true);
    expect(body.equals((await rawRequest(holding.baseUrl, page)).body)).toBe(true);
    expect((await chunksRead(early)) - before).toBe(chunks);
  });

  it("frees its admission slots and connections when the client goes away in the middle, and reads no further", async () => {
    const before = await chunksRead(early);
    const paused = await pausedRequest(early, page);
    expectStreamedHead(paused.headers);
    const read = (await settled(() => chunksRead(early))) - before;
    const { complete } = await paused.cancel();
    expect(complete).toBe(false);
    expect(await until(() => held(early), { slots: 0, connections: 0 })).toEqual({ slots: 0, connections: 0 });
    expect((await settled(() => chunksRead(early))) - before).toBe(read);
    expect(read).toBeLessThan(chunks);
    expect((await rawRequest(early.baseUrl, "/api/v3/masterchainInfo")).status).toBe(200);
  });
});

describe("an answer that fails after its head went out", () => {
  /** The access line of request `id` once it is written (its response has closed), and its other lines. */
  async function requestLines(id: string): Promise<{ access: Line; others: Line[] }> {
    const deadline = Date.now() + 5000;
    const mine = () => lines.filter((l) => l.request_id === id);
    let access: Line | undefined;
    while ((access = mine().find((l) => l.message === "request")) === undefined && Date.now() < deadline) await sleep(10);
    expect(access).toBeDefined();
    return { access: access as Line, others: mine().filter((l) => l !== access) };
  }

  /** The response was cut short, counted and logged as a failure with `code` (a 5xx), and left nothing behind. */
  async function expectCutShort(server: TestServer, paused: Paused, outcome: Outcome, code: RegExp) {
    // Reset with INTERNAL_ERROR, not ended: what came is no answer, and does not parse as one.
    expect(outcome.complete).toBe(false);
    expect(outcome.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
    expect(outcome.body.length).toBeGreaterThan(0);
    expect(() => JSON.parse(outcome.body.toString("utf8"))).toThrow();
    // Counted and logged once as the failure it is, beside the 200 that went out.
    const { access, others } = await requestLines(paused.headers["x-request-id"] as string);
    expect(access).toMatchObject({ status: 200, completed: false });
    expect(access.code).toMatch(code);
    expect(others.map((l) => l.message)).toEqual(["streamed answer cut short"]);
    const scrape = await scrapeMetrics(server.baseUrl);
    expect(scrape.value("tonquery_requests_total", { door: "rest", operation: "GetTraces", code: access.code as string })).toBe(1);
    // Nothing left held, and the next requests are served.
    expect(await until(() => held(server), { slots: 0, connections: 0 })).toEqual({ slots: 0, connections: 0 });
    expect(await until(async () => (await rawRequest(server.baseUrl, page)).status, 200)).toBe(200);
  }

  it("is reset, counted as a 504 and logged once when its deadline passes while the client is slow", async () => {
    const server = await startTestServer(db.url, { ...earlyEnv, REQUEST_TIMEOUT_MS: "1500" });
    try {
      const paused = await pausedRequest(server, page);
      expectStreamedHead(paused.headers);
      await expectCutShort(server, paused, await paused.outcome, /^504$/);
    } finally {
      await server.close();
    }
  });

  it.runIf(engine === "postgresql")("is reset, never run again, when its snapshot's connection is lost", async () => {
    // One connection for prepared statements, the anchor's: every statement of the page queues on it, none runs
    // beside it (where importing the lost snapshot would fail as an internal error rather than as a lost snapshot).
    const server = await startTestServer(db.url, { ...earlyEnv, DB_POOL_SIZE: "2" });
    try {
      const paused = await pausedRequest(server, page);
      expectStreamedHead(paused.headers);
      await settled(() => chunksRead(server));
      // The request's snapshot lives on its anchor connection, idle in its transaction while the client does not
      // read: gone with it, the page cannot go on (its next statements fail as a lost snapshot). Before its head went
      // out, the request would run again from the start; now it must fail instead of sending a second page.
      const [{ terminated }] = await db.admin<{ terminated: number }[]>`
        select count(pg_terminate_backend(pid))::int as terminated from pg_stat_activity
        where datname = current_database() and state = 'idle in transaction' and application_name = 'tonquery'`;
      expect(terminated).toBe(1);
      const outcome = await paused.resume();
      expect(await statements(server, "trace_page")).toBe(1);
      await expectCutShort(server, paused, outcome, /^503$/);
    } finally {
      await server.close();
    }
  });
});

describe("ResponseBody over HTTP/1.1", () => {
  it("ends a streamed answer that fails without the terminating chunk: the client sees an aborted response", async () => {
    let body: ResponseBody | undefined;
    const server = http.createServer((_req, res) => {
      body = new ResponseBody(res, {
        compression: { enabled: false, minBytes: 0 },
        holdMaxBytes: 10,
        signal: new AbortController().signal,
        responseHeader: new Headers(),
        cacheControl: "no-cache",
      });
      body.begin();
      void body.write(Buffer.from('{"traces":['));
      void body.write(Buffer.from("1".repeat(100_000)));
      body.flush();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as { port: number };
      const result = await new Promise<{ headers: http.IncomingHttpHeaders; received: number; aborted: boolean }>((resolve) => {
        http.get({ host: "127.0.0.1", port, path: "/", agent: false }, (res) => {
          let received = 0;
          let aborted = false;
          res.on("data", (chunk: Buffer) => {
            received += chunk.length;
            if (received >= 100_011) body?.abort();
          });
          res.on("aborted", () => (aborted = true));
          res.on("error", () => {});
          res.on("close", () => resolve({ headers: res.headers, received, aborted }));
        });
      });
      expect(result.headers["transfer-encoding"]).toBe("chunked");
      expect(result.received).toBe(100_011);
      expect(result.aborted).toBe(true);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("a page's chunks", () => {
  it("hold at most TRACE_CHUNK_SIZE traces and, past their first trace, chunkTransactions transactions", () => {
    const sizes = [1, 2, 600, 300, 200, 5000, 1, 1, 999, 1, 0, 0, 0];
    const rows = sizes.map((nodes, i) => ({ trace_id: String(i), nodes_: String(nodes) }) as TraceRow);
    const chunks = chunksOf(rows, 3, (row) => Number(row.nodes_));
    expect(chunks.map((chunk) => chunk.map((row) => Number(row.nodes_)))).toEqual([[1, 2, 600], [300, 200], [5000], [1, 1], [999, 1, 0], [0, 0]]);
    expect(chunkTransactions).toBe(1000);
  });
});
