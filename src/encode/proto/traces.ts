import type { HandlerContext } from "@connectrpc/connect";
import { create, toBinary } from "@bufbuild/protobuf";
import { type GetTracesResponse, GetTracesResponseSchema } from "../../../gen/tonquery/v1/service_pb.ts";
import type { TraceAction, TraceNode } from "../../../gen/tonquery/v1/trace_pb.ts";
import type { TraceRow } from "../../db/traces.ts";
import { assembleTraceTree, transactionRowTreeView } from "../../handlers/trace-tree.ts";
import { type LoadedTrace, type TracePageEnd, type TraceSink, traceTooLargeWarning } from "../../handlers/traces.ts";
import { writeStruct } from "./decoded-content.ts";
import { implicitBool, implicitInt64, implicitString, optionalBool, optionalInt32, optionalInt64, optionalString } from "./fields.ts";
import { writeTransaction } from "./transaction.ts";
import { PageBytes, selfEncoded } from "./own-encoding.ts";
import { type ProtoWriter, ReusedWriter } from "./writer.ts";

// The protobuf binary of a tonquery.v1.Trace, written from the rows the data layer read (see LoadedTrace): the one
// place where the typed API's binary doors (gRPC, gRPC-web, Connect with protobuf) write a trace. Byte for byte what
// toBinary(TraceSchema, traceOf(loaded)) writes for the same rows, without building the Trace, its Transactions
// and Messages, and without protobuf-es's reflection over them; test/proto-encoder.test.ts holds the two equal.
// Presence as toBinary finds it (see fields.ts).

/** The header of traceHeader (src/handlers/traces.ts): fields 1-9. */
function writeHeader(w: ProtoWriter, row: TraceRow): void {
  implicitString(w, 1, row.trace_id);
  optionalString(w, 2, row.external_hash);
  optionalInt32(w, 3, row.mc_seqno_start);
  optionalInt32(w, 4, row.mc_seqno_end);
  optionalInt64(w, 5, row.start_lt);
  optionalInt32(w, 6, row.start_utime);
  optionalInt64(w, 7, row.end_lt);
  optionalInt32(w, 8, row.end_utime);
  w.fork(9);
  implicitString(w, 1, row.state ?? "");
  implicitInt64(w, 2, row.edges_ ?? "0");
  implicitInt64(w, 3, row.nodes_ ?? "0");
  implicitInt64(w, 4, row.pending_edges_ ?? "0");
  implicitString(w, 5, row.classification_state ?? "");
  w.join();
}

/** A TraceAction's fields, as the action layer built it (its Structs written by hand, see decoded-content.ts). */
function writeAction(w: ProtoWriter, action: TraceAction): void {
  implicitString(w, 1, action.traceId);
  implicitString(w, 2, action.actionId);
  optionalInt64(w, 3, action.startLt);
  optionalInt64(w, 4, action.endLt);
  optionalInt64(w, 5, action.startUtime);
  optionalInt64(w, 6, action.endUtime);
  optionalInt64(w, 7, action.traceEndLt);
  optionalInt64(w, 8, action.traceEndUtime);
  optionalInt32(w, 9, action.traceMcSeqnoEnd);
  for (const hash of action.transactions) w.string(10, hash);
  implicitBool(w, 11, action.success);
  implicitString(w, 12, action.type);
  if (action.details !== undefined) {
    w.fork(13);
    writeStruct(w, action.details);
    w.join();
  }
  if (action.rawAction !== undefined) {
    w.fork(14);
    writeStruct(w, action.rawAction);
    w.join();
  }
  optionalString(w, 15, action.traceExternalHash);
  optionalString(w, 16, action.traceExternalHashNorm);
  for (const account of action.accounts) w.string(17, account);
}

function writeNode(w: ProtoWriter, node: TraceNode): void {
  implicitString(w, 1, node.transactionHash);
  optionalString(w, 2, node.inMsgHash);
  if (node.parent !== undefined) w.uint32(3, node.parent);
  implicitInt64(w, 4, node.transactionLt);
  optionalInt32(w, 5, node.transactionNow);
  optionalBool(w, 6, node.transactionAborted);
}

/** The fields of the loaded trace as a tonquery.v1.Trace message: what traceOf builds from it, written instead. */
export function writeTrace(w: ProtoWriter, loaded: LoadedTrace): void {
  const { row, transactions } = loaded;
  writeHeader(w, row);
  if (transactions === undefined) {
    // Over MAX_TRACE_TRANSACTIONS: the header, and why there is no more (incompleteTrace).
    w.bool(10, true);
    w.string(11, traceTooLargeWarning);
    return;
  }
  const tree = assembleTraceTree(transactions, transactionRowTreeView(loaded.rowSet));
  optionalString(w, 11, tree.warning);
  for (const action of loaded.actions) {
    w.fork(12);
    writeAction(w, action);
    w.join();
  }
  for (const node of tree.nodes) {
    w.fork(13);
    writeNode(w, node);
    w.join();
  }
  for (const tx of transactions) {
    w.fork(14);
    writeTransaction(w, loaded.rowSet, tx, loaded.bodies);
    w.join();
  }
}

// One writer for every trace written (each is written in one go, synchronously): its buffer is reused.
const shared = new ReusedWriter();

/**
 * The loaded trace written into the shared writer, which it returns: as a message, preceded by its length, or as an
 * occurrence of field `field` (its tag, its length, the message). What it wrote stays there until the next trace.
 */
function writeShared(loaded: LoadedTrace, framing: "message" | "delimited" | { field: number }): ProtoWriter {
  // Started over each time: a trace that failed half-written (an action's Struct too deep) leaves nothing behind.
  const w = shared.begin();
  if (framing === "message") writeTrace(w, loaded);
  else {
    if (framing === "delimited") w.forkBare();
    else w.fork(framing.field);
    writeTrace(w, loaded);
    w.join();
  }
  shared.end();
  return w;
}

/** The bytes of the loaded trace as a tonquery.v1.Trace message: `toBinary(TraceSchema, traceOf(loaded))`. */
export function encodeTrace(loaded: LoadedTrace): Uint8Array {
  return writeShared(loaded, "message").finish();
}

/** The same, preceded by its length: an occurrence of a `Trace` field but for its tag. */
export function delimitedTrace(loaded: LoadedTrace): Uint8Array {
  return writeShared(loaded, "delimited").finish();
}

/**
 * A page of traces for a binary RPC response (gRPC, gRPC-web, Connect with protobuf), each trace written from its
 * rows as soon as it is loaded (no Trace is built for it), the rows then dropped.
 *
 * Connect encodes a unary response in one call once the handler returns: for 1000 traces (25 MB) that held the
 * event loop for 150-250 ms, during which no other request was served, and kept the page twice in memory, as objects
 * and as bytes. Here the traces are written one by one while the page is loaded (see streamTraces), and the
 * answer is the message's bytes, which connect sends as they are (see own-encoding.ts): every trace as an occurrence
 * of field `traces`, then the page's other fields, as toBinary writes the whole message; connect keeps its whole
 * protocol handling (framing, compression, errors, trailers). The JSON codecs need the page as objects: Connect JSON
 * gets it from getTraces.
 */
export class TracesProtoSink implements TraceSink<GetTracesResponse> {
  /** The answer so far: each trace as an occurrence of `traces`, field 1, which toBinary writes before the others. */
  readonly #page = new PageBytes();

  trace(loaded: LoadedTrace): void {
    this.#page.append(writeShared(loaded, asTracesField).view());
  }

  end(end: TracePageEnd): GetTracesResponse {
    const message = create(GetTracesResponseSchema, end);
    this.#page.append(toBinary(GetTracesResponseSchema, message));
    return selfEncoded(message, this.#page.finish());
  }
}

/** A trace's framing in the page: an occurrence of `traces`. */
const asTracesField = { field: GetTracesResponseSchema.field.traces.number };

/** Whether the call's response is encoded as binary protobuf (content type, or a Connect GET's `encoding`). */
export function respondsInBinary(context: HandlerContext): boolean {
  const contentType = context.requestHeader.get("content-type")?.toLowerCase().split(";")[0]?.trim();
  if (contentType === undefined || contentType === "") {
    return context.requestMethod === "GET" && new URL(context.url, "http://localhost").searchParams.get("encoding") === "proto";
  }
  // Unary Connect: application/proto; streaming Connect: application/connect+proto.
  return /^application\/(grpc(-web(-text)?)?(\+proto)?|proto|connect\+proto)$/.test(contentType);
}
