import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";
import { type GetTracesResponse, GetTracesResponseSchema } from "../../../gen/tonquery/v1/service_pb.ts";
import { type Trace, TraceSchema } from "../../../gen/tonquery/v1/trace_pb.ts";
import { type Message, type MessageBody, MessageBodySchema, type Transaction } from "../../../gen/tonquery/v1/transaction_pb.ts";
import { delimitedDecodedContent } from "./decoded-content.ts";

/**
 * A page of traces for a binary RPC response (gRPC, gRPC-web, Connect with protobuf), each trace encoded as soon as it
 * is built and the object dropped.
 *
 * Connect encodes a unary response in one call once the handler returns: for 1000 traces (25 MB) that held the
 * event loop for 150-250 ms, during which no other request was served, and kept the page twice in memory, as objects
 * and as bytes. Here the traces are encoded slice by slice while the page is built (see forEachSlice) and travel as
 * already-encoded occurrences of field `traces` in the message's unknown fields, which protobuf-es writes verbatim:
 * the bytes on the wire are a valid GetTracesResponse (a repeated field may come after the others), decoded by every
 * client as usual. The JSON codecs print no unknown fields, so they get the page as objects.
 */
export class TracesBinaryWriter {
  readonly #encoded: { no: number; wireType: WireType; data: Uint8Array }[] = [];

  traces(chunk: readonly Trace[]): void {
    for (const trace of chunk) {
      const data = new BinaryWriter().bytes(toBinary(TraceSchema, withEncodedBodies(trace))).finish();
      this.#encoded.push({ no: tracesField, wireType: WireType.LengthDelimited, data });
    }
  }

  end(end: Pick<GetTracesResponse, "addressBook" | "metadata" | "nextPageToken">): GetTracesResponse {
    const response = create(GetTracesResponseSchema, end);
    response.$unknown = this.#encoded;
    return response;
  }
}

const tracesField = GetTracesResponseSchema.field.traces.number;
const decodedField = MessageBodySchema.field.decoded.number;

/**
 * The trace as toBinary is to see it: every decoded body already encoded (see decoded-content.ts) and carried in
 * its MessageBody's unknown fields, ahead of any it had, which is where toBinary would have written `decoded`, so the
 * bytes are unchanged. Traces, transactions and messages are shared with other pages and requests, so the objects on
 * the path to a decoded body are shallow copies; the rest is passed as is.
 */
function withEncodedBodies(trace: Trace): Trace {
  const transactions = mapChanged(trace.transactions, transactionWithEncodedBodies);
  return transactions === trace.transactions ? trace : { ...trace, transactions };
}

function transactionWithEncodedBodies(transaction: Transaction): Transaction {
  const inMsg = transaction.inMsg && messageWithEncodedBodies(transaction.inMsg);
  const outMsgs = mapChanged(transaction.outMsgs, messageWithEncodedBodies);
  return inMsg === transaction.inMsg && outMsgs === transaction.outMsgs ? transaction : { ...transaction, inMsg, outMsgs };
}

function messageWithEncodedBodies(message: Message): Message {
  const messageContent = bodyWithEncodedContent(message.messageContent);
  const initState = bodyWithEncodedContent(message.initState);
  return messageContent === message.messageContent && initState === message.initState ? message : { ...message, messageContent, initState };
}

function bodyWithEncodedContent(body: MessageBody | undefined): MessageBody | undefined {
  if (body?.decoded === undefined) return body;
  const decoded = { no: decodedField, wireType: WireType.LengthDelimited, data: delimitedDecodedContent(body.decoded) };
  return { ...body, decoded: undefined, $unknown: [decoded, ...(body.$unknown ?? [])] };
}

/** The items with `change` applied, in a new array only if it changed any. */
function mapChanged<T>(items: T[], change: (item: T) => T): T[] {
  let changed: T[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = change(items[i]!);
    if (item !== items[i]) (changed ??= items.slice())[i] = item;
  }
  return changed ?? items;
}

/** Whether the call's response is encoded as binary protobuf (content type, or a Connect GET's `encoding`). */
export function respondsInBinary(context: HandlerContext): boolean {
  const contentType = context.requestHeader.get("content-type")?.toLowerCase().split(";")[0]?.trim();
  if (contentType === undefined || contentType === "") {
    return context.requestMethod === "GET" && new URL(context.url, "http://localhost").searchParams.get("encoding") === "proto";
  }
  return /^application\/(grpc(-web(-text)?)?(\+proto)?|proto)$/.test(contentType);
}
