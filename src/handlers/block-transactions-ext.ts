import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  type GetBlockTransactionsExtRequest,
  type GetBlockTransactionsExtResponse,
  GetBlockTransactionsExtResponseSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import type { BlockIdExt } from "../../gen/tonquery/v1/block_transactions_pb.ts";
import {
  type AccountCursor,
  type BlockTransactionRows,
  firstBlockTransactions,
  rawTransactionOf,
  selectBlockId,
  selectBlockTransactionRows,
} from "../db/block-transactions.ts";
import type { ServiceDeps } from "../service/deps.ts";
import { parseAddress } from "../ton/address.ts";
import { parseHash } from "../ton/hash.ts";

export const defaultCount = 40;
export const maxCount = 10_000;

// Error texts are toncenter v2's (ton-http-api), so clients matching on them keep working.

export function v2ParseError(name: string): ConnectError {
  return new ConnectError(`failed to parse get request: failed to parse ${name}`, Code.InvalidArgument);
}

export function v2ValidationError(message: string): ConnectError {
  return new ConnectError(`failed to validate request: ${message}`, Code.InvalidArgument);
}

/**
 * A page of getBlockTransactionsExt as the data layer read it: the block's id, what the answer says of the page,
 * and the page's rows. Each wire format writes from this: REST JSON (src/encode/v2-json/) and binary protobuf
 * (src/encode/proto/) directly, the typed API's message through blockTransactionsExtResponse.
 */
export interface LoadedBlockTransactions {
  block: BlockIdExt;
  reqCount: number;
  incomplete: boolean;
  page: BlockTransactionRows;
}

export async function getBlockTransactionsExt(
  deps: ServiceDeps,
  request: GetBlockTransactionsExtRequest,
  context: HandlerContext,
): Promise<GetBlockTransactionsExtResponse> {
  return blockTransactionsExtResponse(await loadBlockTransactionsExt(deps, request, context));
}

/** The loaded page as the typed API's message. */
export function blockTransactionsExtResponse(loaded: LoadedBlockTransactions): GetBlockTransactionsExtResponse {
  return create(GetBlockTransactionsExtResponseSchema, {
    id: loaded.block,
    reqCount: loaded.reqCount,
    incomplete: loaded.incomplete,
    transactions: loaded.page.rows.map((row) => rawTransactionOf(loaded.page, row)),
  });
}

export async function loadBlockTransactionsExt(
  deps: ServiceDeps,
  request: GetBlockTransactionsExtRequest,
  context: HandlerContext,
): Promise<LoadedBlockTransactions> {
  const count = request.count ?? defaultCount;
  if (count < 1) throw v2ValidationError("count should be positive");
  if (count > maxCount) throw v2ValidationError(`count should be less or equal ${maxCount}`);
  if (request.seqno <= 0) throw v2ValidationError("seqno should be positive");
  if (request.afterLt !== undefined && BigInt(request.afterLt) < 0n) throw v2ValidationError("after_lt should be non-negative");
  if ((request.afterLt === undefined) !== (request.afterHash === undefined)) {
    throw v2ValidationError("after_lt and after_hash should be used together");
  }
  const rootHash = optionalHash(request.rootHash, "root_hash");
  const fileHash = optionalHash(request.fileHash, "file_hash");
  const after: AccountCursor | undefined =
    request.afterLt === undefined || request.afterHash === undefined
      ? undefined
      : { account: `${request.workchain}:${accountId(request.afterHash)}`, lt: request.afterLt };

  // A block's transactions are written with the block, in one transaction of the index worker: the page can be
  // read beside the block's id instead of after it, and is empty exactly when the block is missing.
  const { sql } = deps.db;
  const [block, page] = await Promise.all([
    selectBlockId(sql, context.signal, request.workchain, request.shard, request.seqno),
    // One more than asked tells whether the block has more.
    selectBlockTransactionRows(sql, context.signal, request, after, count + 1, deps.config.transactionBocCacheMb * 1024 * 1024),
  ]);
  const wanted = `(${request.workchain},${request.shard},${request.seqno})`;
  if (block === undefined) throw new ConnectError(`block not found: ${wanted}`, Code.NotFound);
  if ((rootHash !== undefined && rootHash !== block.rootHash) || (fileHash !== undefined && fileHash !== block.fileHash)) {
    throw new ConnectError(`block not found: ${wanted} has other root_hash/file_hash`, Code.NotFound);
  }
  return { block, reqCount: count, incomplete: page.rows.length > count, page: firstBlockTransactions(page, count) };
}

function optionalHash(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const hash = parseHash(value);
  if (hash === undefined) throw v2ParseError(name);
  return hash;
}

/** after_hash is an account id: a whole address in any form, or its 32 bytes as a hash. Upper-case hex. */
function accountId(value: string): string {
  const address = parseAddress(value);
  if (address !== undefined) return address.slice(address.indexOf(":") + 1);
  const hash = parseHash(value);
  if (hash === undefined) throw v2ParseError("after_hash");
  return Buffer.from(hash, "base64").toString("hex").toUpperCase();
}
