import { create } from "@bufbuild/protobuf";
import { createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { type GetTracesRequest, GetTracesRequestSchema, TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import type { Database } from "../../src/db/client.ts";
import type { Config } from "../../src/runtime/config.ts";
import type { TestDatabase } from "./database.ts";
import { serviceDeps } from "./encoder-indexes.ts";

// The trace encoders' differential tests (test/v3-json-encoder.test.ts, test/proto-encoder.test.ts): every trace of
// an index (see encoder-indexes.ts), a page of ids at a time, in every variant a page is written differently in.

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
    const { db: reader, config } = serviceDeps(db, env);
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
