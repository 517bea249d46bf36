import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetAdjacentTransactionsRequestSchema,
  GetBlockTransactionsExtRequestSchema,
  GetMasterchainInfoRequestSchema,
  GetTracesRequestSchema,
  type Direction,
  type SortOrder,
  TonQueryService,
} from "../gen/tonquery/v1/service_pb.ts";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { rawCall, rawProtocols } from "./support/raw-rpc.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// Random input at every door, on the demo dataset (real traces, transactions, blocks): whatever a client sends,
// the answer is a documented one — REST 200, 404 or 422 with a JSON body in the path's dialect, RPC success,
// NOT_FOUND or INVALID_ARGUMENT — never 5xx, INTERNAL or UNKNOWN. A fixed seed keeps runs repeatable; the
// counts keep the file within a few seconds (one server, one database).

const seed = 20261123;
let db: TestDatabase;
let server: TestServer;

/** Values the index holds, so that random requests also find things (and go through the presenters). */
const known = {
  traceIds: [] as string[],
  txHashes: [] as string[],
  msgHashes: [] as string[],
  accounts: [] as string[],
  blocks: [] as { workchain: number; shard: string; seqno: number; root_hash: string; file_hash: string }[],
  mcSeqnos: [] as number[],
};

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  known.traceIds = (await db.admin<{ v: string }[]>`select trace_id as v from traces`).map((r) => r.v);
  known.txHashes = (await db.admin<{ v: string }[]>`select hash as v from transactions`).map((r) => r.v);
  known.msgHashes = (await db.admin<{ v: string }[]>`select msg_hash as v from messages limit 200`).map((r) => r.v);
  known.accounts = (await db.admin<{ v: string }[]>`select distinct account as v from transactions`).map((r) => r.v);
  known.blocks = [...(await db.admin<(typeof known.blocks)[number][]>`select workchain, shard::text as shard, seqno, root_hash, file_hash from blocks`)];
  known.mcSeqnos = (await db.admin<{ v: number }[]>`select distinct mc_seqno_end as v from traces where mc_seqno_end is not null`).map((r) => r.v);
  server = await startTestServer(db.url);
}, 60_000);
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

// ---- values ----------------------------------------------------------------------------------------------

const hostile = [
  "",
  " ",
  "\0",
  "a\0b",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "-1",
  "-0",
  "0",
  "1",
  "1.5",
  "1e3",
  "0x10",
  " 7",
  "NaN",
  "Infinity",
  "2147483647",
  "2147483648",
  "4294967295",
  "4294967296",
  "9223372036854775807",
  "9223372036854775808",
  "-9223372036854775808",
  "-9223372036854775809",
  "18446744073709551615",
  "18446744073709551616",
  "9".repeat(400),
  "true",
  "asc",
  "in",
  "v1",
  "latest",
  "nft.v3",
  "%00",
  "\u{1F600}",
  "\uFFFD",
  "ü",
];

const bigIntText = fc.oneof(fc.bigInt(-(2n ** 70n), 2n ** 70n), fc.bigInt(-3n, 3n)).map(String);
/** One of the values the index holds (read once the dataset is loaded). */
const fromIndex = <T>(pool: () => readonly T[]) => fc.constant(null).chain(() => fc.constantFrom(...pool()));
/** A hash in one of the forms a client may use (a known one, in base64 or hex), or a near miss. */
const hashLike = (pool: () => string[]) =>
  fc.oneof(
    fromIndex(pool),
    fromIndex(pool).map((b64) => Buffer.from(b64, "base64").toString("hex")),
    fc.uint8Array({ minLength: 31, maxLength: 33 }).map((b) => Buffer.from(b).toString("base64url")),
    fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${Buffer.from(b).toString("hex")}`),
  );
const text = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...hostile) },
  { weight: 2, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
  { weight: 2, arbitrary: bigIntText },
  { weight: 1, arbitrary: fc.integer().map(String) },
);

const traceIdValue = hashLike(() => known.traceIds);
const txHashValue = hashLike(() => known.txHashes);
const msgHashValue = hashLike(() => known.msgHashes);
const accountValue = fc.oneof(
  fromIndex(() => known.accounts),
  fc.constantFrom("EQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH", "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH", "0:0", "-1:" + "F".repeat(64)),
);
const hashListValue = (item: fc.Arbitrary<string>) =>
  fc.oneof(item, fc.array(item, { minLength: 2, maxLength: 4 }).map((list) => list.join(",")));
const utimeValue = fc.oneof(
  fc.integer({ min: 1_500_000_000, max: 1_800_000_000 }).map(String),
  fc.bigInt(0n, 2n ** 32n).map(String),
  fc.constantFrom("2147483648", "4294967295", "3000000000.5"),
);

/** REST parameters of each path, with the values worth trying besides random text. */
const restPaths: Record<string, { dialect: "v3" | "v2"; params: Record<string, fc.Arbitrary<string>> }> = {
  "/api/v3/masterchainInfo": { dialect: "v3", params: {} },
  "/api/v3/adjacentTransactions": {
    dialect: "v3",
    params: { hash: txHashValue, direction: fc.constantFrom("in", "out", "both", "", "constructor", "__proto__", "toString") },
  },
  "/api/v3/traces": {
    dialect: "v3",
    params: {
      account: accountValue,
      trace_id: hashListValue(traceIdValue),
      tx_hash: hashListValue(txHashValue),
      msg_hash: hashListValue(msgHashValue),
      mc_seqno: fc.oneof(fromIndex(() => [...known.mcSeqnos.map(String), "1"]), fc.integer().map(String)),
      start_utime: utimeValue,
      end_utime: utimeValue,
      start_lt: bigIntText,
      end_lt: bigIntText,
      include_actions: fc.constantFrom("true", "true", "1", "0", "t", "F"),
      supported_action_types: fc.constantFrom("v1", "v2", "latest", "jettons", "nft.v3", "ton_transfer", "jetton_swap", "unknown", "a\0b", "__proto__"),
      limit: fc.integer({ min: -2, max: 1002 }).map(String),
      offset: fc.integer({ min: -2, max: 50 }).map(String),
      sort: fc.constantFrom("asc", "desc", "ASC", "d", "a"),
    },
  },
  "/api/v2/getBlockTransactionsExt": {
    dialect: "v2",
    params: {
      workchain: fc.constantFrom("-1", "0", "1"),
      shard: fc.constantFrom("-9223372036854775808", "8000000000000000", "0"),
      seqno: fromIndex(() => [...known.blocks.map((b) => String(b.seqno)), "0", "1"]),
      root_hash: fromIndex(() => known.blocks.map((b) => b.root_hash)),
      file_hash: fromIndex(() => known.blocks.map((b) => b.file_hash)),
      after_lt: bigIntText,
      after_hash: fc.oneof(accountValue, txHashValue),
      count: fc.integer({ min: -1, max: 10_001 }).map(String),
    },
  },
};

/**
 * A query string: a few of the path's parameters, once or twice each (the last one counts, or all of a list),
 * mostly with values of their own kind (so that requests get past validation and into the database) and otherwise
 * random or empty, now and then an unknown key or a key named like a property of every object.
 */
function queryFor(params: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<[string, string][]> {
  const value = (domain: fc.Arbitrary<string>) =>
    fc.oneof({ weight: 1, arbitrary: fc.constant("") }, { weight: 2, arbitrary: text }, { weight: 7, arbitrary: domain });
  const pairs = Object.entries(params).map(([name, domain]) =>
    fc.array(value(domain), { minLength: 1, maxLength: 2 }).map((values) => values.map((v): [string, string] => [name, v])),
  );
  const chosen = pairs.length === 0 ? fc.constant([]) : fc.shuffledSubarray(pairs, { maxLength: Math.min(4, pairs.length) }).chain((some) => fc.tuple(...some));
  const stray = fc.array(fc.tuple(fc.constantFrom("unknown", "__proto__", "constructor", "toString"), text), { maxLength: 1 });
  return fc.tuple(chosen, stray).map(([present, extra]) => [...present.flat(), ...extra]);
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

describe("REST", () => {
  it.each(Object.entries(restPaths))("%s: any query gets 200, 404 or 422, in the path's JSON dialect", async (path, { dialect, params }) => {
    await fc.assert(
      fc.asyncProperty(queryFor(params), async (pairs) => {
        const query = new URLSearchParams(pairs).toString();
        const response = await fetch(`${server.baseUrl}${path}?${query}`);
        const raw = await response.text();
        expect([200, 404, 422], `${path}?${query}: ${raw.slice(0, 300)}`).toContain(response.status);
        expect(response.headers.get("content-type")).toMatch(/^application\/json/);
        const body: unknown = JSON.parse(raw);
        expect(isJsonObject(body)).toBe(true);
        const json = body as Record<string, unknown>;
        if (dialect === "v2") {
          expect(json.ok).toBe(response.status === 200);
          if (response.status !== 200) {
            expect(Object.keys(json).sort()).toEqual(["code", "error", "ok"]);
            expect(json.code).toBe(response.status);
          }
        } else if (response.status !== 200) {
          expect(Object.keys(json)).toEqual(["error"]);
        }
        // A direction outside the documented ones is refused, whatever the hash.
        const direction = new URLSearchParams(pairs).getAll("direction").at(-1);
        if (path === "/api/v3/adjacentTransactions" && direction !== undefined && !["", "in", "out", "both"].includes(direction)) {
          expect(response.status, `${path}?${query}`).toBe(422);
        }
        if (response.status !== 200) {
          expect(typeof json.error).toBe("string");
          expect((json.error as string).length).toBeGreaterThan(0);
          expect(json.error).not.toBe("internal error");
        }
      }),
      { seed, numRuns: 120 },
    );
  });

  it("a page that answers lists what it found", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...known.traceIds), fc.boolean(), async (traceId, includeActions) => {
        const { status, body } = await server.rest(`/api/v3/traces?trace_id=${encodeURIComponent(traceId)}&include_actions=${includeActions}`);
        expect(status).toBe(200);
        const traces = (body as { traces: { trace_id: string; actions?: unknown[] }[] }).traces;
        expect(traces.map((t) => t.trace_id)).toEqual([traceId]);
        if (includeActions) expect(Array.isArray(traces[0]?.actions)).toBe(true);
      }),
      { seed, numRuns: 20 },
    );
  });
});

// ---- RPC ---------------------------------------------------------------------------------------------------

type Transports = "connect JSON" | "connect binary" | "grpc" | "grpc-web";
let clients: Record<Transports, Client<typeof TonQueryService>>;

beforeAll(() => {
  const baseUrl = server.baseUrl;
  const transports: Record<Transports, Transport> = {
    "connect JSON": createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    "connect binary": createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    grpc: createGrpcTransport({ baseUrl }),
    "grpc-web": createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  };
  clients = Object.fromEntries(Object.entries(transports).map(([name, t]) => [name, createClient(TonQueryService, t)])) as typeof clients;
});

const rpcText = fc.oneof({ weight: 2, arbitrary: text }, { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 16 }) });
const int32 = fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.integer({ min: -2, max: 2 }));
const uint32 = fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 1001 }));
const int64 = fc.oneof(fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n), fc.bigInt(-2n, 2n)).map(String);
const uint64 = fc.oneof(fc.bigInt(0n, 2n ** 64n - 1n), fc.bigInt(0n, 2n)).map(String);
/** An enum's number: its values, and numbers it does not name (open enums keep them). */
const enumValue = <E extends number>() => fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 2 ** 31 - 1 })) as unknown as fc.Arbitrary<E>;
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const strings = (item: fc.Arbitrary<string>) => fc.array(fc.oneof(item, rpcText), { maxLength: 4 });

const requests = {
  getMasterchainInfo: fc.constant({} satisfies MessageInitShape<typeof GetMasterchainInfoRequestSchema>),
  getAdjacentTransactions: fc.record({ hash: fc.oneof(txHashValue, rpcText), direction: enumValue<Direction>() }) satisfies fc.Arbitrary<
    MessageInitShape<typeof GetAdjacentTransactionsRequestSchema>
  >,
  getTraces: fc.record(
    {
      account: maybe(fc.oneof(accountValue, rpcText)),
      traceId: strings(traceIdValue),
      txHash: strings(txHashValue),
      msgHash: strings(msgHashValue),
      mcSeqno: maybe(int32),
      startUtime: maybe(uint32),
      endUtime: maybe(uint32),
      startLt: maybe(uint64),
      endLt: maybe(uint64),
      includeActions: fc.boolean(),
      supportedActionTypes: fc.array(fc.oneof(fc.constantFrom("v1", "latest", "jettons", "nft"), rpcText), { maxLength: 4 }),
      limit: maybe(uint32),
      offset: maybe(uint32),
      sort: enumValue<SortOrder>(),
    },
    { requiredKeys: [] },
  ) satisfies fc.Arbitrary<MessageInitShape<typeof GetTracesRequestSchema>>,
  getBlockTransactionsExt: fc.record(
    {
      workchain: fc.oneof(fc.constantFrom(-1, 0), int32),
      shard: fc.oneof(fc.constantFrom("-9223372036854775808", "0"), int64),
      seqno: fc.oneof(fromIndex(() => known.blocks.map((b) => b.seqno)), int32),
      rootHash: maybe(rpcText),
      fileHash: maybe(rpcText),
      afterLt: maybe(int64),
      afterHash: maybe(fc.oneof(accountValue, rpcText)),
      count: maybe(uint32),
    },
    { requiredKeys: [] },
  ) satisfies fc.Arbitrary<MessageInitShape<typeof GetBlockTransactionsExtRequestSchema>>,
};

const documentedFailures = [Code.InvalidArgument, Code.NotFound];

describe("RPC", () => {
  it.each(Object.keys(requests) as (keyof typeof requests)[])("%s: any field values over Connect JSON, Connect binary, gRPC and gRPC-web", async (method) => {
    const arbitrary = requests[method] as fc.Arbitrary<object>;
    await fc.assert(
      fc.asyncProperty(arbitrary, fc.constantFrom(...(["connect JSON", "connect binary", "grpc", "grpc-web"] as const)), async (request, transport) => {
        const call = clients[transport][method] as (request: object) => Promise<unknown>;
        try {
          await call(request);
        } catch (err) {
          const error = ConnectError.from(err);
          expect(documentedFailures, `${transport} ${method} ${JSON.stringify(request, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))}: ${error.message}`).toContain(
            error.code,
          );
          expect(error.rawMessage.length).toBeGreaterThan(0);
        }
      }),
      { seed, numRuns: method === "getMasterchainInfo" ? 8 : 100 },
    );
  });

  const schemas: Record<keyof typeof requests, DescMessage> = {
    getMasterchainInfo: GetMasterchainInfoRequestSchema,
    getAdjacentTransactions: GetAdjacentTransactionsRequestSchema,
    getTraces: GetTracesRequestSchema,
    getBlockTransactionsExt: GetBlockTransactionsExtRequestSchema,
  };
  const procedure = (method: string) => method.charAt(0).toUpperCase() + method.slice(1);

  it("any JSON for any field: INVALID_ARGUMENT at worst, in each protocol's form", async () => {
    const fieldNames = Object.fromEntries(Object.entries(schemas).map(([m, s]) => [m, s.fields.flatMap((f) => [f.jsonName, f.name])]));
    const body = fc.constantFrom(...(Object.keys(schemas) as (keyof typeof requests)[])).chain((method) =>
      fc.tuple(
        fc.constant(method),
        fc.dictionary(fc.oneof(fc.constantFrom(...(fieldNames[method] ?? ["x"]), "__proto__", "constructor"), fc.string({ maxLength: 6 })), fc.jsonValue({ maxDepth: 2 }), {
          maxKeys: 4,
        }),
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom(...rawProtocols), async ([method, json], protocol) => {
        const answer = await rawCall(server.baseUrl, protocol, procedure(method), JSON.stringify(json), { json: true });
        expect([0, ...documentedFailures], `${protocol} ${method} ${JSON.stringify(json)}: ${answer.message}`).toContain(answer.code);
        if (protocol === "connect") expect(answer.status).toBe(answer.code === 0 ? 200 : answer.code === Code.InvalidArgument ? 400 : 404);
        if (answer.code !== 0) expect(answer.message.length).toBeGreaterThan(0);
      }),
      { seed, numRuns: 150 },
    );
  });

  it("any envelopes as a gRPC or gRPC-web body: INVALID_ARGUMENT, UNIMPLEMENTED (no message, or two), RESOURCE_EXHAUSTED (a message past 256 KiB)", async () => {
    // Envelopes whose flags (compressed, trailers, anything), declared lengths and contents are random, some of them
    // gzip-compressed, sent with or without a grpc-encoding: the unary path reads them as connect's pipeline did.
    const anEnvelope = fc
      .tuple(fc.constantFrom(0, 0, 1, 0x80, 0x81, 0x02), fc.uint8Array({ maxLength: 24 }), fc.boolean(), fc.integer({ min: -3, max: 3 }))
      .map(([flags, payload, gzipped, lengthSkew]) => {
        const data = gzipped ? gzipSync(payload) : Buffer.from(payload);
        const head = Buffer.alloc(5);
        head.writeUInt8(flags, 0);
        head.writeUInt32BE(Math.max(0, data.length + lengthSkew), 1);
        return Buffer.concat([head, data]);
      });
    const body = fc.array(anEnvelope, { maxLength: 3 }).chain((envelopes) =>
      fc.nat({ max: 4 }).map((cut) => {
        const all = Buffer.concat(envelopes);
        return all.subarray(0, Math.max(0, all.length - cut));
      }),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom("grpc", "grpc-web"), fc.boolean(), async (bytes, protocol, declaresGzip) => {
        const headers: Record<string, string> = declaresGzip ? { "grpc-encoding": "gzip" } : {};
        const answer = await rawCall(server.baseUrl, protocol, "GetTraces", bytes, { enveloped: true, headers });
        expect([0, ...documentedFailures, Code.Unimplemented, Code.ResourceExhausted], `${protocol} ${bytes.toString("hex")}: ${answer.message}`).toContain(answer.code);
        expect(answer.status).toBe(200);
      }),
      { seed, numRuns: 150 },
    );
  });

  it("any bytes as a protobuf body: INVALID_ARGUMENT at worst", async () => {
    const valid = (method: keyof typeof requests) => (request: object) =>
      toBinary(schemas[method], create(schemas[method], request as MessageInitShape<DescMessage>));
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      // A valid request with a few bytes flipped or cut off.
      requests.getTraces.chain((r) =>
        fc.tuple(fc.constant(valid("getTraces")(r)), fc.nat(), fc.integer({ min: 0, max: 255 })).map(([b, at, x]) => {
          const out = Uint8Array.from(b);
          if (out.length > 0) out[at % out.length] = x;
          return out.subarray(0, Math.max(0, out.length - (x % 3)));
        }),
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...(Object.keys(schemas) as (keyof typeof requests)[])), bytes, fc.constantFrom(...rawProtocols), async (method, body, protocol) => {
        const answer = await rawCall(server.baseUrl, protocol, procedure(method), body);
        expect([0, ...documentedFailures], `${protocol} ${method} ${Buffer.from(body).toString("hex")}: ${answer.message}`).toContain(answer.code);
        if (protocol === "connect" && answer.code === Code.InvalidArgument) expect(answer.status).toBe(400);
      }),
      { seed, numRuns: 150 },
    );
  });
});
