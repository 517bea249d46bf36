import type { AddressMetadata, TraceAction } from "../../gen/tonquery/v1/trace_pb.ts";
import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";
import { traceActions } from "../actions/trace-action.ts";
import { lookUpAddresses } from "../db/addresses.ts";
import { selectTraceActionRows } from "../db/actions.ts";
import { runQuery } from "../db/client.ts";
import { selectTraceRows, selectTraceTransactionRows, type TraceRow } from "../db/traces.ts";
import { type TransactionRow, type TransactionRowSet, transactionRowSet } from "../db/transactions.ts";
import { type BodyDecoding, pageBodyDecoding } from "../decoding/page-bodies.ts";
import type { ServiceDeps } from "../service/deps.ts";

// What the stream hub reads from the index. Each read is one "request" of the service: its statements carry one
// AbortSignal, routed once with deps.db.route(signal, …, snapshot) so that they all go to one member and read one
// snapshot (see RequestSnapshot), which the read lets go in a finally.

/** A masterchain block as the poll sees it. */
export interface MasterchainBlock {
  seqno: number;
  utime: number;
}

/** A trace the block completed, with the accounts of its transactions: what streams are matched against. */
export interface BlockTraceRef {
  traceId: string;
  externalHashNorm: string | undefined;
  accounts: readonly string[];
  classified: boolean;
}

/**
 * The hub's reads go to the primary (with replicas; without, everything does): no member can be "known to hold" this
 * seqno, so Cluster routes to the primary. A replica chosen for holding block N may still lack block N-1, which the
 * worker can commit after N: the hub read the committed prefix on one member and must read the blocks in it on a
 * member at least as far along in the same commit order, and only the primary (or the poll's own member) is.
 */
const primaryOnly = Number.MAX_SAFE_INTEGER;

/** A read of the service's: one signal for all its statements, aborted by `stop` (nobody waits any more, shutdown). */
export async function asRead<T>(deps: ServiceDeps, stop: AbortSignal | undefined, timeoutMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const signal = stop === undefined ? AbortSignal.any([controller.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.any([controller.signal, stop, AbortSignal.timeout(timeoutMs)]);
  const route = deps.db.route(signal, primaryOnly, "parallel");
  try {
    return await work(signal);
  } finally {
    route.end();
    controller.abort();
  }
}

/**
 * Masterchain blocks committed after `after`, in seqno order (at most `limit`); `after` undefined: the newest
 * `window` seqnos, to find where the committed prefix ends. One statement on blocks_index_3.
 */
export async function pollMasterchain(deps: ServiceDeps, signal: AbortSignal, after: number | undefined, window: number, limit: number): Promise<MasterchainBlock[]> {
  const rows = await runQuery(
    signal,
    deps.db.sql,
    "stream_poll",
    (tx) => tx<{ seqno: number; gen_utime: number | null }[]>`
      select seqno, gen_utime from blocks
      where workchain = -1 and seqno > coalesce(${after ?? null}::int4, (select max(seqno) from blocks where workchain = -1) - ${window}::int4)
      order by seqno limit ${limit}`,
  );
  return rows.map((row) => ({ seqno: row.seqno, utime: row.gen_utime ?? 0 }));
}

/** The traces masterchain block `seqno` completed (state complete, mc_seqno_end = seqno), in end_lt order, with their accounts. */
export async function selectBlockTraces(deps: ServiceDeps, signal: AbortSignal, seqno: number): Promise<BlockTraceRef[]> {
  const rows = await runQuery(
    signal,
    deps.db.sql,
    "stream_block_traces",
    (tx) => tx<{ trace_id: string; external_hash_norm: string | null; accounts: string[]; classification_state: string | null }[]>`
      select E.trace_id, E.external_hash_norm, E.classification_state,
        array(select distinct T.account from transactions T where T.trace_id = E.trace_id)::text[] as accounts
      from traces E
      where E.mc_seqno_end = ${seqno} and E.state = 'complete'
      order by E.end_lt, E.trace_id`,
  );
  return rows.map((row) => ({
    traceId: row.trace_id,
    externalHashNorm: row.external_hash_norm ?? undefined,
    accounts: row.accounts,
    classified: row.classification_state !== "unclassified",
  }));
}

/** Of `traceIds`, those the classifier has not classified yet. */
export async function selectUnclassified(deps: ServiceDeps, signal: AbortSignal, traceIds: readonly string[]): Promise<Set<string>> {
  if (traceIds.length === 0) return new Set();
  const rows = await runQuery(
    signal,
    deps.db.sql,
    "stream_unclassified",
    (tx) => tx<{ trace_id: string }[]>`
      select trace_id from traces where trace_id = any(${traceIds as string[]}::text[]::tonhash[]) and classification_state = 'unclassified'`,
  );
  return new Set(rows.map((row) => row.trace_id));
}

/** What one load of a block's traces holds: all of it read in one request (one snapshot). */
export interface LoadedTraces {
  rows: Map<string, TraceRow>;
  /**
   * The transactions as rows, by trace, with the set their states and messages are in and the load's body decoding:
   * what every door writes from (src/encode/), the typed objects built only for a door that asks (see StreamTrace).
   */
  transactionRows: Map<string, TransactionRow[]>;
  rowSet: TransactionRowSet;
  bodies: BodyDecoding;
  /** Per action type set (its key), each trace's actions. */
  actions: Map<string, Map<string, TraceAction[]>>;
  addressBook: Record<string, AddressBookRow>;
  metadata: Record<string, AddressMetadata>;
}

export interface LoadSpec {
  traceIds: readonly string[];
  /** Action type sets (already expanded), by key. */
  actionTypes: ReadonlyMap<string, readonly string[]>;
  addressBook: boolean;
  metadata: boolean;
  /** Traces with more transactions are loaded without them (MAX_TRACE_TRANSACTIONS, as in GetTraces). */
  maxTraceTransactions: number;
}

/**
 * The trace rows, transactions, actions (per type set), address book and metadata of some traces of a block, with
 * the same data access as GetTraces. Traces over MAX_TRACE_TRANSACTIONS are left without transactions.
 */
export async function loadTraces(deps: ServiceDeps, signal: AbortSignal, spec: LoadSpec, addressesOf: (loaded: LoadedTraces) => Iterable<string>): Promise<LoadedTraces> {
  const { sql, sqlCustomPlan } = deps.db;
  const ids = spec.traceIds;
  const bodies = pageBodyDecoding(deps.config);
  const loaded: LoadedTraces = {
    rows: new Map(),
    transactionRows: new Map(),
    rowSet: transactionRowSet([], []),
    bodies,
    actions: new Map(),
    addressBook: {},
    metadata: {},
  };
  if (ids.length === 0) return loaded;
  const rows = await selectTraceRows(sqlCustomPlan, signal, { traceIds: ids }, { limit: ids.length, offset: 0, ascending: true });
  for (const row of rows) loaded.rows.set(row.trace_id, row);
  const loadable = rows.filter((row) => BigInt(row.nodes_ ?? "0") <= BigInt(spec.maxTraceTransactions)).map((row) => row.trace_id);
  const [rowSet, actionSets] = await Promise.all([
    selectTraceTransactionRows(sql, signal, loadable),
    Promise.all(
      [...spec.actionTypes].map(async ([key, types]) => {
        const actionRows = await selectTraceActionRows(sql, signal, loadable, types);
        return [key, traceActions(actionRows, { testnet: deps.config.testnet })] as const;
      }),
    ),
  ]);
  loaded.rowSet = rowSet;
  for (const row of rowSet.rows) {
    const id = row.trace_id ?? "";
    const rows = loaded.transactionRows.get(id);
    if (rows) rows.push(row);
    else loaded.transactionRows.set(id, [row]);
  }
  for (const [key, actions] of actionSets) loaded.actions.set(key, actions);
  if (spec.addressBook || spec.metadata) {
    const addresses = new Set(addressesOf(loaded));
    const facts = await lookUpAddresses(sql, signal, addresses, { book: spec.addressBook, metadata: spec.metadata, testnet: deps.config.testnet });
    loaded.addressBook = facts.addressBook;
    loaded.metadata = facts.metadata;
  }
  return loaded;
}
