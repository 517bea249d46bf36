import { create } from "@bufbuild/protobuf";
import { type TraceAction, TraceActionSchema } from "../../gen/tonquery/v1/trace_pb.ts";
import { optional } from "../db/rows.ts";
import { renderAction, type RenderOptions } from "./details.ts";
import type { StoredActionRow } from "./raw.ts";

// The classifier's stored actions (rows of selectTraceActionRows) as the typed API's TraceActions, their
// type-specific details rendered as toncenter shows them.

/** Each trace's action rows as TraceActions, in the same order. */
export function traceActions(rowsByTrace: ReadonlyMap<string, readonly StoredActionRow[]>, options: RenderOptions = {}): Map<string, TraceAction[]> {
  const byTrace = new Map<string, TraceAction[]>();
  for (const [traceId, rows] of rowsByTrace) {
    const actions: TraceAction[] = [];
    for (const row of rows) actions.push(traceAction(row, options));
    byTrace.set(traceId, actions);
  }
  return byTrace;
}

/** One row as the typed API's TraceAction. */
export function traceAction(row: StoredActionRow, options: RenderOptions = {}): TraceAction {
  const rendered = renderAction(row, options);
  return create(TraceActionSchema, {
    traceId: row.trace_id ?? "",
    actionId: row.action_id ?? "",
    startLt: optional(row.start_lt),
    endLt: optional(row.end_lt),
    startUtime: optional(row.start_utime),
    endUtime: optional(row.end_utime),
    traceEndLt: optional(row.trace_end_lt),
    traceEndUtime: optional(row.trace_end_utime),
    traceMcSeqnoEnd: row.trace_mc_seqno_end === null ? undefined : Number(row.trace_mc_seqno_end),
    transactions: row.tx_hashes ?? [],
    success: row.success ?? false,
    type: rendered.type,
    details: rendered.details,
    rawAction: rendered.rawAction,
    traceExternalHash: optional(row.trace_external_hash),
    traceExternalHashNorm: optional(row.trace_external_hash_norm),
    accounts: [],
  });
}
