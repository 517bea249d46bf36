import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { createHash } from "node:crypto";
import http2 from "node:http2";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRecorder } from "../bench/capture.ts";
import { Explainer, type StatementPlans } from "../bench/explain.ts";
import { GetTracesRequestSchema, GetTracesResponseSchema, SortOrder, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { getTraces } from "../src/handlers/traces.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { connectGet, envelope, rawCall, rawHttp, rawProtocols } from "./support/raw-rpc.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

// Input the service must answer as bad input (422 / INVALID_ARGUMENT), never as its own failure (500 / INTERNAL),
// whatever door it comes through, and requests whose cost must stay that of what they ask for.

const hashOf = (seed: string) => createHash("sha256").update(seed).digest();
const b64 = (seed: string) => hashOf(seed).toString("base64");
const b64url = (seed: string) => hashOf(seed).toString("base64url");
const hex = (seed: string) => hashOf(seed).toString("hex");
const decodeError = (what: string) => `failed to decode: schema: error converting value for ${what}`;

let db: TestDatabase;
let server: TestServer;

const early = b64("trace early");
const late = b64("trace late");

beforeAll(async () => {
  db = await createTestDatabase();
  // Two traces without transactions: enough for a page to be read and its actions to be looked up.
  await db.admin`insert into traces (trace_id, start_lt, end_lt, start_utime, end_utime, state, nodes_, edges_, pending_edges_)
    values (${early}, 100, 110, 1700000000, 1700000001, 'complete', 0, 0, 0),
           (${late}, 200, 210, 2000000000, 2000000001, 'complete', 0, 0, 0)`;
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

async function rpcFailure(call: Promise<unknown>): Promise<[Code, string] | "ok"> {
  try {
    await call;
    return "ok";
  } catch (err) {
    const error = ConnectError.from(err);
    return [error.code, error.rawMessage];
  }
}

describe("strings PostgreSQL cannot store never reach it", () => {
  const nul = decodeError('index 1 of "supported_action_types"');

  it("REST: a NUL byte in supported_action_types is a 422", async () => {
    expect(await server.rest("/api/v3/traces?include_actions=true&supported_action_types=v1&supported_action_types=jetton%00transfer")).toMatchObject({
      status: 422,
      body: { error: nul },
    });
  });

  it.each(rpcProtocols)("%s: a NUL byte in supported_action_types is INVALID_ARGUMENT", async (protocol) => {
    const client = server.client(protocol);
    expect(await rpcFailure(client.getTraces({ includeActions: true, supportedActionTypes: ["v1", "jetton\0transfer"] }))).toEqual([Code.InvalidArgument, nul]);
  });

  it("a lone surrogate (text with no UTF-8 form) does not get through either", async () => {
    // protobuf-es refuses it in JSON; binary cannot carry one; the handler would refuse it too (isStorableText).
    const answer = await rawCall(server.baseUrl, "connect", "GetTraces", '{"includeActions":true,"supportedActionTypes":["ton_\\ud800transfer"]}', {
      json: true,
    });
    expect([answer.status, answer.code]).toEqual([400, Code.InvalidArgument]);
  });

  it("a valid page with actions still answers", async () => {
    const { status, body } = await server.rest("/api/v3/traces?include_actions=true&supported_action_types=jettons");
    expect(status).toBe(200);
    expect((body as { traces: unknown[] }).traces).toHaveLength(2);
  });
});

describe("unix times beyond int4", () => {
  const ids = (body: unknown) => (body as { traces: { trace_id: string }[] }).traces.map((t) => t.trace_id);

  it.each([
    ["start_utime=3000000000", []],
    ["start_utime=2147483648", []],
    ["end_utime=4294967295", [late, early]],
    ["end_utime=2147483648", [late, early]],
    ["start_utime=1800000000&end_utime=4294967295", [late]],
    ["start_utime=4294967295&end_utime=4294967295", []],
  ])("REST ?%s", async (query, expected) => {
    const { status, body } = await server.rest(`/api/v3/traces?${query}`);
    expect(status).toBe(200);
    expect(ids(body)).toEqual(expected);
  });

  it.each(rpcProtocols)("over %s", async (protocol) => {
    const client = server.client(protocol);
    expect((await client.getTraces({ startUtime: 3_000_000_000 })).traces).toEqual([]);
    expect((await client.getTraces({ endUtime: 4_294_967_295 })).traces.map((t) => t.traceId)).toEqual([late, early]);
  });
});

describe("names that are properties of every JavaScript object are not values", () => {
  it.each(["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"])("direction=%s is a 422", async (name) => {
    expect(await server.rest(`/api/v3/adjacentTransactions?hash=${hex("tx")}&direction=${name}`)).toMatchObject({
      status: 422,
      body: { error: `wrong value for direction parameter: "${name}"; use in, out or both` },
    });
  });

  it("the documented directions still pass validation", async () => {
    for (const direction of ["in", "out", "both", ""]) {
      expect(await server.rest(`/api/v3/adjacentTransactions?hash=${hex("tx")}&direction=${direction}`)).toMatchObject({ status: 404 });
    }
  });

  it("an action type named like one is a literal type, not a shortcut", async () => {
    const { status } = await server.rest("/api/v3/traces?include_actions=true&supported_action_types=constructor&supported_action_types=__proto__");
    expect(status).toBe(200);
  });
});

describe("a request connect-node cannot read is INVALID_ARGUMENT", () => {
  // Field 2 (trace_id) announces 5 bytes and has 1.
  const truncated = new Uint8Array([0x12, 0x05, 0x41]);
  // Field 2 (trace_id, a string) holding bytes that are not UTF-8.
  const notUtf8 = new Uint8Array([0x12, 0x02, 0xc3, 0x28]);

  it.each(rawProtocols)("%s: unparsable protobuf", async (protocol) => {
    for (const body of [truncated, notUtf8]) {
      const answer = await rawCall(server.baseUrl, protocol, "GetTraces", body);
      expect([answer.code, answer.message]).toEqual([Code.InvalidArgument, expect.stringMatching(/^malformed request: parse binary: /)]);
      if (protocol === "connect") expect(answer.status).toBe(400);
    }
  });

  it.each(rawProtocols)("%s: malformed JSON", async (protocol) => {
    for (const body of ["{bad", '{"limit": "many"}', "[]"]) {
      const answer = await rawCall(server.baseUrl, protocol, "GetTraces", body, { json: true });
      expect(answer.code).toBe(Code.InvalidArgument);
      if (protocol === "connect") expect(answer.status).toBe(400);
    }
  });

  it.each(["grpc", "grpc-web"] as const)("%s: an envelope flagged compressed without a compression, a broken gzip body", async (protocol) => {
    const flagged = await rawCall(server.baseUrl, protocol, "GetTraces", envelope(new Uint8Array(), 1), { enveloped: true });
    expect([flagged.code, flagged.message]).toEqual([Code.InvalidArgument, expect.stringMatching(/^malformed request: /)]);
    const gzipHead = new Uint8Array([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3]);
    const broken = await rawCall(server.baseUrl, protocol, "GetTraces", envelope(gzipHead, 1), { enveloped: true, headers: { "grpc-encoding": "gzip" } });
    expect(broken.code).toBe(Code.InvalidArgument);
  });

  // Both answer a unary call without connect's streaming pipeline (patches/@connectrpc+connect+*.patch), which still
  // reads their streams: the same envelopes read the same way, the same failures.
  describe.each(["grpc", "grpc-web"] as const)("%s: a unary call's envelopes", (protocol) => {
    const message = toBinary(GetTracesRequestSchema, create(GetTracesRequestSchema, { traceId: [late] }));
    const call = (body: Uint8Array, headers: Record<string, string> = {}) => rawCall(server.baseUrl, protocol, "GetTraces", body, { enveloped: true, headers });

    it.each([
      ["no envelope", Buffer.alloc(0), Code.Unimplemented, "protocol error: missing input message for unary method"],
      ["two envelopes", Buffer.concat([envelope(message), envelope(message)]), Code.Unimplemented, "protocol error: received extra input message for unary method"],
      ["a cut envelope", envelope(message).subarray(0, 4), Code.InvalidArgument, "protocol error: incomplete envelope"],
      ["a byte after the envelope", Buffer.concat([envelope(message), Buffer.from([0])]), Code.InvalidArgument, "protocol error: incomplete envelope"],
    ])("%s: refused, with its reason", async (_what, body, code, reason) => {
      expect(await call(body)).toMatchObject({ status: 200, code, message: reason });
    });

    it("an envelope flagged as trailers: left out by gRPC-web, parsed as the message by gRPC", async () => {
      const trailers = envelope(Buffer.from("grpc-status: 0\r\n"), 0x80);
      const after = await call(Buffer.concat([envelope(message), trailers]));
      const alone = await call(trailers);
      if (protocol === "grpc-web") {
        expect([after.code, alone.code, alone.message]).toEqual([0, Code.Unimplemented, "protocol error: missing input message for unary method"]);
      } else {
        expect([after.code, alone.code]).toEqual([Code.InvalidArgument, Code.InvalidArgument]);
        expect(alone.message).toMatch(/^malformed request: parse binary: /);
      }
    });

    it("the header's errors come first: an unknown compression, a malformed timeout", async () => {
      expect(await call(envelope(message), { "grpc-encoding": "zstd" })).toMatchObject({ code: Code.Unimplemented, message: expect.stringMatching(/^unknown compression "zstd"/) });
      expect(await call(Buffer.alloc(0), { "grpc-timeout": "5x" })).toMatchObject({ code: Code.InvalidArgument, message: "protocol error: invalid grpc timeout value: 5x" });
    });

    it("a compressed request is read and answered", async () => {
      const answer = await call(envelope(gzipSync(message), 1), { "grpc-encoding": "gzip", "grpc-accept-encoding": "gzip" });
      expect(answer.code).toBe(0);
      // An answer under connect's 1 KiB threshold is sent uncompressed.
      const [flags, length] = [answer.body[0], answer.body.readUInt32BE(1)];
      const bytes = answer.body.subarray(5, 5 + length);
      const traces = fromBinary(GetTracesResponseSchema, flags === 1 ? gunzipSync(bytes) : bytes).traces;
      expect(traces.map((trace) => trace.traceId)).toEqual([late]);
    });
  });

  it("connect: a truncated gzip body", async () => {
    const answer = await rawCall(server.baseUrl, "connect", "GetTraces", new Uint8Array([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3]), {
      json: true,
      headers: { "content-encoding": "gzip" },
    });
    expect([answer.status, answer.code]).toEqual([400, Code.InvalidArgument]);
  });

  it("connect GET: invalid base64, unparsable protobuf, malformed JSON", async () => {
    for (const query of [
      "encoding=proto&base64=1&message=!!!!&connect=v1",
      `encoding=proto&base64=1&message=${Buffer.from(truncated).toString("base64url")}&connect=v1`,
      `encoding=json&message=${encodeURIComponent("{bad")}&connect=v1`,
    ]) {
      const answer = await connectGet(server.baseUrl, "GetTraces", query);
      expect([answer.status, answer.code], query).toEqual([400, Code.InvalidArgument]);
    }
  });

  it("connect GET: a valid message is still served", async () => {
    const message = Buffer.from(toBinary(GetTracesRequestSchema, create(GetTracesRequestSchema, { limit: 1 }))).toString("base64url");
    expect((await connectGet(server.baseUrl, "GetTraces", `encoding=proto&base64=1&message=${message}&connect=v1`)).status).toBe(200);
  });
});

describe("a request that makes no URL is answered, and the server lives on", () => {
  it.each([
    ["a Host that is no host name", "POST /tonquery.v1.TonQueryService/GetMasterchainInfo HTTP/1.1\r\nHost: a b\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"],
    ["HTTP/1.0 without a Host", "POST /tonquery.v1.TonQueryService/GetMasterchainInfo HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"],
    ["an absolute target whose host does not parse", "GET http://[x/api/v3/masterchainInfo HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n"],
  ])("%s", async (_what, request) => {
    expect(await rawHttp(server.baseUrl, request)).toMatch(/^HTTP\/1\.[01] 400 /);
    expect((await server.rest("/api/v3/traces?limit=1")).status).toBe(200);
  });
});

describe("methods the service does not serve are refused, never hung up on", () => {
  it.each([
    ["CONNECT to another host", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"],
    ["CONNECT to the service itself", "CONNECT 127.0.0.1:8080 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"],
    ["TRACE", "TRACE / HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n"],
    ["PUT on a path that does not exist", "PUT /nothing/here HTTP/1.1\r\nHost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"],
  ])("HTTP/1.1 %s: 405, naming the methods served", async (_what, request) => {
    const answer = await rawHttp(server.baseUrl, request);
    expect(answer).toMatch(/^HTTP\/1\.1 405 /);
    expect(answer).toMatch(/\r\nallow: GET, HEAD, POST, OPTIONS\r\n/i);
    expect((await server.rest("/api/v3/traces?limit=1")).status).toBe(200);
  });

  it("HTTP/1.1: a method HTTP does not know is a 400", async () => {
    expect(await rawHttp(server.baseUrl, "BREW /api/v3/masterchainInfo HTTP/1.1\r\nHost: x\r\n\r\n")).toMatch(/^HTTP\/1\.1 400 /);
  });

  it("HTTP/2 CONNECT: 405", async () => {
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    try {
      const stream = session.request({ ":method": "CONNECT", ":authority": "example.com:443" });
      stream.on("error", () => {});
      const status = await new Promise<number>((resolve) => stream.on("response", (headers) => resolve(Number(headers[":status"]))));
      expect(status).toBe(405);
    } finally {
      session.destroy();
    }
  });
});

describe("/healthz", () => {
  it.each(["PUT", "DELETE", "POST", "PATCH"])("refuses %s with 405", async (method) => {
    const response = await fetch(`${server.baseUrl}/healthz`, { method });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
    expect(await response.json()).toEqual({ error: `method ${method} not allowed: use GET` });
  });

  it("answers GET and HEAD", async () => {
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.baseUrl}/healthz`, { method: "HEAD" })).status).toBe(200);
  });
});

describe("list parameters: repeats removed, then bounded by MAX_LIST_VALUES", () => {
  const distinct = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

  it.each(["trace_id", "tx_hash", "msg_hash"])("REST %s: 257 distinct hashes are a 422, 300 forms of one hash are not", async (name) => {
    const many = distinct(257, name).map(b64url);
    expect(await server.rest(`/api/v3/traces?${name}=${many.join(",")}`)).toMatchObject({
      status: 422,
      body: { error: `too many values in ${name}: 257 > 256` },
    });
    expect(await server.rest(`/api/v3/traces?${many.map((h) => `${name}=${h}`).join("&")}`)).toMatchObject({
      status: 422,
      body: { error: `too many values in ${name}: 257 > 256` },
    });
    // 300 values, one hash in five forms (kept short enough for the request line's 16 KB).
    const forms = [hex("one"), `0x${hex("one")}`, hex("one").toUpperCase(), encodeURIComponent(b64("one"))];
    const repeated = [...forms.map((form) => `${name}=${form}`), `${name}=${Array.from({ length: 296 }, () => b64url("one")).join(",")}`].join("&");
    expect((await server.rest(`/api/v3/traces?${repeated}`)).status).toBe(200);
    expect((await server.rest(`/api/v3/traces?${distinct(256, name).map((s) => `${name}=${b64url(s)}`).join("&")}`)).status).toBe(200);
  });

  it("REST supported_action_types", async () => {
    const many = distinct(257, "type_").map((t) => `supported_action_types=${t}`);
    expect(await server.rest(`/api/v3/traces?include_actions=true&${many.join("&")}`)).toMatchObject({
      status: 422,
      body: { error: "too many values in supported_action_types: 257 > 256" },
    });
    const repeated = Array.from({ length: 300 }, () => "supported_action_types=v1").join("&");
    expect((await server.rest(`/api/v3/traces?include_actions=true&${repeated}`)).status).toBe(200);
  });

  it.each(rpcProtocols)("over %s", async (protocol) => {
    const client = server.client(protocol);
    const many = distinct(257, "x").map(b64);
    expect(await rpcFailure(client.getTraces({ traceId: many }))).toEqual([Code.InvalidArgument, "too many values in trace_id: 257 > 256"]);
    expect(await rpcFailure(client.getTraces({ txHash: many }))).toEqual([Code.InvalidArgument, "too many values in tx_hash: 257 > 256"]);
    expect(await rpcFailure(client.getTraces({ msgHash: many }))).toEqual([Code.InvalidArgument, "too many values in msg_hash: 257 > 256"]);
    expect(await rpcFailure(client.getTraces({ supportedActionTypes: distinct(257, "t") }))).toEqual([
      Code.InvalidArgument,
      "too many values in supported_action_types: 257 > 256",
    ]);
    const sameHash = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? hex("one") : b64("one")));
    expect(await rpcFailure(client.getTraces({ txHash: sameHash }))).toBe("ok");
  });

  it("the bound is the setting's", async () => {
    const small = await startTestServer(db.url, { MAX_LIST_VALUES: "2" });
    try {
      expect(await small.rest(`/api/v3/traces?tx_hash=${hex("a")}&tx_hash=${hex("b")}&tx_hash=${hex("a")}`)).toMatchObject({ status: 200 });
      expect(await small.rest(`/api/v3/traces?tx_hash=${hex("a")}&tx_hash=${hex("b")}&tx_hash=${hex("c")}`)).toMatchObject({
        status: 422,
        body: { error: "too many values in tx_hash: 3 > 2" },
      });
    } finally {
      await small.close();
    }
  });
});

// PGlite runs one session for all connections: the lock these tests hold stalls every connection there, the
// database's availability probe included, which then rightly reports the database unavailable.
describe.runIf(process.env.TEST_DATABASE !== "pglite")("client deadlines", () => {
  // Requests wait on a lock the test holds on `blocks`, so each one ends at its deadline: the client's, cut to the
  // server's REQUEST_TIMEOUT_MS (1500 ms here), well before the statement timeout (3 s).
  let slow: TestServer;
  let release: (() => void) | undefined;
  let locked: Promise<unknown> | undefined;

  beforeAll(async () => {
    slow = await startTestServer(db.url, { REQUEST_TIMEOUT_MS: "1500" });
  });
  afterAll(async () => {
    release?.();
    await locked;
    await slow?.close();
  });

  async function lockBlocks(): Promise<void> {
    let held!: () => void;
    const acquired = new Promise<void>((resolve) => (held = resolve));
    locked = db.admin.begin(async (tx) => {
      await tx`lock table blocks in access exclusive mode`;
      held();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await acquired;
  }
  function unlock() {
    release?.();
    release = undefined;
    return locked;
  }

  async function timed(protocol: (typeof rawProtocols)[number], headers: Record<string, string>) {
    const started = performance.now();
    const answer = await rawCall(slow.baseUrl, protocol, "GetMasterchainInfo", "{}", { json: true, headers });
    return { ...answer, ms: performance.now() - started };
  }

  // A clamped deadline ends at the server's 1500 ms: not at once (the timer overflow), not at the statement timeout.
  const cut = [1400, 2900] as const;
  const honoured = [200, 1200] as const;
  it.each([
    ["connect", { "connect-timeout-ms": "2147483648" }, cut],
    ["connect", { "connect-timeout-ms": "2147483647" }, cut],
    ["connect", { "connect-timeout-ms": "9999999999" }, cut],
    ["grpc", { "grpc-timeout": "597H" }, cut],
    ["grpc", { "grpc-timeout": "99999999H" }, cut],
    ["grpc", { "grpc-timeout": "2147483S" }, cut],
    ["grpc-web", { "grpc-timeout": "597H" }, cut],
    ["grpc-web", { "grpc-timeout": "99999999m" }, cut],
    ["connect", { "connect-timeout-ms": "250" }, honoured],
    ["grpc", { "grpc-timeout": "250m" }, honoured],
    ["grpc-web", { "grpc-timeout": "250000u" }, honoured],
  ] as const)("%s %j ends within %j ms", async (protocol, headers, [earliest, latest]) => {
    await lockBlocks();
    try {
      const answer = await timed(protocol, headers);
      expect(answer.code).toBe(Code.DeadlineExceeded);
      expect(answer.ms).toBeGreaterThan(earliest);
      expect(answer.ms).toBeLessThan(latest);
    } finally {
      await unlock();
    }
  });

  it.each([
    ["connect", { "connect-timeout-ms": "soon" }],
    ["connect", { "connect-timeout-ms": "-1" }],
    ["connect", { "connect-timeout-ms": "12345678901" }],
    ["grpc", { "grpc-timeout": "1000" }],
    ["grpc", { "grpc-timeout": "123456789S" }],
    ["grpc-web", { "grpc-timeout": "5x" }],
  ] as const)("%s %j is INVALID_ARGUMENT", async (protocol, headers) => {
    const answer = await timed(protocol, headers);
    expect(answer.code).toBe(Code.InvalidArgument);
  });
});

describe("a selection by hashes costs what its list costs", () => {
  // 20,000 traces, a transaction and a message each: enough for PostgreSQL to prefer walking the traces in page
  // order when it expects a list of hashes to match many of them (which it did, until the statement timeout on a
  // big index, for lists that matched nothing).
  const traces = 20_000;
  let big: TestDatabase;
  let recorder: ReturnType<typeof createRecorder>;
  let explainer: Explainer;
  const config = loadConfig({});
  const sha = (prefix: string) => `encode(sha256((${prefix} || i)::bytea), 'base64')`;

  beforeAll(async () => {
    big = await createTestDatabase();
    await big.admin.unsafe(`insert into traces (trace_id, start_lt, end_lt, start_utime, end_utime, state, nodes_, edges_, pending_edges_)
      select ${sha("'trace '")}, i * 10, i * 10 + 5, 1600000000 + (i * 7919) % ${traces}, 1600000000 + (i * 7919) % ${traces}, 'complete', 1, 0, 0
      from generate_series(1, ${traces}) i`);
    await big.admin.unsafe(`insert into transactions (account, hash, lt, now, trace_id)
      select '0:' || upper(encode(sha256(('account ' || i % 100)::bytea), 'hex')), ${sha("'tx '")}, i * 10, 1600000000 + i, ${sha("'trace '")}
      from generate_series(1, ${traces}) i`);
    await big.admin.unsafe(`insert into messages (tx_hash, tx_lt, msg_hash, direction, trace_id, msg_hash_norm)
      select ${sha("'tx '")}, i * 10, ${sha("'msg '")}, 'in', ${sha("'trace '")}, case when i % 3 = 0 then ${sha("'norm '")} end
      from generate_series(1, ${traces}) i`);
    await big.admin.unsafe("analyze");
    recorder = createRecorder(big.url, config);
    explainer = new Explainer(big.url);
  }, 120_000);
  afterAll(async () => {
    await recorder?.end();
    await explainer?.end();
    await big?.drop();
  });

  async function selection(request: MessageInitShape<typeof GetTracesRequestSchema>): Promise<{ ids: string[]; plans: StatementPlans }> {
    const context = createHandlerContext({
      service: TonQueryService,
      method: TonQueryService.method.getTraces,
      protocolName: "test",
      requestMethod: "POST",
      url: "/",
      timeoutMs: 10_000,
    });
    const { result, capture } = await recorder.record(() => getTraces({ db: recorder.db, config }, create(GetTracesRequestSchema, request), context));
    const statement = capture.statements[0];
    if (statement === undefined) throw new Error("no statement");
    return { ids: result.traces.map((t) => t.traceId), plans: await explainer.explain(statement) };
  }

  const trace = (i: number) => b64(`trace ${i}`);
  const none = Array.from({ length: 256 }, (_, i) => b64(`nothing ${i}`));
  const some = (prefix: string) => Array.from({ length: 256 }, (_, i) => b64(`${prefix}${(i * 37) % traces + 1}`));

  it.each([
    ["trace_id, no match", { traceId: none }],
    ["tx_hash, no match", { txHash: none }],
    ["msg_hash, no match", { msgHash: none }],
    ["trace_id", { traceId: some("trace ") }],
    ["tx_hash", { txHash: some("tx ") }],
    ["msg_hash", { msgHash: some("msg ") }],
    ["msg_hash (normalised)", { msgHash: some("norm ") }],
    ["tx_hash with a time window", { txHash: some("tx "), startUtime: 1600000000, endUtime: 1700000000 }],
    ["tx_hash with an lt window, ascending", { txHash: some("tx "), startLt: "0", endLt: "100000", sort: SortOrder.ASC }],
    ["tx_hash, deep offset", { txHash: some("tx "), offset: 200 }],
  ])("%s: traces only by primary key", async (_name, request) => {
    const { plans } = await selection({ limit: 3, ...request });
    expect(plans.error).toBeUndefined();
    const access = plans.access.filter((a) => a.startsWith("traces:"));
    expect(access).toEqual(["traces: Index Scan (traces_pkey)"]);
    // (At 20,000 rows PostgreSQL may read transactions or messages sequentially rather than probe them 256
    // times; at 100,000 it uses their hash indexes. Only the traces are the point here.)
    expect(plans.seqScans.filter((s) => s.relation === "traces")).toEqual([]);
  });

  it("is explained with the values the statement ran with: a char(44) hash is not cut to one character", async () => {
    const plans = await explainer.explain({ query: "select trace_id from traces where trace_id = $1", parameters: [trace(7)], prepared: true, after: [], rows: 1, capturedMs: 0 });
    expect(plans.error).toBeUndefined();
    expect(plans.steady?.nodes?.find((n) => n.relation === "traces")?.actualRows).toBe(1);
  });

  it("keeps toncenter's semantics: order, time order, paging, msg_hash_norm, duplicates", async () => {
    const ids = [3, 1, 2, 5, 4].map(trace);
    const byLtDesc = [5, 4, 3, 2, 1].map(trace);
    expect((await selection({ txHash: [1, 2, 3, 4, 5].map((i) => b64(`tx ${i}`)), limit: 10 })).ids).toEqual(byLtDesc);
    expect((await selection({ traceId: ids, limit: 2, offset: 1, sort: SortOrder.ASC })).ids).toEqual([2, 3].map(trace));
    // A message's hash and its normalised hash find its trace once.
    expect((await selection({ msgHash: [b64("msg 3"), b64("norm 3"), b64("norm 6")], limit: 10 })).ids).toEqual([6, 3].map(trace));
    // Time bounds order by end_utime, (i * 7919) % 20000 after 1600000000: trace 3 (3757), 4 (11676), 2 (15838).
    const timed = await selection({ traceId: [2, 3, 4].map(trace), startUtime: 1600000000, limit: 10, sort: SortOrder.ASC });
    expect(timed.ids).toEqual([3, 4, 2].map(trace));
    expect((await selection({ traceId: [2, 3, 4].map(trace), limit: 10, sort: SortOrder.ASC })).ids).toEqual([2, 3, 4].map(trace));
    const lt = await selection({ traceId: ids, startLt: "20", endLt: "40", limit: 10 });
    expect(lt.ids).toEqual([3, 2].map(trace));
  });

  it("the account selection keeps its own plan", async () => {
    const { plans } = await selection({ account: `0:${createHash("sha256").update("account 7").digest("hex").toUpperCase()}`, limit: 3 });
    expect(plans.error).toBeUndefined();
    expect(plans.seqScans.filter((s) => s.severity === "fail")).toEqual([]);
  });
});
