import { create, equals, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type GetTracesResponse, GetTracesRequestSchema, GetTracesResponseSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { type Trace, TraceSchema } from "../gen/tonquery/v1/trace_pb.ts";
import { encodeTrace, TracesProtoSink } from "../src/encode/proto/traces.ts";
import { type LoadedTrace, streamTraces, type TracePageEnd, type TraceSink, traceOf } from "../src/handlers/traces.ts";
import { JsonText } from "../src/present/json-text.ts";
import { databaseOptions, openDatabase } from "../src/db/client.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { type TestDatabase, testEngine } from "./support/database.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { generatedIndex, recordedIndex } from "./support/encoder-indexes.ts";
import { forEveryTracePage, getTracesContext, type TraceVariant, traceVariants } from "./support/trace-pages.ts";
import { binaryOf } from "../src/encode/proto/own-encoding.ts";

// The protobuf encoder of traces (src/encode/proto/), which writes from the rows the data layer read, against
// protobuf-es writing the typed API's Trace scanned from the same rows: byte for byte, toBinary(TraceSchema,
// traceOf(loaded)), on every trace of the recordings and of a generated chain, with and without actions, decoded
// bodies, and with traces over MAX_TRACE_TRANSACTIONS (a header only). The reference is protobuf-es's own
// toBinary, not the pre-encoded bodies the binary doors used to hand it (withEncodedBodies): that one shared
// decoded-content.ts with the encoder, so a fault there would have been on both sides. Then whole answers over the
// wire: gRPC, gRPC-web and Connect binary decode to the message Connect JSON (the typed path) answers.

/**
 * Checks each trace of a page as it comes (the encoder's bytes against toBinary of traceOf), and collects the page
 * both ways: TracesProtoSink's answer, and toBinary of the typed page.
 */
class ComparingSink implements TraceSink<{ ours: GetTracesResponse; reference: Buffer; traces: number }> {
  readonly #ours = new TracesProtoSink();
  readonly #traces: Trace[] = [];

  trace(loaded: LoadedTrace): void {
    const ours = encodeTrace(loaded);
    const trace = traceOf(loaded);
    const reference = toBinary(TraceSchema, trace);
    if (!Buffer.from(ours).equals(reference)) {
      // The message first, for a readable difference where they read back differently; the bytes then.
      expect(fromBinary(TraceSchema, ours), loaded.row.trace_id).toEqual(trace);
      expect(Buffer.from(ours).toString("hex"), loaded.row.trace_id).toBe(Buffer.from(reference).toString("hex"));
    }
    this.#traces.push(trace);
    this.#ours.trace(loaded);
  }

  end(end: TracePageEnd) {
    const reference = Buffer.from(toBinary(GetTracesResponseSchema, create(GetTracesResponseSchema, { ...end, traces: this.#traces })));
    return { ours: this.#ours.end(end), reference, traces: this.#traces.length };
  }
}

/** Every trace of the index, a page of ids at a time, in the variants: how many traces were compared. */
function compareEveryTrace(db: TestDatabase, variants: readonly TraceVariant[] = traceVariants): Promise<number> {
  return forEveryTracePage(db, async (request, deps) => {
    const { ours, reference, traces } = await streamTraces(deps, request, getTracesContext(), new ComparingSink());
    expect(traces).toBe(request.traceId.length);
    // The page as connect writes it: toBinary's bytes for the whole typed page.
    expect(Buffer.from(binaryOf(GetTracesResponseSchema, ours)).equals(reference)).toBe(true);
    return traces;
  }, variants);
}

const engine = await testEngine();
// The generator loads with COPY FROM STDIN, which PGlite's socket server does not support. Its chain is generated
// while the recordings are compared: nearly all of it is PostgreSQL's work.
const generated = engine === "postgresql" ? generatedIndex(12_000, 25) : undefined;
generated?.catch(() => {});

describe("the protobuf traces encoder, on the recordings", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await recordedIndex();
    // The recordings hold no extra currencies (every map is {} or NULL): a share of the rows get some, with keys
    // JavaScript orders differently from their text (integer-like ascending, then the others as inserted, a
    // negative id among them) and amounts as numbers and as strings.
    const extra = { "239": "1000", "-17": 5, "10": "0", "2": 123456789012345678901234567890 };
    const updated = await Promise.all([
      db.admin`update messages set value_extra_currencies = ${db.admin.json(extra)} where msg_hash < 'M'`,
      db.admin`update transactions set total_fees_extra_currencies = ${db.admin.json(extra)}, credit_extra_currencies = '{"7": "1"}' where hash < 'M'`,
      db.admin`update account_states set balance_extra_currencies = ${db.admin.json(extra)} where hash < 'M'`,
    ]);
    for (const { count } of updated) expect(count).toBeGreaterThan(10);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("writes every trace byte for byte as toBinary writes the typed Trace", async () => {
    const compared = await compareEveryTrace(db);
    expect(compared).toBeGreaterThan(30 * traceVariants.length);
  });

  it("writes decoded bodies from their cached bytes, never reading them back from their text", async () => {
    const ids = (await db.admin<{ trace_id: string }[]>`select trace_id from traces order by trace_id`).map((row) => row.trace_id);
    const config = loadConfig({ DB_POOL_SIZE: "2" });
    const reader = openDatabase(databaseOptions(config, db.url, { sharedSession: db.engine === "pglite" }));
    const request = create(GetTracesRequestSchema, { traceId: ids, limit: ids.length });
    const page = async () => binaryOf(GetTracesResponseSchema, await streamTraces({ db: reader, config }, request, getTracesContext(), new TracesProtoSink()));
    try {
      const first = await page();
      const parsed = vi.spyOn(JsonText.prototype, "value");
      try {
        // The second page's bodies come from the decoded-body cache, as the same objects, their bytes written once.
        expect(Buffer.from(await page()).equals(first)).toBe(true);
        expect(parsed).not.toHaveBeenCalled();
      } finally {
        parsed.mockRestore();
      }
    } finally {
      await reader.end();
    }
  });

  describe("over the wire", () => {
    let server: TestServer;

    beforeAll(async () => {
      // Traces over MAX_TRACE_TRANSACTIONS are headers only: pages hold both kinds.
      server = await startTestServer(db.url, { MAX_TRACE_TRANSACTIONS: "5" });
    });
    afterAll(async () => {
      await server?.close();
    });

    it("answers GetTraces over gRPC, gRPC-web and Connect binary with the message Connect JSON answers", async () => {
      const [busiest] = await db.admin<{ account: string }[]>`
        select account from transactions group by account order by count(distinct trace_id) desc, account limit 1`;
      const ids = (await db.admin<{ trace_id: string }[]>`select trace_id from traces order by trace_id`).map((row) => row.trace_id);
      const requests: MessageInitShape<typeof GetTracesRequestSchema>[] = [
        { account: busiest?.account, limit: 100, includeActions: true },
        { traceId: ids, limit: ids.length },
        { traceId: ids, limit: ids.length, includeActions: true },
      ];
      // connect-node's Connect transport speaks binary unless told otherwise (the suite's "connect" client does).
      const connect = (useBinaryFormat: boolean, interceptors: Interceptor[] = []) =>
        createClient(TonQueryService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat, interceptors }));
      const jsonAnswers: (string | null)[] = [];
      const json = connect(false, [
        (next) => async (request) => {
          const response = await next(request);
          jsonAnswers.push(response.header.get("content-type"));
          return response;
        },
      ]);
      const binary: [string, Client<typeof TonQueryService>][] = [
        ["grpc", server.client("grpc")],
        ["grpc-web", server.client("grpc-web")],
        ["connect+proto", connect(true)],
      ];
      let traces = 0;
      let incomplete = 0;
      for (const request of requests) {
        const expected = await json.getTraces(request);
        traces += expected.traces.length;
        incomplete += expected.traces.filter((trace) => trace.isIncomplete).length;
        for (const [protocol, client] of binary) {
          const answer = await client.getTraces(request);
          if (!equals(GetTracesResponseSchema, answer, expected)) expect(answer, protocol).toEqual(expected);
        }
      }
      expect(traces).toBeGreaterThan(80);
      expect(incomplete).toBeGreaterThan(0);
      expect(new Set(jsonAnswers)).toEqual(new Set(["application/json"]));
    });
  });
});

/**
 * The generated chain's variants: fewer than the recordings' (its traces are many more), together with and without
 * actions, decoded bodies, and incomplete traces.
 */
const generatedVariants: TraceVariant[] = [
  { includeActions: true, env: {} },
  { includeActions: false, env: { DECODE_BODIES: "false", MAX_TRACE_TRANSACTIONS: "3" } },
];

describe.runIf(generated !== undefined)("the protobuf traces encoder, on a generated chain", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await (generated as Promise<TestDatabase>);
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("writes every trace byte for byte as toBinary writes the typed Trace", async () => {
    const compared = await compareEveryTrace(db, generatedVariants);
    expect(compared).toBeGreaterThan(3000 * generatedVariants.length);
  }, 120_000);
});
