import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";
import { type GetTracesResponse, GetTracesResponseSchema } from "../../../gen/tonquery/v1/service_pb.ts";
import { type Trace, TraceSchema } from "../../../gen/tonquery/v1/trace_pb.ts";

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
      const data = new BinaryWriter().bytes(toBinary(TraceSchema, trace)).finish();
      this.#encoded.push({ no: tracesField, wireType: WireType.LengthDelimited, data });
    }
  }

  end(addressBook: GetTracesResponse["addressBook"], metadata: GetTracesResponse["metadata"]): GetTracesResponse {
    const response = create(GetTracesResponseSchema, { addressBook, metadata });
    response.$unknown = this.#encoded;
    return response;
  }
}

const tracesField = GetTracesResponseSchema.field.traces.number;

/** Whether the call's response is encoded as binary protobuf (content type, or a Connect GET's `encoding`). */
export function respondsInBinary(context: HandlerContext): boolean {
  const contentType = context.requestHeader.get("content-type")?.toLowerCase().split(";")[0]?.trim();
  if (contentType === undefined || contentType === "") {
    return context.requestMethod === "GET" && new URL(context.url, "http://localhost").searchParams.get("encoding") === "proto";
  }
  return /^application\/(grpc(-web(-text)?)?(\+proto)?|proto)$/.test(contentType);
}
