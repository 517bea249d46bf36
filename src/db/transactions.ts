import { create } from "@bufbuild/protobuf";
import type { AccountState, DecodedContent, ExtraCurrencies, Message, MessageBody, Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { TransactionSchema } from "../../gen/tonquery/v1/transaction_pb.ts";
import type { BodyDecoding } from "../decoding/page-bodies.ts";
import { mapInTurns } from "../runtime/event-loop.ts";
import { runQuery, type Sql } from "./client.ts";
import type { ExtraCurrenciesJson, MessagesTableRow, TransactionsTableRow } from "./tables.ts";
import { columnValues, optional } from "./rows.ts";

// Transactions with everything toncenter nests in them (states, messages, bodies), loaded for a whole page
// in a fixed number of statements: the transaction rows with their account states, and their messages beside them.

/** A `transactions` row (select T.*) plus the external hash of its trace. */
export type TransactionRow = TransactionsTableRow & { trace_external_hash: string | null };

/** The columns of an account state, as read with a transaction (see selectTransactionRowsWithStates), for one side. */
type StateColumns<Side extends string> = {
  [Column in keyof Omit<AccountStateRow, "hash"> as `${Side}_state_${Column}`]: AccountStateRow[Column];
} & { [Kept in `${Side}_state_kept`]: boolean };

/** A transaction row with its account states before and after (see selectTransactionRowsWithStates). */
export type TransactionRowWithStates = TransactionRow & StateColumns<"before"> & StateColumns<"after">;

export type AccountStateRow = {
  hash: string;
  balance: string | null;
  balance_extra_currencies: ExtraCurrenciesJson;
  account_status: string | null;
  frozen_hash: string | null;
  data_hash: string | null;
  code_hash: string | null;
};

/** A `messages` row as selected below: the columns the API shows, the bodies, and the other side's transaction. */
export type MessageRow = Omit<MessagesTableRow, "tx_lt" | "mc_seqno" | "trace_id"> & {
  body: string | null;
  init_state_body: string | null;
  /** The transaction on the other side of the message: its receiver for 'out', its sender for 'in'. */
  counterpart_tx_hash: string | null;
};

export type Direction = "in" | "out";

/** The head of every transaction selection: the row and its trace's external hash. */
export function selectTransactionRows(sql: Sql) {
  return sql`
    select T.*, E.external_hash as trace_external_hash
    from transactions T
    left join traces E on E.trace_id = T.trace_id`;
}

/**
 * The head of a selection of transactions as the v3 API shows them: the row, its trace's external hash and its
 * account states before and after, joined (primary-key lookups) rather than read by a statement of their own, which
 * cost a request the statement and PostgreSQL a second scan of the same transactions to find the states' hashes.
 * A state the index did not keep (the worker skips nonexist states) comes with `_kept` false.
 */
export function selectTransactionRowsWithStates(sql: Sql) {
  return sql`
    select T.*, E.external_hash as trace_external_hash,
      SB.hash is not null as before_state_kept, SB.balance as before_state_balance,
      SB.balance_extra_currencies as before_state_balance_extra_currencies, SB.account_status as before_state_account_status,
      SB.frozen_hash as before_state_frozen_hash, SB.data_hash as before_state_data_hash, SB.code_hash as before_state_code_hash,
      SA.hash is not null as after_state_kept, SA.balance as after_state_balance,
      SA.balance_extra_currencies as after_state_balance_extra_currencies, SA.account_status as after_state_account_status,
      SA.frozen_hash as after_state_frozen_hash, SA.data_hash as after_state_data_hash, SA.code_hash as after_state_code_hash
    from transactions T
    left join traces E on E.trace_id = T.trace_id
    left join account_states SB on SB.hash = T.account_state_hash_before
    left join account_states SA on SA.hash = T.account_state_hash_after`;
}

/** Transactions by hash (index transactions_index_6), ordered by lt. */
export async function selectTransactionsByHash(
  sql: Sql,
  signal: AbortSignal,
  hashes: readonly string[],
  bodies: BodyDecoding,
): Promise<Transaction[]> {
  if (hashes.length === 0) return [];
  const rows = await runQuery(
    signal,
    sql,
    "transactions_by_hash",
    (tx) => tx<TransactionRowWithStates[]>`${selectTransactionRowsWithStates(sql)} where T.hash = any(${hashes}::text[]::tonhash[]) order by T.lt, T.hash`,
  );
  return completeTransactions(sql, signal, rows, bodies);
}

/**
 * The parents (direction "in") and/or children ("out") of a transaction, ordered by lt: the transactions on
 * the other side of its messages. Both probes are primary-key or msg_hash index lookups.
 */
export async function selectAdjacentTransactionRows(
  sql: Sql,
  signal: AbortSignal,
  hash: string,
  direction: Direction | undefined,
): Promise<TransactionRowSet> {
  const rows = await runQuery(
    signal,
    sql,
    "adjacent_transactions",
    (tx) => tx<TransactionRowWithStates[]>`
      ${selectTransactionRowsWithStates(sql)}
      where (T.hash, T.lt) in (
        select M2.tx_hash, M2.tx_lt
        from messages M1
        join messages M2 on M2.msg_hash = M1.msg_hash and M2.direction <> M1.direction
        where M1.tx_hash = ${hash} ${direction === undefined ? sql`` : sql`and M1.direction = ${direction}`})
      order by T.lt, T.hash`,
  );
  return completeTransactionRows(sql, signal, rows);
}

/**
 * Whose messages to read: transactions named by hash, or every transaction of some traces. By trace, the statement
 * need not wait for the transaction rows and runs beside them: one round fewer.
 */
export type TransactionOwners = { txHashes: readonly string[] } | { traceIds: readonly string[] };

/** The condition naming the owners' messages (M). */
function ownedBy(sql: Sql, owners: TransactionOwners) {
  return "txHashes" in owners
    ? sql`M.tx_hash = any(${owners.txHashes as string[]}::text[]::tonhash[])`
    : sql`M.trace_id = any(${owners.traceIds as string[]}::text[]::tonhash[])`;
}

/** Turns transaction rows into full Transactions: one more statement, whatever the number of rows. */
async function completeTransactions(
  sql: Sql,
  signal: AbortSignal,
  rows: readonly TransactionRowWithStates[],
  bodies: BodyDecoding,
): Promise<Transaction[]> {
  if (rows.length === 0) return [];
  return scanTransactionRows(await completeTransactionRows(sql, signal, rows), bodies);
}

/** Transaction rows (with their states) and their messages: one more statement, whatever the number of rows. */
async function completeTransactionRows(sql: Sql, signal: AbortSignal, rows: readonly TransactionRowWithStates[]): Promise<TransactionRowSet> {
  if (rows.length === 0) return transactionRowSet(rows, []);
  const owners = { txHashes: [...new Set(columnValues(rows, "hash"))] };
  return transactionRowSet(rows, await selectMessageRows(sql, signal, owners));
}

/**
 * Transaction rows with the rows nested in them (account states, messages), as read: what the wire encoders write
 * from (src/encode/), and what scanTransactionRow turns into a Transaction for the typed API.
 */
export interface TransactionRowSet {
  rows: readonly TransactionRow[];
  stateByHash: ReadonlyMap<string, AccountStateRow>;
  messagesByTx: ReadonlyMap<string, TransactionMessages>;
}

export function transactionRowSet(rows: readonly TransactionRowWithStates[], messages: readonly MessageRow[]): TransactionRowSet {
  return { rows, stateByHash: statesOf(rows), messagesByTx: groupMessages(messages) };
}

/** The account states the rows were read with, by hash: a state the index did not keep is absent. */
function statesOf(rows: readonly TransactionRowWithStates[]): Map<string, AccountStateRow> {
  const states = new Map<string, AccountStateRow>();
  for (const row of rows) {
    if (row.before_state_kept) {
      keepState(states, row.account_state_hash_before, row.before_state_balance, row.before_state_balance_extra_currencies,
        row.before_state_account_status, row.before_state_frozen_hash, row.before_state_data_hash, row.before_state_code_hash);
    }
    if (row.after_state_kept) {
      keepState(states, row.account_state_hash_after, row.after_state_balance, row.after_state_balance_extra_currencies,
        row.after_state_account_status, row.after_state_frozen_hash, row.after_state_data_hash, row.after_state_code_hash);
    }
  }
  return states;
}

function keepState(
  states: Map<string, AccountStateRow>,
  hash: string | null,
  balance: AccountStateRow["balance"],
  extraCurrencies: ExtraCurrenciesJson,
  status: AccountStateRow["account_status"],
  frozenHash: string | null,
  dataHash: string | null,
  codeHash: string | null,
): void {
  if (hash === null || states.has(hash)) return;
  const state = { hash, balance, balance_extra_currencies: extraCurrencies, account_status: status, frozen_hash: frozenHash, data_hash: dataHash, code_hash: codeHash };
  states.set(hash, state);
}

const noMessages: TransactionMessages = { inMsg: undefined, outMsgs: [] };

/** The in message and out messages of one of the set's transactions. */
export function messagesOf(set: TransactionRowSet, row: TransactionRow): TransactionMessages {
  return set.messagesByTx.get(row.hash) ?? noMessages;
}

/** One of the set's transactions as the typed API's Transaction. */
export function scanTransactionRow(set: TransactionRowSet, row: TransactionRow, bodies: BodyDecoding): Transaction {
  const own = messagesOf(set, row);
  return scanTransaction(row, {
    before: accountState(row.account_state_hash_before, set.stateByHash),
    after: accountState(row.account_state_hash_after, set.stateByHash),
    inMsg: own.inMsg === undefined ? undefined : scanMessage(own.inMsg, bodies),
    outMsgs: own.outMsgs.map((message) => scanMessage(message, bodies)),
  });
}

/** Every transaction of the set as Transactions, in the rows' order. */
export function scanTransactionRows(set: TransactionRowSet, bodies: BodyDecoding): Promise<Transaction[]> {
  return mapInTurns(set.rows, (row) => scanTransactionRow(set, row, bodies));
}

/** The addresses a page's address book must cover for these transactions (all the set's by default): accounts, senders, receivers. */
export function transactionRowAddresses(set: TransactionRowSet, rows: readonly TransactionRow[] = set.rows): string[] {
  const addresses: string[] = [];
  for (const row of rows) {
    addresses.push(row.account);
    const own = messagesOf(set, row);
    if (own.inMsg?.source != null) addresses.push(own.inMsg.source);
    for (const out of own.outMsgs) if (out.destination !== null) addresses.push(out.destination);
  }
  return addresses;
}

/**
 * The messages of the given transactions with their bodies, out messages in created_lt order, each with the
 * transaction on its other side unless `counterparts` is false (tonlib's raw form has no place for it).
 * Transactions named by hash have their counterparts elsewhere (other blocks, the other side of an adjacency), so
 * the statement finds them itself. A trace holds both sides of nearly all its internal messages: those are paired
 * on the rows read, and only the messages left over (a pending trace's messages still in flight) are looked up, in
 * one more statement.
 */
export async function selectMessageRows(
  sql: Sql,
  signal: AbortSignal,
  owners: TransactionOwners,
  { counterparts = true }: { counterparts?: boolean } = {},
): Promise<readonly MessageRow[]> {
  const byTrace = "traceIds" in owners;
  const counterpart =
    byTrace || !counterparts
      ? sql`null::tonhash as counterpart_tx_hash`
      : sql`(select C.tx_hash from messages C where C.msg_hash = M.msg_hash and C.direction <> M.direction limit 1) as counterpart_tx_hash`;
  const rows = await runQuery(
    signal,
    sql,
    "messages",
    (tx) => tx<MessageRow[]>`
      select M.tx_hash, M.msg_hash, M.msg_hash_norm, M.direction, M.source, M.destination, M.value,
        M.value_extra_currencies, M.fwd_fee, M.ihr_fee, M.extra_flags::text as extra_flags, M.created_lt, M.created_at,
        M.opcode, M.ihr_disabled, M.bounce, M.bounced, M.import_fee, M.body_hash, B.body, M.init_state_hash,
        I.body as init_state_body, ${counterpart}
      from messages M
      left join message_contents B on B.hash = M.body_hash
      left join message_contents I on I.hash = M.init_state_hash
      where ${ownedBy(sql, owners)}
      order by M.tx_hash, M.created_lt nulls first, M.msg_hash`,
  );
  if (byTrace && counterparts) await pairCounterparts(sql, signal, rows);
  return rows;
}

type CounterpartRow = { msg_hash: string; direction: Direction; tx_hash: string };

/**
 * The transaction on each side of a message, by message hash: one map per direction rather than one keyed by
 * direction and hash, so that no key string is built per row (a trace page pairs a few thousand messages).
 */
class MessageSides {
  readonly #in = new Map<string, string>();
  readonly #out = new Map<string, string>();

  /** Keeps the first transaction seen on a side. */
  add(msgHash: string, direction: Direction, txHash: string): void {
    const side = direction === "in" ? this.#in : this.#out;
    if (!side.has(msgHash)) side.set(msgHash, txHash);
  }

  /** The transaction on the side opposite to `direction`, where known. */
  opposite(msgHash: string, direction: Direction): string | null {
    return (direction === "in" ? this.#out : this.#in).get(msgHash) ?? null;
  }
}

/**
 * Sets `counterpart_tx_hash` on each row: from the rows themselves where the other side is among them, else from
 * the index. External messages have no other side (an external in message has no source, an external out
 * message no destination), so they are never looked up.
 */
async function pairCounterparts(sql: Sql, signal: AbortSignal, rows: MessageRow[]): Promise<void> {
  const sides = new MessageSides();
  for (const row of rows) sides.add(row.msg_hash, row.direction, row.tx_hash);
  const unpaired = new Set<string>();
  for (const row of rows) {
    row.counterpart_tx_hash = sides.opposite(row.msg_hash, row.direction);
    const external = row.direction === "in" ? row.source === null : row.destination === null;
    if (row.counterpart_tx_hash === null && !external) unpaired.add(row.msg_hash);
  }
  if (unpaired.size === 0) return;
  const found = await runQuery(
    signal,
    sql,
    "message_counterparts",
    (tx) => tx<CounterpartRow[]>`
      select C.msg_hash, C.direction, C.tx_hash from messages C
      where C.msg_hash = any(${[...unpaired]}::text[]::tonhash[])`,
  );
  for (const other of found) sides.add(other.msg_hash, other.direction, other.tx_hash);
  for (const row of rows) row.counterpart_tx_hash ??= sides.opposite(row.msg_hash, row.direction);
}

export interface TransactionMessages {
  inMsg: MessageRow | undefined;
  outMsgs: MessageRow[];
}

export function groupMessages(rows: readonly MessageRow[]): Map<string, TransactionMessages> {
  const byTx = new Map<string, TransactionMessages>();
  for (const row of rows) {
    let own = byTx.get(row.tx_hash);
    if (own === undefined) byTx.set(row.tx_hash, (own = { inMsg: undefined, outMsgs: [] }));
    if (row.direction === "in") own.inMsg = row;
    else own.outMsgs.push(row);
  }
  return byTx;
}

/** Whether the column names a currency: nearly every value is {}, read here without building anything. */
export function hasExtraCurrencies(json: ExtraCurrenciesJson): json is Record<string, string | number> {
  if (json === null) return false;
  for (const _ in json) return true;
  return false;
}

export function extraCurrencies(json: ExtraCurrenciesJson): ExtraCurrencies | undefined {
  if (json === null) return undefined;
  const amounts: Record<number, string> = {};
  for (const [id, amount] of Object.entries(json)) amounts[Number(id)] = String(amount);
  return { $typeName: "tonquery.v1.ExtraCurrencies", amounts };
}

/** A state the index did not keep (the worker skips nonexist states) still carries its hash. */
function accountState(hash: string | null, states: ReadonlyMap<string, AccountStateRow>): AccountState | undefined {
  if (hash === null) return undefined;
  const row = states.get(hash);
  return {
    $typeName: "tonquery.v1.AccountState",
    hash,
    balance: optional(row?.balance),
    extraCurrencies: row ? extraCurrencies(row.balance_extra_currencies) : undefined,
    accountStatus: optional(row?.account_status),
    frozenHash: optional(row?.frozen_hash),
    dataHash: optional(row?.data_hash),
    codeHash: optional(row?.code_hash),
  };
}

function messageBody(hash: string | null, body: string | null, decoded: DecodedContent | undefined): MessageBody | undefined {
  if (hash === null) return undefined;
  return { $typeName: "tonquery.v1.MessageBody", hash, body: optional(body), decoded };
}

function scanMessage(row: MessageRow, bodies: BodyDecoding): Message {
  const opcode = messageOpcode(row);
  return {
    $typeName: "tonquery.v1.Message",
    hash: row.msg_hash,
    source: optional(row.source),
    destination: optional(row.destination),
    value: optional(row.value),
    valueExtraCurrencies: extraCurrencies(row.value_extra_currencies),
    fwdFee: optional(row.fwd_fee),
    ihrFee: optional(row.ihr_fee),
    extraFlags: optional(row.extra_flags),
    createdLt: optional(row.created_lt),
    createdAt: optional(row.created_at),
    opcode,
    decodedOpcode: opcode === undefined ? undefined : bodies.opcodeName(opcode),
    ihrDisabled: optional(row.ihr_disabled),
    bounce: optional(row.bounce),
    bounced: optional(row.bounced),
    importFee: optional(row.import_fee),
    // Toncenter decodes message bodies, never state inits.
    messageContent: messageBody(row.body_hash, row.body, bodies.decode(row.body_hash, row.body)),
    initState: messageBody(row.init_state_hash, row.init_state_body, undefined),
    hashNorm: optional(row.msg_hash_norm),
    inMsgTxHash: inMsgTxHash(row),
    outMsgTxHash: outMsgTxHash(row),
  };
}

/** The transaction that sent the message: this row's for an out message, its counterpart (where known) for an in one. */
export function inMsgTxHash(row: MessageRow): string | undefined {
  return row.direction === "out" ? optional(row.counterpart_tx_hash) : row.tx_hash;
}

/** The transaction that received the message: this row's for an in message, its counterpart (where known) for an out one. */
export function outMsgTxHash(row: MessageRow): string | undefined {
  return row.direction === "in" ? optional(row.counterpart_tx_hash) : row.tx_hash;
}

interface Nested {
  before: AccountState | undefined;
  after: AccountState | undefined;
  inMsg: Message | undefined;
  outMsgs: Message[];
}

function messageSize(cells: string | null, bits: string | null) {
  return hasMessageSize(cells, bits) ? { cells: cells as string, bits: bits as string } : undefined;
}

/** Whether a phase's message size is known: both its cells and its bits. */
export function hasMessageSize(cells: string | null, bits: string | null): boolean {
  return cells !== null && bits !== null;
}

/** Whether the transaction has a credit phase: any of its columns set. */
export function hasCreditPhase(row: TransactionRow): boolean {
  return row.credit_due_fees_collected !== null || row.credit !== null || row.credit_extra_currencies !== null;
}

/** Whether the transaction's block is known: workchain, shard and seqno. */
export function hasBlockRef(row: TransactionRow): boolean {
  return row.block_workchain !== null && row.block_shard !== null && row.block_seqno !== null;
}

/**
 * Gas fees and gas used as toncenter prints them. Old worker versions wrote them the wrong way round, and toncenter
 * swaps them back when fees < used. Paid gas always costs more than one unit per unit, so that holds; but system
 * transactions use gas for free, and swapping their zero fees would corrupt them (older toncenter left them alone).
 */
export function computeGas(row: TransactionRow): { gasFees: string | null; gasUsed: string | null } {
  const fees = row.compute_gas_fees;
  const used = row.compute_gas_used;
  if (fees !== null && used !== null && fees !== "0" && decimalLess(fees, used)) return { gasFees: used, gasUsed: fees };
  return { gasFees: fees, gasUsed: used };
}

/**
 * a < b for PostgreSQL's text of two bigints, without BigInt (two parses per transaction): unsigned numbers without
 * leading zeros, as PostgreSQL prints them, compare by length and then as text; anything else goes through BigInt.
 */
function decimalLess(a: string, b: string): boolean {
  if (a.charCodeAt(0) === 45 || b.charCodeAt(0) === 45) return BigInt(a) < BigInt(b);
  return a.length !== b.length ? a.length < b.length : a < b;
}

/** The index stores the first 32 bits of a body as a signed int; the API shows them unsigned. */
export function messageOpcode(row: MessageRow): number | undefined {
  return row.opcode === null ? undefined : row.opcode >>> 0;
}

function scanTransaction(row: TransactionRow, nested: Nested): Transaction {
  const { gasFees, gasUsed } = computeGas(row);
  return create(TransactionSchema, {
    account: row.account,
    hash: row.hash,
    lt: row.lt,
    now: optional(row.now),
    mcBlockSeqno: optional(row.mc_block_seqno),
    traceId: optional(row.trace_id),
    prevTransHash: optional(row.prev_trans_hash),
    prevTransLt: optional(row.prev_trans_lt),
    origStatus: optional(row.orig_status),
    endStatus: optional(row.end_status),
    totalFees: optional(row.total_fees),
    totalFeesExtraCurrencies: extraCurrencies(row.total_fees_extra_currencies),
    description: {
      type: row.descr ?? "",
      aborted: optional(row.aborted),
      destroyed: optional(row.destroyed),
      creditFirst: optional(row.credit_first),
      isTock: optional(row.is_tock),
      installed: optional(row.installed),
      storagePh:
        row.storage_status_change === null
          ? undefined
          : {
              storageFeesCollected: optional(row.storage_fees_collected),
              storageFeesDue: optional(row.storage_fees_due),
              statusChange: row.storage_status_change,
            },
      creditPh:
        !hasCreditPhase(row)
          ? undefined
          : {
              dueFeesCollected: optional(row.credit_due_fees_collected),
              credit: optional(row.credit),
              creditExtraCurrencies: extraCurrencies(row.credit_extra_currencies),
            },
      computePh:
        row.compute_skipped === null
          ? undefined
          : {
              skipped: row.compute_skipped,
              reason: optional(row.skipped_reason),
              success: optional(row.compute_success),
              msgStateUsed: optional(row.compute_msg_state_used),
              accountActivated: optional(row.compute_account_activated),
              gasFees: optional(gasFees),
              gasUsed: optional(gasUsed),
              gasLimit: optional(row.compute_gas_limit),
              gasCredit: optional(row.compute_gas_credit),
              mode: optional(row.compute_mode),
              exitCode: optional(row.compute_exit_code),
              exitArg: optional(row.compute_exit_arg),
              vmSteps: optional(row.compute_vm_steps),
              vmInitStateHash: optional(row.compute_vm_init_state_hash),
              vmFinalStateHash: optional(row.compute_vm_final_state_hash),
            },
      action:
        row.action_success === null
          ? undefined
          : {
              success: row.action_success,
              valid: optional(row.action_valid),
              noFunds: optional(row.action_no_funds),
              statusChange: optional(row.action_status_change),
              totalFwdFees: optional(row.action_total_fwd_fees),
              totalActionFees: optional(row.action_total_action_fees),
              resultCode: optional(row.action_result_code),
              resultArg: optional(row.action_result_arg),
              totActions: optional(row.action_tot_actions),
              specActions: optional(row.action_spec_actions),
              skippedActions: optional(row.action_skipped_actions),
              msgsCreated: optional(row.action_msgs_created),
              actionListHash: optional(row.action_action_list_hash),
              totMsgSize: messageSize(row.action_tot_msg_size_cells, row.action_tot_msg_size_bits),
            },
      bounce:
        row.bounce === null
          ? undefined
          : {
              type: row.bounce,
              msgSize: messageSize(row.bounce_msg_size_cells, row.bounce_msg_size_bits),
              reqFwdFees: optional(row.bounce_req_fwd_fees),
              msgFees: optional(row.bounce_msg_fees),
              fwdFees: optional(row.bounce_fwd_fees),
            },
      splitInfo:
        row.split_info_cur_shard_pfx_len === null
          ? undefined
          : {
              curShardPfxLen: row.split_info_cur_shard_pfx_len,
              accSplitDepth: optional(row.split_info_acc_split_depth),
              thisAddr: optional(row.split_info_this_addr),
              siblingAddr: optional(row.split_info_sibling_addr),
            },
    },
    blockRef: hasBlockRef(row) ? { workchain: row.block_workchain as number, shard: row.block_shard as string, seqno: row.block_seqno as number } : undefined,
    inMsg: nested.inMsg,
    outMsgs: nested.outMsgs,
    accountStateBefore: nested.before,
    accountStateAfter: nested.after,
    emulated: false,
    finality: "finalized",
    traceExternalHash: optional(row.trace_external_hash),
  });
}
