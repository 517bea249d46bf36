import { runQuery, type Sql } from "./client.ts";
import {
  selectMessageRows,
  selectTransactionRowsWithStates,
  type TransactionRowWithStates,
  type TransactionRowSet,
  transactionRowSet,
} from "./transactions.ts";

// Trace selection as toncenter does it. By account: a semi-join, so PostgreSQL can drive the query either from the
// page order (traces_index_3/4) or from the account's transactions, whichever the statistics say is cheaper, and
// never materialises an account's whole history. By trace ids, transaction or message hashes: the traces the
// hashes name are found first (a materialised CTE, at most MAX_LIST_VALUES lookups, plus the traces of matching
// normalised hashes), then read by primary key and sorted; never a walk of the traces in page order, which the
// planner chose when it expected a list to match many traces and which read every trace when it matched none.

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
  /** Keyset paging: the page starts after this trace of the page order. */
  after?: TracePosition;
}

/** A trace's place in the page order: its sort key (end_lt, or end_utime, see ordersByTime; null sorts as in PostgreSQL) and id. */
export interface TracePosition {
  key: string | null;
  traceId: string;
}

/** Time bounds order the page by end_utime, as toncenter does, so that a time window pages in time order; else end_lt. */
export function ordersByTime(filter: TraceFilter): boolean {
  return filter.startUtime !== undefined || filter.endUtime !== undefined;
}

/** Where a trace row stands in the page order of `filter`. */
export function tracePosition(filter: TraceFilter, row: TraceRow): TracePosition {
  const key = ordersByTime(filter) ? row.end_utime : row.end_lt;
  return { key: key === null ? null : String(key), traceId: row.trace_id };
}

export async function masterchainBlockExists(sql: Sql, signal: AbortSignal, seqno: number): Promise<boolean> {
  const rows = await runQuery(
    signal,
    sql,
    "masterchain_block_exists",
    (tx) => tx`select 1 from blocks where workchain = -1 and shard = -9223372036854775808 and seqno = ${seqno}`,
  );
  return rows.length > 0;
}

/** The page of traces; its best plan depends on the filter's values, so run it on `Database.sqlCustomPlan`. */
export async function selectTraceRows(sql: Sql, signal: AbortSignal, filter: TraceFilter, page: TracePage): Promise<TraceRow[]> {
  const hashes = (list: readonly string[]) => sql`${list as string[]}::text[]::tonhash[]`;
  // The trace ids a hash selector names, each once (see the file's head), or undefined for the other selections.
  let named;
  if (filter.traceIds !== undefined && filter.traceIds.length > 0) {
    named = sql`select distinct I.trace_id from unnest(${hashes(filter.traceIds)}) as I(trace_id)`;
  } else if (filter.txHashes !== undefined && filter.txHashes.length > 0) {
    named = sql`select distinct T.trace_id from transactions T where T.hash = any(${hashes(filter.txHashes)})`;
  } else if (filter.msgHashes !== undefined && filter.msgHashes.length > 0) {
    // A message is found by its hash or by the TEP-467 normalised hash of an external message.
    named = sql`
      select M.trace_id from messages M where M.msg_hash = any(${hashes(filter.msgHashes)})
      union
      select M.trace_id from messages M where M.msg_hash_norm = any(${hashes(filter.msgHashes)})`;
  }
  const conditions = [];
  if (filter.account !== undefined) {
    conditions.push(sql`E.trace_id in (select T.trace_id from transactions T where T.account = ${filter.account})`);
  }
  if (filter.mcSeqno !== undefined) conditions.push(sql`E.state = 'complete' and E.mc_seqno_end = ${filter.mcSeqno}`);
  // Unix times are uint32 in the API and int4 in the index: compared as int8 (the same btree operator family, so
  // traces_index_4 still serves), a bound past every stored time matches nothing or everything instead of failing.
  if (filter.startUtime !== undefined) conditions.push(sql`E.end_utime >= ${filter.startUtime}::int8`);
  if (filter.endUtime !== undefined) conditions.push(sql`E.end_utime <= ${filter.endUtime}::int8`);
  if (filter.startLt !== undefined) conditions.push(sql`E.end_lt >= ${filter.startLt}`);
  if (filter.endLt !== undefined) conditions.push(sql`E.end_lt <= ${filter.endLt}`);
  const byTime = ordersByTime(filter);
  if (page.after !== undefined) conditions.push(afterPosition(sql, byTime ? sql`E.end_utime` : sql`E.end_lt`, page.after, page.ascending));

  const all = conditions.length === 0 ? undefined : conditions.reduce((both, c) => sql`${both} and ${c}`);
  const where = all === undefined ? sql`` : sql`where ${all}`;
  // A hash selection reads each named trace by its primary key: the lateral subquery's limit (trace_id is the key,
  // so it changes no result) keeps PostgreSQL from flattening it into a join it could drive from the page order.
  const withNamed = named === undefined ? sql`` : sql`with named as materialized (${named})`;
  const source =
    named === undefined
      ? sql`traces E ${where}`
      : sql`named N cross join lateral (
          select * from traces E where E.trace_id = N.trace_id ${all === undefined ? sql`` : sql`and ${all}`} limit 1) E`;
  const direction = page.ascending ? sql`asc` : sql`desc`;
  const order = byTime ? sql`E.end_utime ${direction}, E.trace_id ${direction}` : sql`E.end_lt ${direction}, E.trace_id ${direction}`;

  return runQuery(
    signal,
    sql,
    "trace_page",
    (tx) => tx<TraceRow[]>`
      ${withNamed}
      select E.trace_id, E.external_hash, E.mc_seqno_start, E.mc_seqno_end, E.start_lt, E.start_utime, E.end_lt,
        E.end_utime, E.state, E.edges_, E.nodes_, E.pending_edges_, E.classification_state
      from ${source}
      order by ${order}
      limit ${page.limit} offset ${page.offset}`,
  );
}

/**
 * The traces after `position` in the page order (key, trace_id), where PostgreSQL puts null keys first in descending
 * order and last in ascending. For a non-null key the row comparison is what the (key desc, trace_id desc) indexes
 * serve as a range, so the page costs what a first page costs.
 */
function afterPosition(sql: Sql, key: ReturnType<Sql>, position: TracePosition, ascending: boolean) {
  const id = sql`${position.traceId}::tonhash`;
  if (position.key === null) {
    return ascending ? sql`(${key} is null and E.trace_id > ${id})` : sql`(${key} is not null or E.trace_id < ${id})`;
  }
  const bound = sql`(${key}, E.trace_id) ${ascending ? sql`>` : sql`<`} (${position.key}::int8, ${id})`;
  return ascending ? sql`(${bound} or ${key} is null)` : bound;
}

/**
 * The rows of every transaction of the given traces, in trace order (lt, then account), as toncenter lists them;
 * with their account states, and their messages read by trace id beside them, in the same round.
 */
export async function selectTraceTransactionRows(sql: Sql, signal: AbortSignal, traceIds: readonly string[]): Promise<TransactionRowSet> {
  if (traceIds.length === 0) return transactionRowSet([], []);
  const [rows, messages] = await Promise.all([
    runQuery(
      signal,
      sql,
      "trace_transactions",
      (tx) => tx<TransactionRowWithStates[]>`
        ${selectTransactionRowsWithStates(sql)}
        where T.trace_id = any(${traceIds as string[]}::text[]::tonhash[])
        order by T.trace_id, T.lt, T.account`,
    ),
    selectMessageRows(sql, signal, { traceIds }),
  ]);
  return transactionRowSet(rows, messages);
}
