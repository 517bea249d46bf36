import type { BlockIdExt, MessageData, RawMessage, RawTransaction } from "../../gen/tonquery/v1/block_transactions_pb.ts";
import { userFriendly } from "../ton/address.ts";
import { readMessageData } from "../ton/message-data.ts";
import { LRUCache } from "lru-cache";
import { rebuildTransactionBoc } from "../ton/transaction-boc.ts";
import { runQuery, type Sql } from "./client.ts";
import { columnValues } from "./rows.ts";
import {
  groupMessages,
  hasExtraCurrencies,
  type MessageRow,
  selectMessageRows,
  selectTransactionRows,
  type TransactionMessages,
  type TransactionRow,
} from "./transactions.ts";

// The transactions of one block in tonlib's raw form (v2 getBlockTransactionsExt): ordered by account id then
// lt, with an exclusive (account, lt) cursor, read from transactions_index_1, so a page costs the block, never
// the chain.

type BlockIdRow = { workchain: number; shard: string; seqno: number; root_hash: string | null; file_hash: string | null };

export async function selectBlockId(sql: Sql, signal: AbortSignal, workchain: number, shard: string, seqno: number): Promise<BlockIdExt | undefined> {
  const [row] = await runQuery(
    signal,
    sql,
    "block_id",
    (tx) => tx<BlockIdRow[]>`
      select workchain, shard, seqno, root_hash, file_hash from blocks
      where workchain = ${workchain} and shard = ${shard} and seqno = ${seqno}`,
  );
  if (row === undefined) return undefined;
  return {
    $typeName: "tonquery.v1.BlockIdExt",
    workchain: row.workchain,
    shard: row.shard,
    seqno: row.seqno,
    rootHash: row.root_hash ?? "",
    fileHash: row.file_hash ?? "",
  };
}

export interface AccountCursor {
  /** Raw account, "<workchain>:<64 upper-case hex>". */
  account: string;
  lt: string;
}

/**
 * Rebuilt BOCs by transaction hash, "" for one that does not reproduce its hash. A transaction never changes under
 * its hash, and rebuilding and hashing it was 38-40% of the server's CPU on pages of 1000 block transactions; blocks
 * are read again and again (explorers, indexers catching up, retries). Bounded by the text's size.
 */
let recentBocs: LRUCache<string, string> | undefined;

function transactionBocs(maxBytes: number): LRUCache<string, string> | undefined {
  if (maxBytes === 0) return undefined;
  if (recentBocs?.maxSize !== maxBytes) recentBocs = new LRUCache({ maxSize: maxBytes, sizeCalculation: (boc, hash) => boc.length + hash.length + 64 });
  return recentBocs;
}

function transactionBoc(bocs: LRUCache<string, string> | undefined, row: TransactionRow, inMsg: MessageRow | undefined, outMsgs: readonly MessageRow[]): string {
  const known = bocs?.get(row.hash);
  if (known !== undefined) return known;
  const boc = rebuildTransactionBoc(row, inMsg, outMsgs) ?? "";
  bocs?.set(row.hash, boc);
  return boc;
}

/**
 * A page of a block's transactions as read: the transaction rows and their messages (without counterparts: tonlib's
 * raw form has no place for them), and where their rebuilt BOCs are kept. What the wire encoders write from
 * (src/encode/), and what rawTransactionOf turns into a RawTransaction for the typed API.
 */
export interface BlockTransactionRows {
  rows: readonly TransactionRow[];
  messagesByTx: ReadonlyMap<string, TransactionMessages>;
  bocs: LRUCache<string, string> | undefined;
}

const noMessages: TransactionMessages = { inMsg: undefined, outMsgs: [] };

/** The in message and out messages of one of the page's transactions. */
export function blockTransactionMessages(page: BlockTransactionRows, row: TransactionRow): TransactionMessages {
  return page.messagesByTx.get(row.hash) ?? noMessages;
}

/** The page's first `count` transactions, with the same messages and BOCs. */
export function firstBlockTransactions(page: BlockTransactionRows, count: number): BlockTransactionRows {
  return page.rows.length <= count ? page : { ...page, rows: page.rows.slice(0, count) };
}

/** The transaction's BOC (tonlib's `data`), rebuilt from its rows once and kept; "" for one that does not reproduce its hash. */
export function blockTransactionBoc(page: BlockTransactionRows, row: TransactionRow, own = blockTransactionMessages(page, row)): string {
  return transactionBoc(page.bocs, row, own.inMsg, own.outMsgs);
}

/**
 * Up to `limit` transactions of the block after the cursor. Accounts of one block share its workchain, so the
 * raw form in the "C" collation sorts like the 256-bit account id, whatever the database's locale.
 */
export async function selectBlockTransactionRows(
  sql: Sql,
  signal: AbortSignal,
  block: Pick<BlockIdExt, "workchain" | "shard" | "seqno">,
  after: AccountCursor | undefined,
  limit: number,
  bocCacheBytes: number,
): Promise<BlockTransactionRows> {
  const rows = await runQuery(
    signal,
    sql,
    "block_transactions",
    (tx) => tx<TransactionRow[]>`
      ${selectTransactionRows(sql)}
      where T.block_workchain = ${block.workchain} and T.block_shard = ${block.shard} and T.block_seqno = ${block.seqno}
      ${after === undefined ? sql`` : sql`and (T.account::text collate "C", T.lt) > (${after.account}::text collate "C", ${after.lt}::bigint)`}
      order by T.account::text collate "C", T.lt
      limit ${limit}`,
  );
  const bocs = transactionBocs(bocCacheBytes);
  if (rows.length === 0) return { rows, messagesByTx: new Map(), bocs };
  const messages = await selectMessageRows(sql, signal, { txHashes: columnValues(rows, "hash") }, { counterparts: false });
  return { rows, messagesByTx: groupMessages(messages), bocs };
}

/** One of the page's transactions as the typed API's RawTransaction. */
export function rawTransactionOf(page: BlockTransactionRows, row: TransactionRow): RawTransaction {
  const own = blockTransactionMessages(page, row);
  return rawTransaction(row, own.inMsg, own.outMsgs, page.bocs);
}

/** tonlib prints every address bounceable, url-safe and without the testnet flag, whatever the network. */
export function tonlibAddress(raw: string | null): string {
  return raw === null ? "" : (userFriendly(raw, { bounceable: true, testnet: false }) ?? "");
}

function accountAddress(raw: string | null) {
  return { $typeName: "tonquery.v1.AccountAddress", accountAddress: tonlibAddress(raw) } as const;
}

function messageData(row: MessageRow): MessageData {
  const data = readMessageData(row.body, row.init_state_body, row.opcode);
  const kind =
    data.kind === "raw"
      ? { case: "raw" as const, value: { $typeName: "tonquery.v1.MessageDataRaw" as const, body: data.body, initState: data.initState } }
      : data.kind === "text"
        ? { case: "text" as const, value: { $typeName: "tonquery.v1.MessageDataText" as const, text: data.text } }
        : { case: "encryptedText" as const, value: { $typeName: "tonquery.v1.MessageDataEncryptedText" as const, text: data.text } };
  return { $typeName: "tonquery.v1.MessageData", kind };
}

/** A message's amounts as tonlib reports them: no value or fees for external messages, no lt for an inbound one. */
export function rawMessageAmounts(row: MessageRow): { value: string; fwdFee: string; createdLt: string } {
  const inbound = row.source === null;
  const external = inbound || row.destination === null;
  return { value: external ? "0" : (row.value ?? "0"), fwdFee: external ? "0" : (row.fwd_fee ?? "0"), createdLt: inbound ? "0" : (row.created_lt ?? "0") };
}

const noExtraCurrencies: readonly { id: number; amount: string }[] = [];

/** A message's extra currencies in the order of the dictionary tonlib walks: currency ids as unsigned 32-bit keys. */
export function rawExtraCurrencies(row: MessageRow): readonly { id: number; amount: string }[] {
  if (!hasExtraCurrencies(row.value_extra_currencies)) return noExtraCurrencies;
  return Object.entries(row.value_extra_currencies)
    .sort(([a], [b]) => (Number(a) >>> 0) - (Number(b) >>> 0))
    .map(([id, amount]) => ({ id: Number(id), amount: String(amount) }));
}

function rawMessage(row: MessageRow): RawMessage {
  // tonlib never reports an IHR fee.
  const { value, fwdFee, createdLt } = rawMessageAmounts(row);
  return {
    $typeName: "tonquery.v1.RawMessage",
    hash: row.msg_hash,
    source: accountAddress(row.source),
    destination: accountAddress(row.destination),
    value,
    extraCurrencies: rawExtraCurrencies(row).map(({ id, amount }) => ({ $typeName: "tonquery.v1.ExtraCurrency", id, amount })),
    fwdFee,
    ihrFee: "0",
    createdLt,
    bodyHash: row.body_hash ?? "",
    msgData: messageData(row),
  };
}

function rawTransaction(
  row: TransactionRow,
  inMsg: MessageRow | undefined,
  outMsgs: readonly MessageRow[],
  bocs: LRUCache<string, string> | undefined,
): RawTransaction {
  const { fee, storageFee, otherFee } = rawTransactionFees(row, outMsgs);
  return {
    $typeName: "tonquery.v1.RawTransaction",
    address: accountAddress(row.account),
    utime: String(row.now ?? 0),
    data: transactionBoc(bocs, row, inMsg, outMsgs),
    transactionId: { $typeName: "tonquery.v1.TransactionId", lt: row.lt, hash: row.hash },
    fee,
    storageFee,
    otherFee,
    inMsg: inMsg === undefined ? undefined : rawMessage(inMsg),
    outMsgs: outMsgs.map(rawMessage),
    account: row.account,
  };
}

/** As tonlib: the fee is the total fees plus what the outbound messages paid for forwarding; decimal strings. */
export function rawTransactionFees(row: TransactionRow, outMsgs: readonly MessageRow[]): { fee: string; storageFee: string; otherFee: string } {
  // Fees are far below 10^13 (10,000 TON): summed as numbers (exact below 2^53, which 257 such terms stay under), they
  // cost a fraction of BigInt's; a page of 1000 transactions sums thousands of them.
  if (isSmall(row.total_fees) && isSmall(row.storage_fees_collected) && outMsgs.length < 256 && outMsgs.every((m) => isSmall(m.fwd_fee) && isSmall(m.ihr_fee))) {
    let fee = Number(row.total_fees ?? "0");
    for (const m of outMsgs) fee += Number(m.fwd_fee ?? "0") + Number(m.ihr_fee ?? "0");
    const storageFee = Number(row.storage_fees_collected ?? "0");
    return { fee: String(fee), storageFee: String(storageFee), otherFee: String(fee - storageFee) };
  }
  const fee = outMsgs.reduce((sum, m) => sum + BigInt(m.fwd_fee ?? "0") + BigInt(m.ihr_fee ?? "0"), BigInt(row.total_fees ?? "0"));
  const storageFee = BigInt(row.storage_fees_collected ?? "0");
  return { fee: fee.toString(), storageFee: storageFee.toString(), otherFee: (fee - storageFee).toString() };
}

/** A non-negative decimal below 10^13, or none. */
function isSmall(amount: string | null): boolean {
  return amount === null || (amount.length <= 13 && amount[0] !== "-");
}
