import type { GetTracesRequest } from "../../../gen/tonquery/v1/service_pb.ts";
import type { TraceNode } from "../../../gen/tonquery/v1/trace_pb.ts";
import { presentAction } from "../../actions/present.ts";
import { messagesOf, type TransactionRow, type TransactionRowSet } from "../../db/transactions.ts";
import { assembleTraceTree, transactionRowTreeView } from "../../handlers/trace-tree.ts";
import { type LoadedTrace, type TracePageEnd, type TraceSink, traceTooLargeWarning } from "../../handlers/traces.ts";
import { jsonBytes } from "../../present/json-text.ts";
import { tracesPageTail } from "../../present/v3/trace.ts";
import { type JsonPieces, printJson } from "../json-pieces.ts";
import { writeTransaction } from "./transaction.ts";

// toncenter's v3 JSON of /api/v3/traces, written from the rows the data layer read (see LoadedTrace): the one place
// where REST v3 prints a trace. Byte for byte what presentTracesResponse (src/present/v3/trace.ts) prints for the
// same page through the typed API's objects; test/v3-json-encoder.test.ts holds the two equal.

/**
 * The nested tree of a trace's nodes (its `trace` member): children in trace order; [] for a leaf without outbound
 * messages, null for one with.
 */
export function writeTree(out: JsonPieces, set: TransactionRowSet, nodes: readonly TraceNode[], byHash: ReadonlyMap<string, TransactionRow>): void {
  const childIndexes: number[][] = [];
  for (let index = 0; index < nodes.length; index++) childIndexes.push([]);
  for (let index = 0; index < nodes.length; index++) {
    const parent = (nodes[index] as TraceNode).parent;
    if (parent !== undefined) childIndexes[parent]?.push(index);
  }
  writeTreeNode(out, { set, nodes, byHash, childIndexes }, 0);
}

interface TreeToWrite {
  set: TransactionRowSet;
  nodes: readonly TraceNode[];
  byHash: ReadonlyMap<string, TransactionRow>;
  childIndexes: readonly number[][];
}

// Module functions, not closures made per trace: under load V8 optimised the closures made per call again and again,
// one new closure after another (a perf map of the server: 76 and 36 compilations of this file's two in 20 s).
function writeTreeNode(out: JsonPieces, tree: TreeToWrite, index: number): void {
  const node = tree.nodes[index] as TraceNode;
  out.field('{"tx_hash":', node.transactionHash);
  if (node.inMsgHash !== undefined) {
    out.field(',"in_msg_hash":', node.inMsgHash);
  }
  out.text(',"children":');
  const children = tree.childIndexes[index] ?? [];
  if (children.length === 0) {
    const hasOutMsgs = messagesOf(tree.set, tree.byHash.get(node.transactionHash) as TransactionRow).outMsgs.length > 0;
    out.text(hasOutMsgs ? "null}" : "[]}");
  } else {
    out.text("[");
    for (let i = 0; i < children.length; i++) {
      if (i > 0) out.text(",");
      writeTreeNode(out, tree, children[i] as number);
    }
    out.text("]}");
  }
}

/** The trace's transactions by hash; a hash met twice keeps its first place and its last transaction. */
export function transactionsByHash(rows: readonly TransactionRow[]): Map<string, TransactionRow> {
  const byHash = new Map<string, TransactionRow>();
  for (const row of rows) byHash.set(row.hash, row);
  return byHash;
}

/**
 * The trace's `transactions` object (hash: transaction), each transaction written by `writeRow` with `context`: the
 * live streams write one they printed already for the block.
 */
export function writeTransactionsObject<C>(
  out: JsonPieces,
  byHash: ReadonlyMap<string, TransactionRow>,
  writeRow: (out: JsonPieces, row: TransactionRow, context: C) => void,
  context: C,
): void {
  out.text("{");
  let first = true;
  for (const [hash, tx] of byHash) {
    if (!first) out.text(",");
    out.string(hash);
    out.text(":");
    writeRow(out, tx, context);
    first = false;
  }
  out.text("}");
}

function writeLoadedTransaction(out: JsonPieces, tx: TransactionRow, loaded: LoadedTrace): void {
  writeTransaction(out, loaded.rowSet, tx, loaded.bodies);
}

/** One trace as toncenter's v3 JSON object, written into `out`. */
export function writeTrace(out: JsonPieces, loaded: LoadedTrace, includeActions: boolean): void {
  const { row, transactions } = loaded;
  out.field('{"trace_id":', row.trace_id);
  out.field(',"external_hash":', row.external_hash);
  out.field(',"mc_seqno_start":', row.mc_seqno_start === null ? null : String(row.mc_seqno_start));
  out.field(',"mc_seqno_end":', row.mc_seqno_end === null ? null : String(row.mc_seqno_end));
  out.field(',"start_lt":', row.start_lt);
  out.field(',"start_utime":', row.start_utime);
  out.field(',"end_lt":', row.end_lt);
  out.field(',"end_utime":', row.end_utime);
  out.field(',"trace_info":{"trace_state":', row.state ?? "");
  out.text(',"messages":');
  out.text(JSON.stringify(Number(row.edges_ ?? "0")));
  out.text(',"transactions":');
  out.text(JSON.stringify(Number(row.nodes_ ?? "0")));
  out.text(',"pending_messages":');
  out.text(JSON.stringify(Number(row.pending_edges_ ?? "0")));
  out.field(',"classification_state":', row.classification_state ?? "");
  out.text(transactions === undefined ? '},"is_incomplete":true' : '},"is_incomplete":false');
  if (transactions === undefined) {
    out.text(`,"warning":${JSON.stringify(traceTooLargeWarning)}${includeActions ? `,"actions":[]` : ""}}`);
    return;
  }
  const tree = assembleTraceTree(transactions, transactionRowTreeView(loaded.rowSet));
  if (tree.warning !== undefined) out.text(`,"warning":${JSON.stringify(tree.warning)}`);
  if (includeActions) {
    out.text(`,"actions":`);
    out.raw(jsonBytes(loaded.actions.map(presentAction)));
  }
  const byHash = transactionsByHash(transactions);
  if (tree.nodes.length > 0) {
    out.text(`,"trace":`);
    writeTree(out, loaded.rowSet, tree.nodes, byHash);
  }
  out.text(`,"transactions_order":[`);
  for (let i = 0; i < transactions.length; i++) {
    if (i > 0) out.text(",");
    out.string((transactions[i] as TransactionRow).hash);
  }
  out.text(`],"transactions":`);
  writeTransactionsObject(out, byHash, writeLoadedTransaction, loaded);
  out.text("}");
}

const pageHead = '{"traces":[';

/** Where the encoder's pieces go as they are made: the REST door's response body (src/rest/body.ts). */
export interface PieceSink {
  /** Takes a piece; a promise asks the writer to wait for it before writing more (the client is slower than the page). */
  write(piece: Buffer): void | Promise<void>;
  /** Takes the answer's last piece: nothing follows, and nobody waits. */
  end(piece: Buffer): void;
  /** What has been written may leave now rather than with the next pieces (the next chunk is still being read). */
  flush?(): void;
}

/**
 * The body of an /api/v3/traces answer, written a trace at a time as UTF-8 pieces while the page is loaded: a page of
 * 1000 traces never exists as objects or as one string, and no Transaction is built for it. The pieces go to `out`
 * as they are made, which may send them on at once (see src/rest/body.ts); without one they are collected and
 * returned by `end`.
 */
export class TracesJsonEncoder implements TraceSink<Buffer[]> {
  readonly #collected: Buffer[] = [];
  readonly #sink: PieceSink;
  readonly #includeActions: boolean;
  #first = true;

  constructor(request: GetTracesRequest, out?: PieceSink) {
    this.#includeActions = request.includeActions;
    const collect = (piece: Buffer) => void this.#collected.push(piece);
    this.#sink = out ?? { write: collect, end: collect };
  }

  trace(loaded: LoadedTrace): void | Promise<void> {
    // One piece per trace, its separator included: a large trace then goes out without being copied again.
    const piece = printJson((out) => {
      out.text(this.#first ? pageHead : ",");
      writeTrace(out, loaded, this.#includeActions);
    });
    this.#first = false;
    return this.#sink.write(piece);
  }

  chunkEnd(): void {
    this.#sink.flush?.();
  }

  /** Writes the page's tail; returns the pieces collected (none when they went to an `out`). */
  end(end: TracePageEnd): Buffer[] {
    const tail = tracesPageTail(end);
    this.#sink.end(this.#first ? Buffer.concat([Buffer.from(pageHead), tail]) : tail);
    return this.#collected;
  }
}
