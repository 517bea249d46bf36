import type { Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { runQuery, type Sql } from "./client.ts";
import { completeTransactions, selectTransactionRows, type TransactionRow } from "./transactions.ts";

// Trace selection as toncenter does it, with semi-joins so PostgreSQL can drive the query either from the
// page order (traces_index_3/4) or from the filter's own index (account, tx hash, msg hash), whichever the
// statistics say is cheaper, and never materialises an account's whole history.

export type TraceRow = {
  trace_id: string;
  external_hash: string | null;
  mc_seqno_start: number | null;
  mc_seqno_end: number | null;
  start_lt: string | null;
  start_utime: number | null;
  end_lt: string | null;
  end_utime: number | null;
  state: string | null;
  edges_: string | null;
  nodes_: string | null;
  pending_edges_: string | null;
  classification_state: string | null;
};

/** Filters in the index's own forms (raw addresses, base64 hashes); at most one of the four selectors. */
export interface TraceFilter {
  account?: string;
  traceIds?: readonly string[];
  txHashes?: readonly string[];
  msgHashes?: readonly string[];
  mcSeqno?: number;
  startUtime?: number;
  endUtime?: number;
  startLt?: string;
  endLt?: string;
}

export interface TracePage {
  limit: number;
  offset: number;
  ascending: boolean;
}

export async function masterchainBlockExists(sql: Sql, signal: AbortSignal, seqno: number): Promise<boolean> {
  const rows = await runQuery(
    signal,
    sql,
    (tx) => tx`select 1 from blocks where workchain = -1 and shard = -9223372036854775808 and seqno = ${seqno}`,
  );
  return rows.length > 0;
}

/** The page of traces; its best plan depends on the filter's values, so run it on `Database.sqlCustomPlan`. */
export async function selectTraceRows(sql: Sql, signal: AbortSignal, filter: TraceFilter, page: TracePage): Promise<TraceRow[]> {
  const hashes = (list: readonly string[]) => sql`${list as string[]}::text[]::tonhash[]`;
  const conditions = [];
  if (filter.account !== undefined) {
    conditions.push(sql`E.trace_id in (select T.trace_id from transactions T where T.account = ${filter.account})`);
  }
  if (filter.traceIds !== undefined && filter.traceIds.length > 0) conditions.push(sql`E.trace_id = any(${hashes(filter.traceIds)})`);
  if (filter.txHashes !== undefined && filter.txHashes.length > 0) {
    conditions.push(sql`E.trace_id in (select T.trace_id from transactions T where T.hash = any(${hashes(filter.txHashes)}))`);
  }
  if (filter.msgHashes !== undefined && filter.msgHashes.length > 0) {
    // A message is found by its hash or by the TEP-467 normalised hash of an external message.
    conditions.push(sql`E.trace_id in (
      select M.trace_id from messages M where M.msg_hash = any(${hashes(filter.msgHashes)})
      union all
      select M.trace_id from messages M where M.msg_hash_norm = any(${hashes(filter.msgHashes)}))`);
  }
  if (filter.mcSeqno !== undefined) conditions.push(sql`E.state = 'complete' and E.mc_seqno_end = ${filter.mcSeqno}`);
  if (filter.startUtime !== undefined) conditions.push(sql`E.end_utime >= ${filter.startUtime}`);
  if (filter.endUtime !== undefined) conditions.push(sql`E.end_utime <= ${filter.endUtime}`);
  if (filter.startLt !== undefined) conditions.push(sql`E.end_lt >= ${filter.startLt}`);
  if (filter.endLt !== undefined) conditions.push(sql`E.end_lt <= ${filter.endLt}`);

  const where = conditions.length === 0 ? sql`` : sql`where ${conditions.reduce((all, c) => sql`${all} and ${c}`)}`;
  const direction = page.ascending ? sql`asc` : sql`desc`;
  // Time bounds order by time, as toncenter does, so a time window pages in time order.
  const byTime = filter.startUtime !== undefined || filter.endUtime !== undefined;
  const order = byTime ? sql`E.end_utime ${direction}, E.trace_id ${direction}` : sql`E.end_lt ${direction}, E.trace_id ${direction}`;

  return runQuery(
    signal,
    sql,
    (tx) => tx<TraceRow[]>`
      select E.trace_id, E.external_hash, E.mc_seqno_start, E.mc_seqno_end, E.start_lt, E.start_utime, E.end_lt,
        E.end_utime, E.state, E.edges_, E.nodes_, E.pending_edges_, E.classification_state
      from traces E
      ${where}
      order by ${order}
      limit ${page.limit} offset ${page.offset}`,
  );
}

/** Every transaction of the given traces, in trace order (lt, then account), as toncenter lists them. */
export async function selectTraceTransactions(sql: Sql, signal: AbortSignal, traceIds: readonly string[]): Promise<Transaction[]> {
  if (traceIds.length === 0) return [];
  const rows = await runQuery(
    signal,
    sql,
    (tx) => tx<TransactionRow[]>`
      ${selectTransactionRows(sql)}
      where T.trace_id = any(${traceIds as string[]}::text[]::tonhash[])
      order by T.trace_id, T.lt, T.account`,
  );
  return completeTransactions(sql, signal, rows);
}
