import { create } from "@bufbuild/protobuf";
import { createHandlerContext } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateData } from "../bench/generate/load.ts";
import { type GetTracesRequest, GetTracesRequestSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { type Database, databaseOptions, openDatabase } from "../src/db/client.ts";
import { TracesJsonEncoder, writeTrace } from "../src/encode/v3-json/traces.ts";
import { JsonPieces } from "../src/encode/v3-json/pieces.ts";
import { quote, value } from "../src/encode/v3-json/transaction.ts";
import { type LoadedTrace, streamTraces, type TracePageEnd, type TraceSink, traceOf, typedTraceSink } from "../src/handlers/traces.ts";
import { jsonBytes } from "../src/present/json-text.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import { presentTrace, TracesJsonWriter } from "../src/present/v3/trace.ts";
import { createTestDatabase, type TestDatabase, testEngine } from "./support/database.ts";
import { readTransactionRecordings } from "./support/recordings.ts";

// The REST v3 traces encoder (src/encode/v3-json/), which writes from the rows the data layer read, against the
// presenters (src/present/v3/), which print the typed API's Traces scanned from the same rows: byte for byte, on
// every trace of the recordings and of a generated chain, with and without actions, decoded bodies, and with traces
// over MAX_TRACE_TRANSACTIONS (a header only).

/** Every way a page is printed differently: actions, decoded bodies, and the bound that leaves traces incomplete. */
const variants = [
  { includeActions: false, env: {} },
  { includeActions: true, env: {} },
  { includeActions: true, env: { DECODE_BODIES: "false" } },
  { includeActions: false, env: { DECODED_BODY_CACHE: "0", MAX_TRACE_TRANSACTIONS: "2" } },
  { includeActions: true, env: { MAX_TRACE_TRANSACTIONS: "3" } },
];

/** Traces asked for by id in one request: MAX_LIST_VALUES' default. */
const idsPerPage = 256;

function context() {
  return createHandlerContext({
    service: TonQueryService,
    method: TonQueryService.method.getTraces,
    protocolName: "test",
    requestMethod: "POST",
    url: "/tonquery.v1.TonQueryService/GetTraces",
  });
}

/**
 * Feeds one page to both writers and checks each trace as it comes, then the page: the encoder against
 * presentTrace of traceOf, and the encoder's page against TracesJsonWriter's.
 */
class ComparingSink implements TraceSink<{ ours: Buffer; reference: Buffer; traces: number }> {
  readonly #encoder: TracesJsonEncoder;
  readonly #reference: TraceSink<Buffer[]>;
  readonly #includeActions: boolean;
  readonly #pieces = new JsonPieces();
  #traces = 0;

  constructor(request: GetTracesRequest) {
    this.#encoder = new TracesJsonEncoder(request);
    this.#reference = typedTraceSink(new TracesJsonWriter(request));
    this.#includeActions = request.includeActions;
  }

  traces(chunk: readonly LoadedTrace[]): void {
    for (const loaded of chunk) {
      writeTrace(this.#pieces, loaded, this.#includeActions);
      const ours = this.#pieces.take().toString();
      const reference = jsonBytes(presentTrace(traceOf(loaded), this.#includeActions)).toString();
      expect(ours, loaded.row.trace_id).toBe(reference);
      this.#traces++;
    }
    this.#encoder.traces(chunk);
    this.#reference.traces(chunk);
  }

  end(end: TracePageEnd) {
    return { ours: Buffer.concat(this.#encoder.end(end)), reference: Buffer.concat(this.#reference.end(end)), traces: this.#traces };
  }
}

/** Every trace of the index, a page of ids at a time, in every variant: how many traces were compared. */
async function compareEveryTrace(url: string, admin: TestDatabase["admin"], engine: string): Promise<number> {
  const ids = (await admin<{ trace_id: string }[]>`select trace_id from traces order by trace_id`).map((row) => row.trace_id);
  let compared = 0;
  for (const { includeActions, env } of variants) {
    const config = loadConfig({ DB_POOL_SIZE: "2", ...env });
    const db: Database = openDatabase(databaseOptions(config, url, { sharedSession: engine === "pglite" }));
    try {
      for (let i = 0; i < ids.length; i += idsPerPage) {
        const page = ids.slice(i, i + idsPerPage);
        const request = create(GetTracesRequestSchema, { traceId: page, limit: page.length, includeActions });
        const { ours, reference, traces } = await streamTraces({ db, config }, request, context(), new ComparingSink(request));
        expect(traces).toBe(page.length);
        expect(ours.equals(reference)).toBe(true);
        compared += traces;
      }
    } finally {
      await db.end();
    }
  }
  return compared;
}

describe("the encoder's quoting", () => {
  it("prints strings and scalars as JSON.stringify does, escaping what it escapes", () => {
    const strings = ["", "0:ABCDEF", "say \"hi\"", "back\\slash", "tab\tnew\nline\u0000\u001f\u007f", "héllo ✓", "😀", "\ud83d", "x\udc00y", "\u2028"];
    for (const text of strings) expect(quote(text), text).toBe(JSON.stringify(text));
    for (const scalar of [0, -1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, true, false, "12345"]) {
      expect(value(scalar), String(scalar)).toBe(JSON.stringify(scalar));
    }
    expect(value(null)).toBe("null");
    expect(value(undefined)).toBe("null");
  });
});

describe("the v3 traces JSON encoder, on the recordings", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    const recordings = await readTransactionRecordings();
    await recordings.load(new IndexLoader()).write(db.admin);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("prints every trace byte for byte as the presenters do", async () => {
    const compared = await compareEveryTrace(db.url, db.admin, db.engine);
    expect(compared).toBeGreaterThan(30 * variants.length);
  });
});

const engine = await testEngine();

// The generator loads with COPY FROM STDIN, which PGlite's socket server does not support.
describe.runIf(engine === "postgresql")("the v3 traces JSON encoder, on a generated chain", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await generateData({ url: db.url, transactions: 4000, seed: 25 });
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("prints every trace byte for byte as the presenters do", async () => {
    const compared = await compareEveryTrace(db.url, db.admin, db.engine);
    expect(compared).toBeGreaterThan(800 * variants.length);
  }, 120_000);
});
