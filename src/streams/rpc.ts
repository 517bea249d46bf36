import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { type StreamTracesRequest, type StreamTracesResponse, StreamTracesResponseSchema } from "../../gen/tonquery/v1/stream_pb.ts";
import type { Config } from "../runtime/config.ts";
import { respondsInBinary } from "../encode/proto/traces.ts";
import { selfEncodedWithItems } from "../encode/proto/own-encoding.ts";
import { distinctValues, invalidParameter, isStorableText } from "../handlers/validation.ts";
import { Code, ConnectError } from "@connectrpc/connect";
import { streamOutcome, transportAbort } from "../server/rpc-door.ts";
import { parseAddress } from "../ton/address.ts";
import { type StreamHub, streamFilter } from "./hub.ts";

/** StreamTraces: the hub's items for the request's filter, as messages (see proto/tonquery/v1/stream.proto). */
export async function* streamTracesRpc(hub: StreamHub, config: Config, request: StreamTracesRequest, context: HandlerContext): AsyncGenerator<StreamTracesResponse> {
  request.supportedActionTypes.forEach((name, index) => {
    if (!isStorableText(name)) throw invalidParameter("supported_action_types", index);
  });
  const filter = streamFilter(
    {
      accounts: request.accounts,
      includeTransactions: request.includeTransactions,
      includeActions: request.includeActions,
      supportedActionTypes: distinctValues("supported_action_types", request.supportedActionTypes, config.maxListValues),
      addressBook: request.includeAddressBook,
      metadata: request.includeMetadata,
    },
    config.streamMaxAddresses,
    (address, index) => parseAddress(address) ?? throwInvalid("accounts", index),
  );
  const outcome = context.values.get(streamOutcome);
  try {
    yield* messages(hub, filter, request, context);
    outcome?.(context.signal.aborted ? Code.Canceled : 0);
  } catch (err) {
    // A client that went away ended its stream: CANCELED, as connect reports a call its client cancelled.
    outcome?.(context.signal.aborted && !(err instanceof ConnectError) ? Code.Canceled : ConnectError.from(err).code);
    throw err;
  }
}

async function* messages(hub: StreamHub, filter: ReturnType<typeof streamFilter>, request: StreamTracesRequest, context: HandlerContext): AsyncGenerator<StreamTracesResponse> {
  const binary = respondsInBinary(context);
  for await (const item of hub.open(filter, request.resumeAfter, context.signal, "rpc", context.values.get(transportAbort))) {
    if (item.kind === "heartbeat") {
      yield create(StreamTracesResponseSchema, { position: item.seqno, heartbeat: true });
      continue;
    }
    const fields = { position: item.seqno, addressBook: item.addressBook, metadata: item.metadata, blockUtime: item.utime };
    // Binary: the traces as written from their rows, no Trace built for them (see TracesProtoSink); JSON needs the objects.
    yield binary
      ? selfEncodedWithItems(StreamTracesResponseSchema, fields, tracesField, item.traces.map((t) => t.binary))
      : create(StreamTracesResponseSchema, { ...fields, traces: item.traces.map((t) => t.trace) });
  }
}

const tracesField = StreamTracesResponseSchema.field.traces.number;

function throwInvalid(name: string, index: number): never {
  throw invalidParameter(name, index);
}
