import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { rolldown } from "rolldown";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBinary, toBinary, create, type MessageInitShape } from "@bufbuild/protobuf";
import { GetAdjacentTransactionsRequestSchema, GetMasterchainInfoResponseSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import type { StreamTracesRequestSchema, StreamTracesResponse } from "../gen/tonquery/v1/stream_pb.ts";
import { createTestDatabase, type TestDatabase, testEngine } from "./support/database.ts";
import { type LiveAppender, startLiveAppender, testAccounts } from "./support/live-appender.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { rpcProtocols, type RpcProtocol, startTestServer, type TestServer } from "./support/server.ts";
import { blockOfId, openSse, openWs, sseEvents } from "./support/stream-clients.ts";

// Live streams (issue 24) against a live writer: every door (Connect, gRPC, gRPC-web, SSE, WebSocket) delivers the
// same blocks, in masterchain order, though the writer commits its batches out of order; a stream cut and resumed
// from its last position gets exactly what it missed; a stalled consumer is ended with its position and resumes
// losslessly; one reader serves every stream.
//
// The writer is test/support/live-appender.ts (see there); switching to issue 22's `--follow` writer is the one
// line that starts it.

const accounts = testAccounts(6);
/** The accounts the streams follow: a trace matches when one of its transactions is on one of them. */
const followed = [accounts[0] as string, accounts[3] as string];
const firstSeqno = 1000;
/** The writer's classifier never classifies this account's traces (they run between accounts 2 and 5 only). */
const neverClassified = accounts[2] as string;

// The writer holds several transactions open at once, which PGlite's one shared session cannot: these tests need the
// PostgreSQL server (always there in CI).
const pglite = (await testEngine()) === "pglite";
if (pglite) console.warn("skipping test/streams.test.ts: the live writer needs PostgreSQL (TEST_DATABASE=pglite or no server reachable)");

let db: TestDatabase;
let server: TestServer;
let writer: LiveAppender;

/** What the writer's blocks after `after` up to `upTo` hold for the followed accounts: seqno → trace ids. */
function expected(after: number, upTo: number, follow: readonly string[] = followed): [number, string[]][] {
  const out: [number, string[]][] = [];
  for (let seqno = after + 1; seqno <= upTo; seqno++) {
    if (writer.skipped.has(seqno)) continue;
    const block = writer.blocks.get(seqno);
    if (block === undefined) throw new Error(`block ${seqno} was not written`);
    const traces = block.traces.filter((t) => t.accounts.some((a) => follow.includes(a))).map((t) => t.traceId);
    if (traces.length > 0) out.push([seqno, traces.sort()]);
  }
  return out;
}

/** The first message of a stream on another server (or its refusal). */
async function readRpcFrom(other: TestServer, protocol: RpcProtocol): Promise<void> {
  const controller = new AbortController();
  for await (const message of other.client(protocol).streamTraces({ accounts: followed }, { signal: controller.signal })) {
    void message;
    break;
  }
  controller.abort();
}

/** /metrics of a server whose port is closed: read from its registry. */
async function scrapeMetricsOf(other: TestServer) {
  const { Scrape } = await import("./support/metrics.ts");
  return new Scrape(await other.telemetry.metrics.registry.metrics(), "");
}

/**
 * The same as expected(), read from the index instead of the writer's record: the oracle for a writer that keeps no
 * record of its blocks (issue 22's --follow writer reports only each batch's seqno).
 */
async function expectedFromIndex(after: number, upTo: number, follow: readonly string[] = followed): Promise<[number, string[]][]> {
  const rows = await db.admin<{ mc_seqno_end: number; traces: string[] }[]>`
    select T.mc_seqno_end, array_agg(T.trace_id::text order by T.trace_id) as traces
    from traces T
    where T.state = 'complete' and T.mc_seqno_end > ${after} and T.mc_seqno_end <= ${upTo}
      and exists (select 1 from transactions X where X.trace_id = T.trace_id and X.account = any(${follow as string[]}::text[]::tonaddr[]))
    group by T.mc_seqno_end order by T.mc_seqno_end`;
  return rows.map((row): [number, string[]] => [row.mc_seqno_end, [...row.traces].sort()]);
}

/** Reads an RPC stream until a message past `upTo`, or `count` messages; returns the block messages read. */
async function readRpc(
  protocol: RpcProtocol,
  request: { resumeAfter?: number; accounts?: string[] },
  until: (message: StreamTracesResponse) => boolean,
): Promise<[number, string[]][]> {
  const controller = new AbortController();
  const out: [number, string[]][] = [];
  try {
    for await (const message of server.client(protocol).streamTraces({ accounts: followed, includeTransactions: true, ...request }, { signal: controller.signal })) {
      if (!message.heartbeat) out.push([message.position, message.traces.map((t) => t.traceId).sort()]);
      if (until(message)) break;
    }
  } finally {
    controller.abort();
  }
  return out;
}

beforeAll(async () => {
  if (pglite) return;
  db = await createTestDatabase();
  // Bodies of 4 kB: a block's message is tens of kilobytes, so a client that stops reading fills HTTP/2's window soon.
  writer = startLiveAppender(db.url, { firstSeqno, accounts, inFlight: 3, intervalMs: 30, classifyDelayMs: 200, bodyBytes: 4000, neverClassified: [neverClassified] });
  // An index that already holds blocks when the service starts.
  await writer.append(2);
  server = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "50", STREAM_HEARTBEAT_MS: "1000", STREAM_ACTIONS_WAIT_MS: "1500", STREAM_RESUME_WINDOW_BLOCKS: "300",
    // The gap test leaves a permanent gap in this index too.
    STREAM_GAP_WAIT_MS: "1000",
  });
}, 60_000);

afterAll(async () => {
  await writer?.close();
  await server?.close();
  await db?.drop();
});

describe.skipIf(pglite)("StreamTraces and the REST streams against a live writer", () => {
  it("every door delivers the same blocks, in masterchain order, each once, though batches commit out of order", async () => {
    const from = firstSeqno - 1;
    writer.start();
    const target = writer.next + 12;
    try {
      const done = (seqno: number) => seqno >= target;
      const rpc = rpcProtocols.map((protocol) => readRpc(protocol, { resumeAfter: from }, (m) => done(m.position)));
      const sse = (async () => {
        const controller = new AbortController();
        const response = await openSse(server.baseUrl, { types: ["transactions"], addresses: followed }, { "last-event-id": String(from) }, controller.signal);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        const blocks = new Map<number, Set<string>>();
        const ids: string[] = [];
        let first = true;
        try {
          for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
            if (first) {
              expect(event).toMatchObject({ event: "connected", data: '{"status":"subscribed"}' });
              first = false;
              continue;
            }
            const id = event.id as string;
            ids.push(id);
            const seqno = blockOfId(id);
            if (event.event === "event") {
              const json = JSON.parse(event.data) as { type: string; finality: string; transactions: { trace_id: string; account: string }[] };
              expect(json.type).toBe("transactions");
              expect(json.finality).toBe("finalized");
              for (const tx of json.transactions) expect(followed).toContain(tx.account);
              const set = blocks.get(seqno) ?? new Set();
              for (const tx of json.transactions) set.add(tx.trace_id);
              blocks.set(seqno, set);
            }
            if (done(seqno)) break;
          }
        } finally {
          controller.abort();
        }
        return { blocks: [...blocks].map(([seqno, set]): [number, string[]] => [seqno, [...set].sort()]), ids };
      })();
      const ws = (async () => {
        const client = await openWs(server.baseUrl);
        client.send({ operation: "subscribe", id: "s1", types: ["transactions"], addresses: followed, last_event_id: String(from) });
        expect(await client.next()).toEqual({ id: "s1", status: "subscribed" });
        const blocks = new Map<number, Set<string>>();
        for (;;) {
          const message = (await client.next()) as { type: string; event_id: string; transactions?: { trace_id: string }[] };
          const seqno = blockOfId(message.event_id);
          if (message.type === "transactions") {
            const set = blocks.get(seqno) ?? new Set();
            for (const tx of message.transactions ?? []) set.add(tx.trace_id);
            blocks.set(seqno, set);
          }
          if (done(seqno)) break;
        }
        client.close();
        return [...blocks].map(([seqno, set]): [number, string[]] => [seqno, [...set].sort()]);
      })();
      const [connect, grpc, grpcWeb] = await Promise.all(rpc);
      const [sseResult, wsResult] = await Promise.all([sse, ws]);
      const upTo = Math.min(...[connect, grpc, grpcWeb, sseResult.blocks, wsResult].map((blocks) => (blocks[blocks.length - 1] as [number, string[]])[0]));
      const want = expected(from, upTo);
      expect(want.length).toBeGreaterThan(5);
      expect(await expectedFromIndex(from, upTo)).toEqual(want);
      // The writer did commit out of order within the blocks delivered: a block visible before the one below it.
      const committed = (seqno: number) => writer.blocks.get(seqno)?.committedAt ?? Number.NaN;
      const reordered = Array.from({ length: upTo - from - 1 }, (_, i) => from + 1 + i).filter((seqno) => committed(seqno + 1) < committed(seqno));
      expect(reordered.length).toBeGreaterThan(0);
      const cut = (blocks: [number, string[]][]) => blocks.filter(([seqno]) => seqno <= upTo);
      expect(cut(connect)).toEqual(want);
      expect(cut(grpc)).toEqual(want);
      expect(cut(grpcWeb)).toEqual(want);
      expect(cut(sseResult.blocks)).toEqual(want);
      expect(cut(wsResult)).toEqual(want);
      // SSE ids: strictly increasing, every block's last event "N", the others "N:k".
      const order = sseResult.ids.map((id) => id.split(":").map(Number) as [number, number?]);
      for (let i = 1; i < order.length; i++) {
        const [a, ak] = order[i - 1] as [number, number?];
        const [b, bk] = order[i] as [number, number?];
        expect(b > a || (b === a && ak !== undefined && (bk === undefined || bk > ak))).toBe(true);
      }
    } finally {
      await writer.stop();
    }
  });

  it("StreamTraces over gRPC, gRPC-web and Connect binary (written from the rows) sends the messages Connect JSON sends", async () => {
    await writer.append(2);
    const target = writer.next - 1;
    // connect-node's Connect transport speaks binary unless told otherwise (the suite's "connect" client does).
    const connect = (useBinaryFormat: boolean) => createClient(TonQueryService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat }));
    const clients = [connect(false), server.client("grpc"), server.client("grpc-web"), connect(true)];
    const read = async (client: (typeof clients)[number], request: MessageInitShape<typeof StreamTracesRequestSchema>) => {
      const controller = new AbortController();
      const blocks: StreamTracesResponse[] = [];
      try {
        for await (const message of client.streamTraces({ ...request, resumeAfter: firstSeqno - 1 }, { signal: controller.signal })) {
          if (!message.heartbeat) blocks.push(message);
          if (message.position >= target) break;
        }
      } finally {
        controller.abort();
      }
      return blocks;
    };
    const requests: MessageInitShape<typeof StreamTracesRequestSchema>[] = [
      { accounts: followed, includeTransactions: true, includeActions: true, includeAddressBook: true, includeMetadata: true },
      // Headers and actions only.
      { accounts: followed, includeActions: true },
    ];
    for (const request of requests) {
      const [json, ...binary] = await Promise.all(clients.map((client) => read(client, request)));
      expect(json?.length).toBeGreaterThan(3);
      expect(json?.some((message) => message.traces.some((trace) => trace.actions.length > 0))).toBe(true);
      if (request.includeTransactions) expect(json?.some((message) => message.traces.some((trace) => trace.transactions.some((tx) => tx.inMsg?.messageContent?.decoded !== undefined)))).toBe(true);
      for (const messages of binary) expect(messages).toEqual(json);
    }
  });

  it("a stream cut mid-way and resumed from its last position gets exactly the blocks it missed", async () => {
    const from = writer.next - 4;
    writer.start();
    try {
      // First half: until three blocks with traces have come.
      let count = 0;
      const first = await readRpc("connect", { resumeAfter: from }, (m) => !m.heartbeat && ++count >= 3);
      const last = (first[first.length - 1] as [number, string[]])[0];
      const target = writer.next + 6;
      const second = await readRpc("grpc", { resumeAfter: last }, (m) => m.position >= target);
      const upTo = (second[second.length - 1] as [number, string[]])[0];
      expect([...first, ...second]).toEqual(expected(from, upTo));
    } finally {
      await writer.stop();
    }
  });

  it("SSE resumes exactly after a Last-Event-ID in the middle of a block", async () => {
    const from = firstSeqno - 1;
    // Every account: blocks have several events, so an id "N:k" exists.
    const subscription = { types: ["transactions"], addresses: accounts };
    const read = async (headers: Record<string, string>, stopAfter: number) => {
      const controller = new AbortController();
      const response = await openSse(server.baseUrl, subscription, headers, controller.signal);
      const events: { id: string; data: string }[] = [];
      try {
        for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
          if (event.event !== "event") continue;
          events.push({ id: event.id as string, data: event.data });
          if (events.length >= stopAfter) break;
        }
      } finally {
        controller.abort();
      }
      return events;
    };
    const whole = await read({ "last-event-id": String(from) }, 12);
    const middle = whole.findIndex((event) => event.id.includes(":"));
    expect(middle).toBeGreaterThanOrEqual(0);
    const resumed = await read({ "last-event-id": (whole[middle] as { id: string }).id }, 12 - middle - 1);
    expect(resumed).toEqual(whole.slice(middle + 1));
  });
});

describe.skipIf(pglite)("a client that stops reading", () => {
  it("is ended with RESOURCE_EXHAUSTED and its position, and resumes from it without loss", async () => {
    // A second instance on the same index, with a buffer of two blocks; the stream follows every account, so every
    // block has a message of some size for it.
    const small = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "50", STREAM_HEARTBEAT_MS: "5000", STREAM_BUFFER_BLOCKS: "2" });
    const from = writer.next - 1;
    writer.start();
    try {
      const received: [number, string[]][] = [];
      const stream = small.client("grpc").streamTraces({ accounts, includeTransactions: true, resumeAfter: from })[Symbol.asyncIterator]();
      let ended: ConnectError | undefined;
      const take = async () => {
        const next = await stream.next();
        if (next.done) throw new Error("the stream ended without an error");
        if (!next.value.heartbeat) received.push([next.value.position, next.value.traces.map((t) => t.traceId).sort()]);
      };
      await take();
      await take();
      // The client reads nothing while the index moves on, until the server has ended the stream.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        if ((await scrapeMetrics(small.baseUrl)).value("tonquery_stream_slow_consumer_ends_total", { door: "rpc" }) > 0) break;
      }
      try {
        for (;;) await take();
      } catch (err) {
        ended = ConnectError.from(err);
      }
      expect(ended?.code).toBe(Code.ResourceExhausted);
      // The access log and the request metrics have the stream's own end, not the OK its response began with.
      let counted = 0;
      for (let tries = 0; tries < 50 && counted === 0; tries++) {
        counted = (await scrapeMetrics(small.baseUrl)).value("tonquery_requests_total", { door: "grpc", operation: "StreamTraces", code: "RESOURCE_EXHAUSTED" });
        if (counted === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(counted).toBe(1);
      const position = Number(ended?.metadata.get("tonquery-stream-position"));
      // Its position is the last block it received: everything up to it arrived, nothing after it.
      expect(position).toBe((received[received.length - 1] as [number, string[]])[0]);
      const target = writer.next + 3;
      const rest = await (async () => {
        const out: [number, string[]][] = [];
        const controller = new AbortController();
        for await (const message of small.client("connect").streamTraces({ accounts, includeTransactions: true, resumeAfter: position }, { signal: controller.signal })) {
          if (!message.heartbeat) out.push([message.position, message.traces.map((t) => t.traceId).sort()]);
          if (message.position >= target) break;
        }
        controller.abort();
        return out;
      })();
      const upTo = (rest[rest.length - 1] as [number, string[]])[0];
      expect([...received, ...rest]).toEqual(expected(from, upTo, accounts));
    } finally {
      await writer.stop();
      await small.close();
    }
  });
});

describe.skipIf(pglite)("a client that stops reading while its stream catches up", () => {
  it("is ended with RESOURCE_EXHAUSTED and its position once it has taken nothing for two heartbeat periods", async () => {
    const catching = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "50", STREAM_HEARTBEAT_MS: "300" });
    writer.start();
    try {
      // From the writer's first block: far behind the index, so the stream reads block after block at its pace.
      const from = firstSeqno - 1;
      const received: [number, string[]][] = [];
      const stream = catching.client("grpc").streamTraces({ accounts, includeTransactions: true, resumeAfter: from })[Symbol.asyncIterator]();
      const take = async () => {
        const next = await stream.next();
        if (next.done) throw new Error("the stream ended without an error");
        if (!next.value.heartbeat) received.push([next.value.position, next.value.traces.map((t) => t.traceId).sort()]);
      };
      await take();
      await take();
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        if ((await scrapeMetrics(catching.baseUrl)).value("tonquery_stream_slow_consumer_ends_total", { door: "rpc" }) > 0) break;
      }
      let ended: ConnectError | undefined;
      try {
        for (;;) await take();
      } catch (err) {
        ended = ConnectError.from(err);
      }
      expect(ended?.code).toBe(Code.ResourceExhausted);
      expect(ended?.rawMessage).toMatch(/stopped reading while the stream was catching up/);
      const position = Number(ended?.metadata.get("tonquery-stream-position"));
      expect(position).toBe((received[received.length - 1] as [number, string[]])[0]);
      expect(received).toEqual(expected(from, position, accounts));
    } finally {
      await writer.stop();
      await catching.close();
    }
  });
});

describe.skipIf(pglite)("what a stream carries", () => {
  it("actions only once the classifier has classified them, in toncenter's event shapes over SSE", async () => {
    const from = writer.next - 1;
    writer.start();
    try {
      const target = writer.next + 3;
      // RPC: every trace of the followed accounts comes with its classified action.
      const rpc: StreamTracesResponse[] = [];
      const controller = new AbortController();
      for await (const message of server
        .client("connect")
        .streamTraces({ accounts: followed, includeTransactions: true, includeActions: true, includeAddressBook: true, resumeAfter: from }, { signal: controller.signal })) {
        if (!message.heartbeat) rpc.push(message);
        if (message.position >= target) break;
      }
      controller.abort();
      expect(rpc.length).toBeGreaterThan(0);
      for (const message of rpc) {
        for (const trace of message.traces) {
          expect(trace.traceInfo?.classificationState).toBe("ok");
          expect(trace.actions.map((a) => a.type)).toEqual(["ton_transfer"]);
          expect(trace.transactions.length).toBe(2);
          for (const tx of trace.transactions) expect(message.addressBook[tx.account]).toBeDefined();
        }
      }
      // SSE: transactions, actions, trace and account_state_change events of one trace, as toncenter shapes them.
      const trace = (rpc[0] as StreamTracesResponse).traces[0];
      const norm = Buffer.from((writer.blocks.get((rpc[0] as StreamTracesResponse).position)?.traces.find((t) => t.traceId === trace?.traceId)?.externalHashNorm ?? ""), "base64").toString("hex");
      const sseController = new AbortController();
      const response = await openSse(
        server.baseUrl,
        { types: ["transactions", "actions", "trace", "account_state_change"], addresses: followed, trace_external_hash_norms: [norm], include_address_book: true },
        { "last-event-id": String((rpc[0] as StreamTracesResponse).position - 1) },
        sseController.signal,
      );
      const seen = new Map<string, Record<string, unknown>>();
      for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
        if (event.event !== "event") continue;
        const json = JSON.parse(event.data) as Record<string, unknown>;
        if (json.trace_external_hash_norm !== Buffer.from(norm, "hex").toString("base64") && json.type !== "account_state_change") continue;
        seen.set(json.type as string, json);
        if (seen.size === 4) break;
      }
      sseController.abort();
      expect(seen.get("transactions")).toMatchObject({ finality: "finalized", transactions: expect.any(Array), address_book: expect.any(Object) });
      expect(seen.get("actions")).toMatchObject({ finality: "finalized", actions: [expect.objectContaining({ type: "ton_transfer", details: expect.any(Object) })] });
      expect(seen.get("trace")).toMatchObject({ finality: "finalized", trace: { tx_hash: expect.any(String), children: expect.any(Array) }, transactions: expect.any(Object) });
      expect(seen.get("account_state_change")).toMatchObject({ finality: "finalized", account: expect.any(String), state: { balance: expect.any(String) } });
    } finally {
      await writer.stop();
    }
  });

  it("a trace the classifier never classifies is sent after STREAM_ACTIONS_WAIT_MS without actions, marked unclassified", async () => {
    const from = writer.next - 1;
    writer.start();
    try {
      const controller = new AbortController();
      let message: StreamTracesResponse | undefined;
      for await (const received of server
        .client("grpc")
        .streamTraces({ accounts: [neverClassified], includeTransactions: true, includeActions: true, resumeAfter: from }, { signal: controller.signal })) {
        if (received.heartbeat) continue;
        message = received;
        break;
      }
      controller.abort();
      expect(message?.traces.length).toBeGreaterThan(0);
      for (const trace of message?.traces ?? []) {
        expect(trace.traceInfo?.classificationState).toBe("unclassified");
        expect(trace.actions).toEqual([]);
        expect(trace.transactions.length).toBe(2);
      }
      expect((await scrapeMetrics(server.baseUrl)).value("tonquery_stream_actions_wait_expired_total")).toBeGreaterThan(0);
    } finally {
      await writer.stop();
    }
  });

  it("heartbeats carry the position while nothing matches (RPC message, SSE event with an id)", async () => {
    const quiet = testAccounts(1, -1);
    writer.start();
    try {
      const positions: number[] = [];
      const controller = new AbortController();
      for await (const message of server.client("grpc-web").streamTraces({ accounts: quiet }, { signal: controller.signal })) {
        expect(message.heartbeat).toBe(true);
        expect(message.traces).toEqual([]);
        positions.push(message.position);
        if (positions.length === 2) break;
      }
      controller.abort();
      expect(positions[1]).toBeGreaterThan(positions[0] as number);
      const sseController = new AbortController();
      const response = await openSse(server.baseUrl, { types: ["transactions"], addresses: quiet }, {}, sseController.signal);
      for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
        if (event.event === "connected") continue;
        expect(event.event).toBe("heartbeat");
        expect(JSON.parse(event.data)).toEqual({ type: "heartbeat", position: Number(event.id) });
        break;
      }
      sseController.abort();
    } finally {
      await writer.stop();
    }
  });
});

describe.skipIf(pglite)("refusals, as toncenter's clients expect them", () => {
  it("min_finality other than finalized is a 400 saying only committed data is served", async () => {
    const response = await openSse(server.baseUrl, { types: ["transactions"], addresses: followed, min_finality: "pending" });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string };
    expect(body.error).toMatch(/committed \(finalized\) blocks only/);
  });

  it("too many addresses is a 400 (SSE), INVALID_ARGUMENT (RPC)", async () => {
    const many = testAccounts(1001, -1);
    expect(server.config.streamMaxAddresses).toBe(1000);
    const response = await openSse(server.baseUrl, { types: ["transactions"], addresses: many });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toMatch(/too many addresses/);
    const error = await readRpc("connect", { accounts: many }, () => true).catch((err: unknown) => ConnectError.from(err));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
  });

  it("a position older than the resume window is refused with the oldest one accepted", async () => {
    const response = await openSse(server.baseUrl, { types: ["transactions"], addresses: followed }, { "last-event-id": "5" });
    expect(response.status).toBe(410);
    const body = (await response.json()) as { error: string; code: string; position: number };
    expect(body.code).toBe("OutOfRange");
    expect(body.error).toMatch(/older than the resume window/);
    const error = await readRpc("grpc", { resumeAfter: 5 }, () => true).catch((err: unknown) => ConnectError.from(err));
    expect((error as ConnectError).code).toBe(Code.OutOfRange);
    expect((error as ConnectError).metadata.get("tonquery-stream-position")).toBe(String(body.position));
  });

  it("a WebSocket answers ping, unsubscribe and unknown operations as toncenter's does", async () => {
    const client = await openWs(server.baseUrl);
    client.send({ operation: "ping", id: "p" });
    expect(await client.next()).toEqual({ id: "p", status: "pong" });
    client.send({ operation: "subscribe", id: "bad", types: ["transactions"], addresses: followed, min_finality: "confirmed" });
    expect(await client.next()).toMatchObject({ id: "bad", error: expect.stringMatching(/not served/) });
    client.send({ operation: "subscribe", id: "s", types: ["transactions"], addresses: followed });
    expect(await client.next()).toEqual({ id: "s", status: "subscribed" });
    client.send({ operation: "unsubscribe", id: "u" });
    expect(await client.next()).toEqual({ id: "u", status: "unsubscribed" });
    client.send({ operation: "nope", id: "n" });
    expect(await client.next()).toMatchObject({ id: "n", error: expect.stringMatching(/unknown operation/) });
    client.close();
  });
});

describe.skipIf(pglite)("limits, shutdown, gaps", () => {
  it("one stream more than STREAM_MAX_STREAMS is a 429 (SSE) and RESOURCE_EXHAUSTED (RPC); a stream that ends frees its place", async () => {
    const capped = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "50", STREAM_MAX_STREAMS: "1" });
    try {
      const controller = new AbortController();
      const first = capped.client("connect").streamTraces({ accounts: followed }, { signal: controller.signal })[Symbol.asyncIterator]();
      const pending = first.next();
      pending.catch(() => {});
      // Until the first stream is counted.
      while ((await scrapeMetrics(capped.baseUrl)).value("tonquery_streams_open", { door: "rpc" }) < 1) await new Promise((resolve) => setTimeout(resolve, 20));
      const refused = await openSse(capped.baseUrl, { types: ["transactions"], addresses: followed });
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: string }).error).toMatch(/too many streams/);
      const error = await readRpcFrom(capped, "grpc").catch((err: unknown) => ConnectError.from(err));
      expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
      controller.abort();
      while ((await scrapeMetrics(capped.baseUrl)).value("tonquery_streams_open", { door: "rpc" }) > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      const sseController = new AbortController();
      const admitted = await openSse(capped.baseUrl, { types: ["transactions"], addresses: followed }, {}, sseController.signal);
      expect(admitted.status).toBe(200);
      sseController.abort();
    } finally {
      await capped.close();
    }
  });

  it("shutdown ends every stream at once with UNAVAILABLE and its position; once no stream is open the index is polled no more", async () => {
    const stopping = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "50", SHUTDOWN_TIMEOUT_MS: "10000" });
    const from = writer.next - 1;
    await writer.append(1);
    const received: number[] = [];
    const reading = (async () => {
      try {
        for await (const message of stopping.client("grpc").streamTraces({ accounts: followed, resumeAfter: from })) {
          if (!message.heartbeat) received.push(message.position);
        }
        return undefined;
      } catch (err) {
        return ConnectError.from(err);
      }
    })();
    const sse = await openSse(stopping.baseUrl, { types: ["transactions"], addresses: followed }, { "last-event-id": String(from) });
    const sseEventsRead: { event: string; data: string }[] = [];
    const sseReading = (async () => {
      for await (const event of sseEvents(sse.body as ReadableStream<Uint8Array>)) sseEventsRead.push(event);
    })();
    const ws = await openWs(stopping.baseUrl);
    ws.send({ operation: "subscribe", id: "w", types: ["transactions"], addresses: followed, last_event_id: String(from) });
    expect(await ws.next()).toEqual({ id: "w", status: "subscribed" });
    while (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await stopping.server.close();
    // The WebSocket subscription's last message is its end, with its position; then the connection closes.
    let wsLast: Record<string, unknown> = {};
    for (;;) {
      const message = await ws.next().catch(() => undefined);
      if (message === undefined) break;
      wsLast = message;
      if ("error" in message) break;
    }
    expect(wsLast).toMatchObject({ id: "w", code: "Unavailable", position: expect.any(Number) });
    await ws.closed;
    const error = await reading;
    await sseReading;
    expect(error?.code).toBe(Code.Unavailable);
    // Its position: the last block received, or a later one that had nothing for it.
    const position = Number(error?.metadata.get("tonquery-stream-position"));
    const lastReceived = received[received.length - 1] as number;
    expect(position).toBeGreaterThanOrEqual(lastReceived);
    expect(expected(lastReceived, position)).toEqual([]);
    const last = sseEventsRead[sseEventsRead.length - 1];
    expect(last?.event).toBe("error");
    expect(JSON.parse(last?.data ?? "{}")).toMatchObject({ code: "Unavailable", position: expect.any(Number) });
    const polls = (await scrapeMetricsOf(stopping)).value("tonquery_stream_polls_total");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await scrapeMetricsOf(stopping)).value("tonquery_stream_polls_total")).toBe(polls);
    await stopping.db.end();
  });

  it("a masterchain seqno that never appears is waited for STREAM_GAP_WAIT_MS, then passed", async () => {
    const gapped = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "50", STREAM_GAP_WAIT_MS: "500", STREAM_HEARTBEAT_MS: "300" });
    try {
      const from = writer.next - 1;
      writer.skip(2);
      await writer.append(2);
      const target = writer.next - 1;
      const controller = new AbortController();
      const out: [number, string[]][] = [];
      for await (const message of gapped.client("connect").streamTraces({ accounts: followed, resumeAfter: from }, { signal: controller.signal })) {
        if (!message.heartbeat) out.push([message.position, message.traces.map((t) => t.traceId).sort()]);
        if (message.position >= target) break;
      }
      controller.abort();
      expect(out).toEqual(expected(from, target));
      expect((await scrapeMetrics(gapped.baseUrl)).value("tonquery_stream_gaps_skipped_total")).toBe(2);
    } finally {
      await gapped.close();
    }
  });
});

describe.skipIf(pglite)("one reader for every stream", () => {
  it("the statements per block do not grow with the number of streams", async () => {
    const statements = async () => {
      const metrics = await scrapeMetrics(server.baseUrl);
      const count = (name: string) => metrics.count("tonquery_db_statement_duration_seconds", { statement: name });
      return { blockTraces: count("stream_block_traces"), tracePage: count("trace_page") };
    };
    const run = async (streams: number) => {
      const controller = new AbortController();
      const start = writer.next - 1;
      const before = await statements();
      const readers = Array.from({ length: streams }, (_, i) =>
        (async () => {
          try {
            for await (const message of server
              .client(rpcProtocols[i % 3] as RpcProtocol)
              .streamTraces({ accounts: followed, includeTransactions: true, resumeAfter: start }, { signal: controller.signal })) {
              void message;
            }
          } catch {
            // aborted below
          }
        })(),
      );
      await writer.append(4);
      // Until the hub has handed out the last block written.
      const last = writer.next - 1;
      await readRpc("connect", { resumeAfter: last - 1 }, (m) => m.position >= last);
      controller.abort();
      await Promise.all(readers);
      const after = await statements();
      return { blocks: last - start, blockTraces: after.blockTraces - before.blockTraces, tracePage: after.tracePage - before.tracePage };
    };
    const one = await run(1);
    const many = await run(30);
    // Each block's traces are read once, and its trace rows once per read covering every stream: not per stream.
    expect(one.blockTraces).toBeLessThanOrEqual(one.blocks + 2);
    expect(many.blockTraces).toBeLessThanOrEqual(many.blocks + 2);
    expect(many.tracePage).toBeLessThanOrEqual(2 * many.blocks + 2);
  });
});

const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);

interface BrowserBlock {
  position: number;
  traces: string[];
}

describe.skipIf(pglite)("browser clients in headless Chromium", () => {
  it("EventSource, connect-web's gRPC-web and Google's grpc-web (text mode, unary and streaming) deliver the same blocks", async ({ skip }) => {
    if (!hasChromium && process.env.CI) throw new Error(`CI: no Chromium at ${chromiumPath}`);
    skip(!hasChromium, `no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);
    // The page's script: the clients as each library ships them, bundled for the browser.
    const bundle = await rolldown({ input: new URL("./browser/streams-entry.ts", import.meta.url).pathname, platform: "browser", logLevel: "silent" });
    const { output } = await bundle.generate({ format: "iife" });
    await bundle.close();
    const browser = await chromium.launch({ executablePath: chromiumPath });
    const from = writer.next - 1;
    writer.start();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      await page.goto(`${server.baseUrl}/livez`);
      await page.addScriptTag({ content: (output[0] as { code: string }).code });
      const target = writer.next + 6;
      const request = { accounts: followed, includeTransactions: true, resumeAfter: from };
      const query = `types=transactions&addresses=${followed.map(encodeURIComponent).join(",")}&last_event_id=${from}`;
      const result = await page.evaluate(
        async ({ baseUrl, request, query, target }) => {
          const t = (globalThis as unknown as { streamsTest: Record<string, (...args: unknown[]) => Promise<unknown>> }).streamsTest;
          const [sse, connectWeb, textStream, unary] = await Promise.all([
            t.eventSourceBlocks(baseUrl, query, target),
            t.connectWebBlocks(baseUrl, request, target),
            t.grpcWebTextStream(baseUrl, request, target),
            t.grpcWebTextUnary(baseUrl),
          ]);
          return { sse, connectWeb, textStream, unary };
        },
        { baseUrl: server.baseUrl, request, query, target },
      );
      expect(problems).toEqual([]);
      const sse = (result.sse as { blocks: BrowserBlock[] }).blocks.map((b): [number, string[]] => [b.position, b.traces]);
      const connectWeb = (result.connectWeb as BrowserBlock[]).map((b): [number, string[]] => [b.position, b.traces]);
      const text = (result.textStream as BrowserBlock[]).map((b): [number, string[]] => [b.position, b.traces]);
      const upTo = Math.min(...[sse, connectWeb, text].map((blocks) => (blocks[blocks.length - 1] as [number, string[]])[0]));
      const want = expected(from, upTo);
      expect(want.length).toBeGreaterThan(2);
      const cut = (blocks: [number, string[]][]) => blocks.filter(([seqno]) => seqno <= upTo);
      expect(cut(sse)).toEqual(want);
      expect(cut(connectWeb)).toEqual(want);
      expect(cut(text)).toEqual(want);
      const unary = result.unary as { first: number; last: number };
      expect(unary.first).toBe(firstSeqno);
      expect(unary.last).toBeGreaterThanOrEqual(from);
    } finally {
      await writer.stop();
      await browser.close();
    }
  });
});

/** A gRPC-web call in text mode as Google's client makes it: one base64 body; the answer's frames, decoded. */
async function grpcWebText(path: string, message: Uint8Array, body?: string) {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web-text", accept: "application/grpc-web-text", "x-grpc-web": "1" },
    body: body ?? frame.toString("base64"),
  });
  const text = await response.text();
  // Chunks are base64 each on its own, padded: decoded group by group, as the client does.
  const bytes = Buffer.concat((text.match(/[^=]+=*|=+/g) ?? []).map((part) => Buffer.from(part, "base64")));
  const frames: { trailer: boolean; data: Buffer }[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at + 1);
    frames.push({ trailer: (bytes[at] as number) >= 0x80, data: bytes.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  const trailer = frames.find((f) => f.trailer)?.data.toString() ?? "";
  return { status: response.status, contentType: response.headers.get("content-type"), frames, trailer };
}

describe.skipIf(pglite)("gRPC-web text mode at the RPC door", () => {
  it("answers a unary call in base64 frames, its status in the trailer frame", async () => {
    const answer = await grpcWebText("/tonquery.v1.TonQueryService/GetMasterchainInfo", new Uint8Array());
    expect(answer.status).toBe(200);
    expect(answer.contentType).toBe("application/grpc-web-text+proto");
    const data = answer.frames.find((f) => !f.trailer);
    expect(fromBinary(GetMasterchainInfoResponseSchema, data?.data ?? new Uint8Array()).first?.seqno).toBe(firstSeqno);
    expect(answer.trailer).toMatch(/grpc-status: ?0/);
  });

  it("sends an error as a trailer frame in base64 too, and a body that is not base64 is INVALID_ARGUMENT", async () => {
    const notFound = await grpcWebText(
      "/tonquery.v1.TonQueryService/GetAdjacentTransactions",
      toBinary(GetAdjacentTransactionsRequestSchema, create(GetAdjacentTransactionsRequestSchema, { hash: "00".repeat(32) })),
    );
    expect(notFound.contentType).toBe("application/grpc-web-text+proto");
    expect(notFound.trailer).toMatch(/grpc-status: ?5/);
    const garbled = await grpcWebText("/tonquery.v1.TonQueryService/GetMasterchainInfo", new Uint8Array(), "!!not base64!!");
    expect(garbled.trailer).toMatch(/grpc-status: ?3/);
  });
});
