import { create } from "@bufbuild/protobuf";
import {
  type GetAdjacentTransactionsRequest,
  GetAdjacentTransactionsRequestSchema,
  type GetBlockTransactionsExtRequest,
  GetBlockTransactionsExtRequestSchema,
  type GetTracesRequest,
  GetTracesRequestSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import { v2ParseError, v2ValidationError } from "../handlers/block-transactions-ext.ts";
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
  const pageToken = lastValue(query, "cursor");
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
    pageToken,
  });
}

/** v2 reads integers strictly (no fractions, no hex); a value it cannot read names the parameter. */
function v2Integer(query: URLSearchParams, name: string, min: bigint, max: bigint, required: boolean): string | undefined {
  const value = lastValue(query, name);
  if (value === undefined) {
    if (required) throw v2ParseError(name);
    return undefined;
  }
  if (!/^-?\d+$/.test(value) || BigInt(value) < min || BigInt(value) > max) throw v2ParseError(name);
  return BigInt(value).toString();
}

const int32 = [-(2n ** 31n), 2n ** 31n - 1n] as const;
const int64 = [-(2n ** 63n), 2n ** 63n - 1n] as const;

export function blockTransactionsExtQuery(query: URLSearchParams): GetBlockTransactionsExtRequest {
  const workchain = Number(v2Integer(query, "workchain", ...int32, true));
  const shard = v2Integer(query, "shard", ...int64, true) as string;
  const seqno = Number(v2Integer(query, "seqno", ...int32, true));
  const afterLt = v2Integer(query, "after_lt", ...int64, false);
  const count = v2Integer(query, "count", ...int32, false);
  // The typed count is unsigned: a zero or negative one is refused here with the handler's wording.
  if (count !== undefined && BigInt(count) < 1n) throw v2ValidationError("count should be positive");
  return create(GetBlockTransactionsExtRequestSchema, {
    workchain,
    shard,
    seqno,
    rootHash: lastValue(query, "root_hash"),
    fileHash: lastValue(query, "file_hash"),
    afterLt,
    afterHash: lastValue(query, "after_hash"),
    count: count === undefined ? undefined : Number(count),
  });
}
