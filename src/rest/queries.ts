import { create } from "@bufbuild/protobuf";
import {
  type GetAdjacentTransactionsRequest,
  GetAdjacentTransactionsRequestSchema,
  type GetTracesRequest,
  GetTracesRequestSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import {
  addressParam,
  boolParam,
  hashList,
  int32Param,
  lastValue,
  atLeastParam,
  parseDirection,
  sortParam,
  uint64Param,
  utimeParam,
} from "./params.ts";

// Each legacy path's query string turned into its RPC's request, under toncenter's parameter names.

export function adjacentTransactionsQuery(query: URLSearchParams): GetAdjacentTransactionsRequest {
  return create(GetAdjacentTransactionsRequestSchema, {
    hash: lastValue(query, "hash") ?? "",
    direction: parseDirection(lastValue(query, "direction")),
  });
}

/** Read in toncenter's order (selectors, times, lts, paging), so the first bad parameter it reports is ours too. */
export function tracesQuery(query: URLSearchParams): GetTracesRequest {
  const account = addressParam(query, "account");
  const traceId = hashList(query, "trace_id");
  const txHash = hashList(query, "tx_hash");
  const msgHash = hashList(query, "msg_hash");
  const mcSeqno = int32Param(query, "mc_seqno");
  const includeActions = boolParam(query, "include_actions") ?? false;
  const supportedActionTypes = query.getAll("supported_action_types").filter((t) => t !== "");
  const startUtime = utimeParam(query, "start_utime");
  const endUtime = utimeParam(query, "end_utime");
  const startLt = uint64Param(query, "start_lt");
  const endLt = uint64Param(query, "end_lt");
  const limit = atLeastParam(query, "limit", 1);
  const offset = atLeastParam(query, "offset", 0);
  const sort = sortParam(query);
  return create(GetTracesRequestSchema, {
    account,
    traceId,
    txHash,
    msgHash,
    mcSeqno,
    includeActions,
    supportedActionTypes,
    startUtime,
    endUtime,
    startLt,
    endLt,
    limit,
    offset,
    sort,
  });
}
