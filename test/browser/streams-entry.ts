// Bundled for Chromium by test/streams-browser.test.ts: the browser clients of the live streams and of gRPC-web's
// text mode, each through its own library's runtime.
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { GrpcWebClientBase, MethodDescriptor } from "grpc-web";
import {
  GetMasterchainInfoRequestSchema,
  GetMasterchainInfoResponseSchema,
  type GetMasterchainInfoRequest,
  type GetMasterchainInfoResponse,
  TonQueryService,
} from "../../gen/tonquery/v1/service_pb.ts";
import { StreamTracesRequestSchema, StreamTracesResponseSchema, type StreamTracesRequest, type StreamTracesResponse } from "../../gen/tonquery/v1/stream_pb.ts";

export interface Block {
  position: number;
  traces: string[];
}

/** EventSource on the SSE door (GET, the subscription in the query): the blocks of "transactions" events up to `upTo`. */
function eventSourceBlocks(baseUrl: string, query: string, upTo: number): Promise<{ blocks: Block[]; ids: string[] }> {
  return new Promise((resolve, reject) => {
    const source = new EventSource(`${baseUrl}/api/streaming/v2/sse?${query}`);
    const blocks = new Map<number, Set<string>>();
    const ids: string[] = [];
    const timer = setTimeout(() => {
      source.close();
      reject(new Error(`EventSource: no block ${upTo} in time (${ids.length} events)`));
    }, 20_000);
    const seen = (id: string) => {
      const seqno = Number(id.split(":")[0]);
      if (seqno >= upTo) {
        clearTimeout(timer);
        source.close();
        resolve({ blocks: [...blocks].map(([position, set]) => ({ position, traces: [...set].sort() })), ids });
      }
    };
    source.addEventListener("event", (event) => {
      const message = event as MessageEvent;
      ids.push(message.lastEventId);
      const json = JSON.parse(message.data as string) as { type: string; transactions: { trace_id: string }[] };
      const seqno = Number(message.lastEventId.split(":")[0]);
      const set = blocks.get(seqno) ?? new Set<string>();
      for (const tx of json.transactions) set.add(tx.trace_id);
      blocks.set(seqno, set);
      seen(message.lastEventId);
    });
    source.addEventListener("heartbeat", (event) => seen((event as MessageEvent).lastEventId));
  });
}

/** connect-web's gRPC-web transport (fetch, binary frames): StreamTraces up to `upTo`. */
async function connectWebBlocks(baseUrl: string, request: MessageInitShape<typeof StreamTracesRequestSchema>, upTo: number): Promise<Block[]> {
  const client = createClient(TonQueryService, createGrpcWebTransport({ baseUrl }));
  const controller = new AbortController();
  const out: Block[] = [];
  for await (const message of client.streamTraces(request, { signal: controller.signal })) {
    if (!message.heartbeat) out.push({ position: message.position, traces: message.traces.map((t) => t.traceId).sort() });
    if (message.position >= upTo) break;
  }
  controller.abort();
  return out;
}

/** Google's grpc-web client in its default mode, application/grpc-web-text: a unary call. */
async function grpcWebTextUnary(baseUrl: string): Promise<{ first: number; last: number }> {
  const client = new GrpcWebClientBase({ format: "text" });
  const method = new MethodDescriptor<GetMasterchainInfoRequest, GetMasterchainInfoResponse>(
    "/tonquery.v1.TonQueryService/GetMasterchainInfo",
    "unary",
    Object as never,
    Object as never,
    (request: GetMasterchainInfoRequest) => toBinary(GetMasterchainInfoRequestSchema, request),
    (bytes: Uint8Array) => fromBinary(GetMasterchainInfoResponseSchema, bytes),
  );
  const response = await new Promise<GetMasterchainInfoResponse>((resolve, reject) =>
    client.rpcCall(`${baseUrl}/tonquery.v1.TonQueryService/GetMasterchainInfo`, create(GetMasterchainInfoRequestSchema), {}, method, (error, answer) =>
      error ? reject(new Error(`grpc-web text: ${error.code} ${error.message}`)) : resolve(answer),
    ),
  );
  return { first: response.first?.seqno ?? -1, last: response.last?.seqno ?? -1 };
}

/** The same client's server streaming, which it does in text mode only: StreamTraces up to `upTo`. */
function grpcWebTextStream(baseUrl: string, request: MessageInitShape<typeof StreamTracesRequestSchema>, upTo: number): Promise<Block[]> {
  const client = new GrpcWebClientBase({ format: "text" });
  const method = new MethodDescriptor<StreamTracesRequest, StreamTracesResponse>(
    "/tonquery.v1.TonQueryService/StreamTraces",
    "server_streaming",
    Object as never,
    Object as never,
    (message: StreamTracesRequest) => toBinary(StreamTracesRequestSchema, message),
    (bytes: Uint8Array) => fromBinary(StreamTracesResponseSchema, bytes),
  );
  return new Promise((resolve, reject) => {
    const out: Block[] = [];
    const call = client.serverStreaming(`${baseUrl}/tonquery.v1.TonQueryService/StreamTraces`, create(StreamTracesRequestSchema, request), {}, method);
    const timer = setTimeout(() => {
      call.cancel();
      reject(new Error(`grpc-web text: no block ${upTo} in time (${out.length} messages)`));
    }, 20_000);
    call.on("data", (message) => {
      if (!message.heartbeat) out.push({ position: message.position, traces: message.traces.map((t) => t.traceId).sort() });
      if (message.position >= upTo) {
        clearTimeout(timer);
        call.cancel();
        resolve(out);
      }
    });
    call.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`grpc-web text: ${error.code} ${error.message}`));
    });
  });
}

Object.assign(globalThis, { streamsTest: { eventSourceBlocks, connectWebBlocks, grpcWebTextUnary, grpcWebTextStream } });
