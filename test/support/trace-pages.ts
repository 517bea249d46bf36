import { create } from "@bufbuild/protobuf";
import { createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { generateData } from "../../bench/generate/load.ts";
import { type GetTracesRequest, GetTracesRequestSchema, TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import { type Database, databaseOptions, openDatabase } from "../../src/db/client.ts";
import { prepareBodyDecoding } from "../../src/decoding/page-bodies.ts";
import { IndexLoader } from "../../src/recordings/loader.ts";
import { type Config, loadConfig } from "../../src/runtime/config.ts";
import { createTestDatabase, type TestDatabase } from "./database.ts";
import { readTransactionRecordings } from "./recordings.ts";

// The set-up of the protobuf trace encoder's differential test (test/proto-encoder.test.ts), as
// test/v3-json-encoder.test.ts does it: the indexes compared on (the recordings, a generated chain) and every trace
// of one, a page of ids at a time, in every variant a page is written differently in.

export interface TraceVariant {
  includeActions: boolean;
  env: Record<string, string>;
}

/** Every way a page is written differently: actions, decoded bodies, and the bound that leaves traces incomplete. */
export const traceVariants: readonly TraceVariant[] = [
  { includeActions: false, env: {} },
  { includeActions: true, env: {} },
  { includeActions: true, env: { DECODE_BODIES: "false" } },
  { includeActions: false, env: { DECODED_BODY_CACHE: "0", MAX_TRACE_TRANSACTIONS: "2" } },
  { includeActions: true, env: { MAX_TRACE_TRANSACTIONS: "3" } },
];

/** Traces asked for by id in one request: MAX_LIST_VALUES' default. */
const idsPerPage = 256;

/** A GetTraces call's context, for calling the handler in-process. */
export function getTracesContext(): HandlerContext {
  return createHandlerContext({
    service: TonQueryService,
    method: TonQueryService.method.getTraces,
    protocolName: "test",
    requestMethod: "POST",
    url: "/tonquery.v1.TonQueryService/GetTraces",
  });
}

/** A test database holding every recording. */
export async function recordingsDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  const recordings = await readTransactionRecordings();
  await recordings.load(new IndexLoader()).write(db.admin);
  return db;
}

/** A test database holding a generated chain (PostgreSQL only: the generator loads with COPY FROM STDIN). */
export async function generatedDatabase(transactions: number, seed: number): Promise<TestDatabase> {
  const db = await createTestDatabase();
  await generateData({ url: db.url, transactions, seed });
  return db;
}

/**
 * Every trace of the index, a page of ids at a time, in every variant (all of traceVariants unless given): `page`
 * gets each request with the service's dependencies for its variant and returns how many traces it compared; the
 * sum is returned.
 */
export async function forEveryTracePage(
  db: TestDatabase,
  page: (request: GetTracesRequest, deps: { db: Database; config: Config }) => Promise<number>,
  variants: readonly TraceVariant[] = traceVariants,
): Promise<number> {
  const ids = (await db.admin<{ trace_id: string }[]>`select trace_id from traces order by trace_id`).map((row) => row.trace_id);
  let compared = 0;
  for (const { includeActions, env } of variants) {
    const config = loadConfig({ DB_POOL_SIZE: "2", ...env });
    // As the service does before its first request: compiling the body schema blocks for a second or more, long
    // enough for the reader's availability probe to time out and take the database for down.
    prepareBodyDecoding(config);
    const reader = openDatabase(databaseOptions(config, db.url, { sharedSession: db.engine === "pglite" }));
    try {
      for (let i = 0; i < ids.length; i += idsPerPage) {
        const traceId = ids.slice(i, i + idsPerPage);
        compared += await page(create(GetTracesRequestSchema, { traceId, limit: traceId.length, includeActions }), { db: reader, config });
      }
    } finally {
      await reader.end();
    }
  }
  return compared;
}
