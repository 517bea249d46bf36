import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  type GetTracesRequest,
  type GetTracesResponse,
  GetTracesResponseSchema,
  SortOrder,
} from "../../gen/tonquery/v1/service_pb.ts";
import { type Trace, type TraceAction, TraceSchema } from "../../gen/tonquery/v1/trace_pb.ts";
import type { Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { actionAddresses } from "../actions/present.ts";
import { traceActions } from "../actions/trace-action.ts";
import { expandActionTypes } from "../actions/types.ts";
import { lookUpAddresses } from "../db/addresses.ts";
import { selectTraceActionRows } from "../db/actions.ts";
import { optional } from "../db/rows.ts";
import { type BodyDecoding, pageBodyDecoding } from "../decoding/page-bodies.ts";
import { masterchainBlockExists, selectTraceRows, selectTraceTransactionRows, type TraceFilter, type TraceRow, tracePosition } from "../db/traces.ts";
import { scanTransactionRow, type TransactionRow, transactionRowAddresses, type TransactionRowSet } from "../db/transactions.ts";
import { type HeldSlots, transactionsWeight } from "../service/admission.ts";
import { forEachInTurns } from "../runtime/event-loop.ts";
import type { ServiceDeps } from "../service/deps.ts";
import { settings } from "../runtime/config.ts";
import { parseAddress } from "../ton/address.ts";
import { parseHash } from "../ton/hash.ts";
import { decodeTraceCursor, encodeTraceCursor, traceCursorScope } from "./trace-cursor.ts";
import { assembleTraceTree, transactionTreeView } from "./trace-tree.ts";
import { distinctValues, invalidParameter, isStorableText } from "./validation.ts";

export const traceTooLargeWarning = "trace is too large";

/**
 * Traces loaded per round of statements by default (TRACE_CHUNK_SIZE): bounds the rows and messages a page holds at
 * once, and, with a sink that writes as it goes (the REST door's), its encoded answer.
 */
export const traceChunkSize = Number(settings.traceChunkSize.default);

/** What follows a page's traces. */
export type TracePageEnd = Pick<GetTracesResponse, "addressBook" | "metadata" | "nextPageToken">;

/**
 * One trace of a page as the data layer read it: its header row and, unless it is over MAX_TRACE_TRANSACTIONS (a
 * header only), the rows of its transactions, with the chunk's row set their states and messages are found in.
 * Each wire format writes from this: REST JSON directly (src/encode/v3-json/), the typed API through traceOf.
 */
export interface LoadedTrace {
  row: TraceRow;
  transactions: readonly TransactionRow[] | undefined;
  rowSet: TransactionRowSet;
  actions: TraceAction[];
  bodies: BodyDecoding;
}

/** Where a page of traces goes as it is loaded: trace after trace in page order, then the page's address book. */
export interface TraceSink<T> {
  /**
   * Takes the next trace. A promise says the sink's receiver is full (the REST door's client reads slower than the
   * page is read): the next trace is handed over once it settles, and a rejection ends the page.
   */
  trace(loaded: LoadedTrace): void | Promise<void>;
  /** The last trace of a chunk read together has been handed over: what the sink holds of it may leave now. */
  chunkEnd?(): void;
  end(end: TracePageEnd): T;
}

/** A loaded trace as the typed API's Trace. */
export function traceOf(loaded: LoadedTrace): Trace {
  if (loaded.transactions === undefined) return incompleteTrace(loaded.row);
  const transactions = loaded.transactions.map((row) => scanTransactionRow(loaded.rowSet, row, loaded.bodies));
  return completeTrace(loaded.row, transactions, loaded.actions);
}

/** A sink of the typed API's Traces (the RPC doors' writers), fed with each loaded trace turned into one. */
export function typedTraceSink<T>(inner: { trace(trace: Trace): void; end(end: TracePageEnd): T }): TraceSink<T> {
  return { trace: (loaded) => inner.trace(traceOf(loaded)), end: (end) => inner.end(end) };
}

export function getTraces(deps: ServiceDeps, request: GetTracesRequest, context: HandlerContext, slots?: HeldSlots): Promise<GetTracesResponse> {
  const traces: Trace[] = [];
  const sink = typedTraceSink({
    trace: (trace) => void traces.push(trace),
    end: (end) => create(GetTracesResponseSchema, { traces, ...end }),
  });
  return streamTraces(deps, request, context, sink, slots);
}

/**
 * The page of traces the request asks for, handed to `sink` trace by trace, read a chunk at a time (at most
 * TRACE_CHUNK_SIZE traces and `chunkTransactions` transactions, see chunksOf): each chunk costs the same few
 * statements (transactions with their account states, their messages and actions alongside), the next chunk is read while the sink
 * takes the traces of the current one, and a chunk's rows are dropped once it is built, so a 1000-trace page never
 * holds all its rows at once. A sink that answers with a promise (backpressure) is waited for: the read-ahead stays
 * one chunk, so the page is read no faster than the sink's receiver takes it.
 * Once the page's trace rows tell how many transactions it holds, the request's admission (`slots`) is resized
 * to them.
 */
export async function streamTraces<T>(
  deps: ServiceDeps,
  request: GetTracesRequest,
  context: HandlerContext,
  sink: TraceSink<T>,
  slots?: HeldSlots,
): Promise<T> {
  const { sql, sqlCustomPlan } = deps.db;
  const config = deps.config;
  const filter = traceFilter(request, config.maxListValues);
  const supportedActionTypes = actionTypeNames(request.supportedActionTypes, config.maxListValues);
  const limit = request.limit ?? config.defaultLimit;
  if (limit > config.maxLimit) throw new ConnectError(`limit is not allowed: ${limit} > ${config.maxLimit}`, Code.InvalidArgument);
  if (limit < 1) throw new ConnectError(`limit is not allowed: ${limit} < 1`, Code.InvalidArgument);
  const ascending = request.sort === SortOrder.ASC;
  // Digested only for a page that reads or makes a token: a lookup by hash, or a short page, does neither.
  let cursorScope: Buffer | undefined;
  const scope = () => (cursorScope ??= traceCursorScope(filter, ascending));
  let after;
  if (request.pageToken !== undefined && request.pageToken !== "") {
    if ((request.offset ?? 0) > 0) throw new ConnectError("offset cannot be combined with a cursor", Code.InvalidArgument);
    after = decodeTraceCursor(config.cursorSecret, scope(), request.pageToken);
  }
  const page = { limit, offset: request.offset ?? 0, ascending, after };

  const [blockKnown, rows] = await Promise.all([
    filter.mcSeqno === undefined ? true : masterchainBlockExists(sql, context.signal, filter.mcSeqno),
    selectTraceRows(sqlCustomPlan, context.signal, filter, page),
  ]);
  if (!blockKnown) throw new ConnectError(`masterchain block ${filter.mcSeqno} not found`, Code.NotFound);

  // Traces over the bound come back as a header only: loading them would cost without bound.
  const maxTransactions = BigInt(config.maxTraceTransactions);
  const isLoadable = (row: TraceRow) => BigInt(row.nodes_ ?? "0") <= maxTransactions;
  let pageTransactions = 0;
  for (const row of rows) if (isLoadable(row)) pageTransactions += Number(row.nodes_ ?? 0);
  await slots?.resize(transactionsWeight(pageTransactions));

  const actionTypes = request.includeActions ? expandActionTypes(supportedActionTypes) : undefined;
  const bodies = pageBodyDecoding(config);
  const loadChunk = async (chunkRows: readonly TraceRow[]) => {
    const loadable: string[] = [];
    for (const row of chunkRows) if (isLoadable(row)) loadable.push(row.trace_id);
    const [rowSet, actions] = await Promise.all([
      selectTraceTransactionRows(sql, context.signal, loadable),
      actionTypes !== undefined && loadable.length > 0
        ? selectTraceActionRows(sql, context.signal, loadable, actionTypes).then((rows) => traceActions(rows, { testnet: config.testnet }))
        : new Map<string, TraceAction[]>(),
    ]);
    return { chunkRows, loadable, rowSet, actions };
  };

  const chunks = chunksOf(rows, config.traceChunkSize, (row) => (isLoadable(row) ? Number(row.nodes_ ?? 0) : 0));
  const addresses = new Set<string>();
  const lookUpPageAddresses = () => lookUpAddresses(sql, context.signal, addresses, { book: true, metadata: true, testnet: config.testnet });
  let lookups: ReturnType<typeof lookUpPageAddresses> | undefined;
  let next = chunks.length > 0 ? loadChunk(chunks[0] as TraceRow[]) : undefined;
  for (let i = 0; next !== undefined; i++) {
    const { chunkRows, loadable, rowSet, actions } = await next;
    const following = chunks[i + 1];
    next = following === undefined ? undefined : loadChunk(following);
    // Should this chunk fail to build, the read already under way must not surface as an unhandled rejection.
    next?.catch(() => {});

    for (const address of transactionRowAddresses(rowSet)) addresses.add(address);
    for (const list of actions.values()) for (const action of list) for (const address of actionAddresses(action)) addresses.add(address);
    if (next === undefined) {
      // The page's addresses are all known once its last chunk is read: their lookups run while that chunk is built.
      lookups = lookUpPageAddresses();
      lookups.catch(() => {});
    }

    const transactionsByTrace = new Map<string, TransactionRow[]>();
    for (const tx of rowSet.rows) {
      const list = transactionsByTrace.get(tx.trace_id ?? "");
      if (list) list.push(tx);
      else transactionsByTrace.set(tx.trace_id ?? "", [tx]);
    }
    const loaded = new Set(loadable);
    // Only one chunk is read ahead: the next one starts once this one has been taken, however long the sink waits.
    await forEachInTurns(chunkRows, (row) =>
      sink.trace({
        row,
        transactions: loaded.has(row.trace_id) ? (transactionsByTrace.get(row.trace_id) ?? []) : undefined,
        rowSet,
        actions: actions.get(row.trace_id) ?? [],
        bodies,
      }),
    );
    sink.chunkEnd?.();
  }

  const { addressBook, metadata } = await (lookups ?? lookUpPageAddresses());
  // A short page is the last one; a full one may be, which the next request finds out at a first page's cost.
  const last = rows.length === limit ? rows[rows.length - 1] : undefined;
  const nextPageToken = last === undefined ? "" : encodeTraceCursor(config.cursorSecret, scope(), tracePosition(filter, last));
  return sink.end({ addressBook, metadata, nextPageToken });
}

/**
 * Transactions one chunk of a page may hold, unless its first trace alone holds more. What a chunk costs in memory
 * (its rows, their messages and bodies, and the JSON or protobuf made of them) grows with its transactions, not its
 * traces: a trace holds from one to MAX_TRACE_TRANSACTIONS of them. The bench's 1000-trace pages hold 6.4 (hot
 * account) and 23.7 (cold) transactions per trace, so that 100 cold traces were 2,400 transactions, 11 MB of JSON,
 * and the chunk being written and the one read ahead dominated the server's memory. 1,000 leaves the hot account's
 * chunks at about 100 traces and cuts the cold one's to about 40; a chunk of the largest traces is one trace.
 */
export const chunkTransactions = 1000;

/** A page's rows in chunks of at most `maxTraces` traces and, past its first trace, `chunkTransactions` transactions. */
export function chunksOf(rows: readonly TraceRow[], maxTraces: number, transactions: (row: TraceRow) => number): TraceRow[][] {
  const chunks: TraceRow[][] = [];
  let chunk: TraceRow[] = [];
  let held = 0;
  for (const row of rows) {
    const weight = transactions(row);
    if (chunk.length > 0 && (chunk.length >= maxTraces || held + weight > chunkTransactions)) {
      chunks.push(chunk);
      chunk = [];
      held = 0;
    }
    chunk.push(row);
    held += weight;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * Normalises the selectors into the index's forms and checks that at most one of them is used; a hash list keeps
 * each hash once, whatever forms it was given in, and holds at most `maxListValues` of them.
 */
function traceFilter(request: GetTracesRequest, maxListValues: number): TraceFilter {
  const selectors = [request.account !== undefined, request.traceId.length > 0, request.txHash.length > 0, request.msgHash.length > 0];
  if (selectors.filter(Boolean).length > 1) {
    throw new ConnectError("only one of account, trace_id, tx_hash, msg_hash should be specified", Code.InvalidArgument);
  }
  const hashes = (name: string, values: readonly string[]) =>
    distinctValues(
      name,
      values.map((value, index) => {
        const hash = parseHash(value);
        if (hash === undefined) throw invalidParameter(name, index);
        return hash;
      }),
      maxListValues,
    );
  let account: string | undefined;
  if (request.account !== undefined) {
    account = parseAddress(request.account);
    if (account === undefined) throw invalidParameter("account");
  }
  return {
    account,
    traceIds: hashes("trace_id", request.traceId),
    txHashes: hashes("tx_hash", request.txHash),
    msgHashes: hashes("msg_hash", request.msgHash),
    mcSeqno: request.mcSeqno,
    startUtime: request.startUtime,
    endUtime: request.endUtime,
    startLt: withinBigint(request.startLt),
    endLt: withinBigint(request.endLt),
  };
}

/**
 * The action type names asked for, compared with the actions' types in the database: each must be text PostgreSQL
 * can take (no NUL), each counts once, and there are at most `maxListValues` of them.
 */
function actionTypeNames(names: readonly string[], maxListValues: number): string[] {
  names.forEach((name, index) => {
    if (!isStorableText(name)) throw invalidParameter("supported_action_types", index);
  });
  return distinctValues("supported_action_types", names, maxListValues);
}

const maxBigint = 2n ** 63n - 1n;

/** Logical times are unsigned in the API and bigint in the index, where none exceeds 2^63-1: clamping keeps the meaning. */
function withinBigint(lt: string | undefined): string | undefined {
  return lt === undefined || BigInt(lt) <= maxBigint ? lt : maxBigint.toString();
}

export function traceHeader(row: TraceRow) {
  return {
    traceId: row.trace_id,
    externalHash: optional(row.external_hash),
    mcSeqnoStart: optional(row.mc_seqno_start),
    mcSeqnoEnd: optional(row.mc_seqno_end),
    startLt: optional(row.start_lt),
    startUtime: optional(row.start_utime),
    endLt: optional(row.end_lt),
    endUtime: optional(row.end_utime),
    traceInfo: {
      traceState: row.state ?? "",
      messages: row.edges_ ?? "0",
      transactions: row.nodes_ ?? "0",
      pendingMessages: row.pending_edges_ ?? "0",
      classificationState: row.classification_state ?? "",
    },
  };
}

export function incompleteTrace(row: TraceRow): Trace {
  return create(TraceSchema, { ...traceHeader(row), isIncomplete: true, warning: traceTooLargeWarning });
}

export function completeTrace(row: TraceRow, transactions: Transaction[], actions: TraceAction[]): Trace {
  const tree = assembleTraceTree(transactions, transactionTreeView);
  return create(TraceSchema, {
    ...traceHeader(row),
    isIncomplete: false,
    warning: tree.warning,
    actions,
    nodes: tree.nodes,
    transactions,
  });
}
