import type { EventEmitter } from "node:events";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
} from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { createAsyncIterable, encodeEnvelope, type UniversalServerRequest, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeFromHttpStatus, codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import http2 from "node:http2";
import { promisify } from "node:util";
import { brotliCompress, gzip } from "node:zlib";
import type { Compression } from "@connectrpc/connect/protocol";
import { log } from "../runtime/log.ts";
import { answerDelivery, type AnswerDelivery } from "../service/answer-delivery.ts";
import { brotliParams, gzipLevel } from "../rest/compression.ts";
import { grpcCodeName, nameRequest, type Door } from "../observability/request-context.ts";
import type { HttpHandler, HttpResponse } from "./single-port.ts";

// The RPC door: Connect, gRPC and gRPC-web for the router's procedures, served as connect-node's
// connectNodeAdapter serves them (the same router, the same request and response conversions), with what that
// adapter leaves to the application:
//
// - A request connect cannot read is the client's error. Connect reports some of these as INTERNAL (500): protobuf
//   that does not parse ("parse binary: ...", protocol/serialization.js), a Connect GET whose base64 does not
//   decode (a plain Error from base64Decode, protocol-connect/handler-factory.js), a compressed body or envelope it
//   cannot decompress (connect-node compression.js, protocol/envelope.js). All of them happen before the
//   implementation is called, where no interceptor sees them: the door notes whether the call reached the
//   implementation, and the error an unreached call ended with (the handler aborts the call's context with it
//   before writing the response, which the request gate can watch), and answers an INTERNAL or UNKNOWN such call
//   with INVALID_ARGUMENT in the call's protocol instead.
// - A client deadline is cut to the server's bound: connect arms a Node timer with the client's value, and Node
//   fires a timer of 2^31 ms or more at once (597H was DEADLINE_EXCEEDED at once).
// - A request whose authority makes no URL (HTTP/1.0 without Host, a Host with a space) is a 400: the adapter
//   throws out of the request listener for it, which ended the process.

/** What the door knows of one call. */
interface CallState {
  /** The implementation was called (its first interceptor ran). */
  reached: boolean;
  /** What the call was aborted with before it reached the implementation. */
  failure: unknown;
  /** How the implementation's call ended, as the interceptors after this one left it (0: OK). */
  code: Code | 0 | undefined;
}

const callState = createContextKey<CallState | undefined>(undefined, { description: "tonquery rpc door call state" });

/**
 * Cuts the call's transport (HTTP/1.1: the connection; HTTP/2: the stream, with RST_STREAM CANCEL): for a stream
 * whose client reads nothing any more, so that not even its final error can be written (see src/streams).
 */
export const transportAbort = createContextKey<(() => void) | undefined>(undefined, { description: "tonquery rpc door transport abort" });

/**
 * Notes how a server stream ended (0: OK), for the access log and the request metrics: the door learns a call's
 * outcome when its response begins, which for a stream is long before its end.
 */
export const streamOutcome = createContextKey<((code: Code | 0) => void) | undefined>(undefined, { description: "tonquery rpc door stream outcome" });

/**
 * First of the interceptors: the call reached the implementation, so its failures are the implementation's; and its
 * outcome, as the other interceptors made it, is noted for the metrics and the access log.
 */
const markReached: Interceptor = (next) => async (request) => {
  const state = request.contextValues.get(callState);
  if (state !== undefined) state.reached = true;
  try {
    const response = await next(request);
    if (state !== undefined) state.code = 0;
    return response;
  } catch (err) {
    if (state !== undefined) state.code = ConnectError.from(err).code;
    throw err;
  }
};

/** Runs before the request body is read: from here on, the reason a call that never reaches the implementation is aborted with is noted. */
function watchUnreached(context: HandlerContext): void {
  const state = context.values.get(callState);
  if (state === undefined) return;
  context.signal.addEventListener(
    "abort",
    () => {
      if (!state.reached) state.failure = context.signal.reason;
    },
    { once: true },
  );
}

export interface RpcDoorOptions {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  /** Requests for paths that are no procedure of the router. */
  fallback: HttpHandler;
  shutdownSignal: AbortSignal;
  readMaxBytes: number;
  /** The longest deadline a client may set: a longer one is cut to it. */
  maxDeadlineMs: number;
}

export function rpcDoor(options: RpcDoorOptions): HttpHandler {
  const router = createConnectRouter({
    // connectNodeAdapter's default.
    acceptCompression: rpcCompressions,
    interceptors: [markReached, ...options.interceptors],
    requestGate: watchUnreached,
    shutdownSignal: options.shutdownSignal,
    readMaxBytes: options.readMaxBytes,
  });
  options.routes(router);
  const procedures = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));

  return (req, res) => {
    const handler = procedures.get((req.url ?? "").split("?", 1)[0] ?? "");
    if (handler === undefined) {
      options.fallback(req, res);
      return;
    }
    const state: CallState = { reached: false, failure: undefined, code: undefined };
    // The typed API's methods by name, others (health, reflection) by their full name: a few values either way.
    const service = handler.method.parent.typeName;
    const record = nameRequest(doors[protocolOf(req.method, req.headers["content-type"])], service.startsWith("tonquery.") ? handler.method.name : `${service}/${handler.method.name}`);
    let request: UniversalServerRequest;
    const text = isGrpcWebText(req.headers["content-type"]);
    const delivery = deliveryOf(res, () => {
      if (record !== undefined) record.rpcCode = grpcCodeName(Code.DeadlineExceeded);
    });
    const values = createContextValues()
      .set(callState, state)
      .set(answerDelivery, delivery)
      .set(transportAbort, () => cut(res))
      .set(streamOutcome, (code) => {
        if (record !== undefined) record.rpcCode = grpcCodeName(code);
      });
    try {
      request = universalRequestFromNodeRequest(req, res, undefined, values);
      if (text) request = fromGrpcWebText(request);
    } catch {
      const error = new ConnectError("malformed request: no valid authority (Host header)", Code.InvalidArgument);
      if (record !== undefined) record.rpcCode = grpcCodeName(error.code);
      const answer = errorResponse(protocolOf(req.method, req.headers["content-type"]), error, undefined);
      void write(text ? toGrpcWebText(answer) : answer, res, handler.method.name, delivery);
      return;
    }
    // A stream lasts as long as its client wants: its deadline is the client's own, uncut.
    if (handler.method.methodKind !== "server_streaming") capDeadline(request.header, options.maxDeadlineMs);
    handler(request).then(
      (response) => {
        const answer = state.reached ? response : unreadable(response, state, protocolOf(request.method, request.header.get("content-type")));
        // Cut at its deadline already (the implementation returned it too late to be sent): that is its outcome.
        if (record !== undefined && !delivery.abandoned) record.rpcCode = grpcCodeName(outcome(state, answer, response));
        return write(text ? toGrpcWebText(answer) : answer, res, handler.method.name, delivery);
      },
      (reason: unknown) => {
        delivery.settle();
        report(reason, handler.method.name);
      },
    );
  };
}

/** Ends the response's transport at once: HTTP/2 resets the stream only, HTTP/1.1 closes the connection. */
function cut(res: HttpResponse): void {
  if ("stream" in res) res.stream.close(http2.constants.NGHTTP2_CANCEL);
  else res.destroy();
}

// gRPC-web's text mode (application/grpc-web-text): the same frames as application/grpc-web+proto, in base64.
// Google's grpc-web client uses it by default, and streams only in it (its binary mode reads the whole response
// first). connect implements the binary mode; the door translates: the request body is decoded before connect
// reads it, and each chunk connect writes is sent as base64 of its own, padded, which the client decodes as it
// arrives (PROTOCOL-WEB.md allows separately encoded chunks; the client decodes each complete 4-character group).

function isGrpcWebText(contentType: string | string[] | undefined): boolean {
  const type = (Array.isArray(contentType) ? contentType[0] : contentType)?.toLowerCase() ?? "";
  return type.startsWith("application/grpc-web-text");
}

/** The request as connect's gRPC-web binary mode reads it. */
function fromGrpcWebText(request: UniversalServerRequest): UniversalServerRequest {
  const type = request.header.get("content-type") ?? "";
  // application/grpc-web-text, application/grpc-web-text+proto: both are protobuf.
  request.header.set("content-type", type.replace(/^application\/grpc-web-text(\+proto)?/i, "application/grpc-web+proto"));
  const body = request.body;
  if (typeof body !== "object" || body === null || !(Symbol.asyncIterator in body)) return request;
  return { ...request, body: decodeBase64Stream(body as AsyncIterable<Uint8Array>) };
}

/** Base64 text arriving in any chunks, possibly as several padded segments, as the bytes it encodes. */
async function* decodeBase64Stream(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  let pending = "";
  for await (const chunk of chunks) {
    pending += Buffer.from(chunk).toString("latin1").replace(/\s+/g, "");
    // Whole 4-character groups decode on their own (a padded group ends its segment).
    const whole = pending.length - (pending.length % 4);
    if (whole > 0) {
      yield decodeSegments(pending.slice(0, whole));
      pending = pending.slice(whole);
    }
  }
  if (pending.length > 0) yield decodeSegments(pending);
}

function decodeSegments(text: string): Uint8Array {
  if (!/^[A-Za-z0-9+/=_-]*$/.test(text)) throw new ConnectError("malformed request: the grpc-web-text body is not base64", Code.InvalidArgument);
  const parts = text.match(/[^=]+=*|=+/g) ?? [];
  return new Uint8Array(Buffer.concat(parts.map((part) => Buffer.from(part, "base64"))));
}

/** connect's gRPC-web answer in text mode: each chunk in base64 of its own, as the client asked. */
function toGrpcWebText(response: UniversalServerResponse): UniversalServerResponse {
  const header = new Headers(response.header);
  const type = header.get("content-type");
  if (type !== null && type.toLowerCase().startsWith("application/grpc-web")) header.set("content-type", "application/grpc-web-text+proto");
  header.delete("content-length");
  const body = response.body;
  if (body === undefined) return { ...response, header };
  return { ...response, header, body: encodeBase64Stream(body) };
}

async function* encodeBase64Stream(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of chunks) if (chunk.byteLength > 0) yield new Uint8Array(Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("base64"), "latin1"));
}

const doors: Record<Protocol, Door> = { connect: "connect", grpc: "grpc", "grpc-web": "grpc_web" };

/**
 * The call's gRPC code: the implementation's when it was reached; else INVALID_ARGUMENT when `unreadable` replaced
 * the answer, the error the call was aborted with, or what the HTTP status says (connect refuses a wrong method,
 * media type or protocol version before anything else).
 */
function outcome(state: CallState, answer: UniversalServerResponse, original: UniversalServerResponse): Code | 0 {
  if (state.code !== undefined) return state.code;
  if (answer !== original) return Code.InvalidArgument;
  if (state.failure !== undefined) return ConnectError.from(state.failure).code;
  return answer.status === 200 ? Code.Unknown : codeFromHttpStatus(answer.status);
}

function write(response: UniversalServerResponse, res: HttpResponse, method: string, delivery: Delivery): Promise<void> {
  return universalResponseToNodeResponse(response, res).catch((reason: unknown) => {
    delivery.settle();
    // Cut at its deadline by the door itself: the write's failure is that cut.
    if (!delivery.abandoned) report(reason, method);
  });
}

interface Delivery extends AnswerDelivery {
  /** Marks the answer as never to be sent: a call that fails before its answer is written. */
  settle(): void;
  readonly abandoned: boolean;
}

/**
 * The call's AnswerDelivery: sent once the response has finished (its last bytes handed to the transport) or closed
 * (the client gone, the stream reset, the connection ended by shutdown), whichever comes first. Not when the promise
 * of universalResponseToNodeResponse settles: after the last bytes it waits for an 'end' event that Node's responses
 * never emit. Abandoned, the response is cut (gRPC's RST_STREAM CANCEL on HTTP/2) and counted as DEADLINE_EXCEEDED.
 * Written only when what the bytes go into finished: an HTTP/2 response's stream, whose 'finish' comes once every
 * write of it has completed (the compatibility response says 'finish' whenever its stream closes, reset or not), or
 * the HTTP/1.1 response, which says it once its last write has.
 */
export function deliveryOf(res: HttpResponse, onAbandon: () => void): Delivery {
  let settled = false;
  let abandoned = false;
  let resolve!: (written: boolean) => void;
  const written = new Promise<boolean>((r) => (resolve = r));
  const writable: EventEmitter = "stream" in res ? res.stream : res;
  const end = (finished: boolean) => {
    if (settled) return;
    settled = true;
    writable.off("finish", onFinish);
    res.off("close", onClose);
    resolve(finished);
  };
  const onFinish = () => end(true);
  const onClose = () => end(false);
  writable.once("finish", onFinish);
  res.once("close", onClose);
  return {
    sent: written.then(() => undefined),
    written,
    settle: onClose,
    get abandoned() {
      return abandoned;
    },
    abandon: () => {
      if (settled) return;
      abandoned = true;
      onAbandon();
      cut(res);
    },
  };
}

function report(reason: unknown, method: string): void {
  const code = ConnectError.from(reason).code;
  // The client went away while the answer was written: nothing to tell anyone.
  if (code === Code.Aborted || code === Code.Canceled) return;
  log.error("rpc door failed", { method, error: reason });
}

type Protocol = "connect" | "grpc" | "grpc-web";

function protocolOf(method: string | undefined, contentType: string | string[] | null | undefined): Protocol {
  const type = (Array.isArray(contentType) ? contentType[0] : contentType)?.toLowerCase() ?? "";
  if (method === "GET") return "connect";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/**
 * The response to a call that never reached the implementation: as the handler made it, unless it ended with
 * INTERNAL or UNKNOWN, which before the implementation only the request's bytes can cause.
 */
function unreadable(response: UniversalServerResponse, state: CallState, protocol: Protocol): UniversalServerResponse {
  if (state.failure === undefined) return response;
  const failure = ConnectError.from(state.failure);
  if (failure.code !== Code.Internal && failure.code !== Code.Unknown) return response;
  const detail = state.failure instanceof ConnectError ? state.failure.rawMessage : state.failure instanceof Error ? state.failure.message : "";
  const error = new ConnectError(detail === "" ? "malformed request" : `malformed request: ${detail}`, Code.InvalidArgument);
  if (response.body !== undefined) void drain(response.body);
  return errorResponse(protocol, error, response.header);
}

async function drain(body: AsyncIterable<Uint8Array>): Promise<void> {
  try {
    for await (const chunk of body) void chunk;
  } catch {
    // the original answer is dropped: its end does not matter
  }
}

/** An error answer in the call's protocol, as connect writes one. */
function errorResponse(protocol: Protocol, error: ConnectError, original: Headers | undefined): UniversalServerResponse {
  const contentType = original?.get("content-type");
  switch (protocol) {
    case "connect": {
      const body = errorToJsonBytes(error, undefined);
      return {
        status: codeToHttpStatus(error.code),
        header: new Headers({ "content-type": "application/json", "content-length": String(body.byteLength) }),
        body: createAsyncIterable([body]),
      };
    }
    case "grpc":
      return {
        status: 200,
        header: new Headers({ "content-type": contentType ?? "application/grpc+proto" }),
        body: createAsyncIterable<Uint8Array>([]),
        trailer: setTrailerStatus(new Headers(), error),
      };
    case "grpc-web":
      return {
        status: 200,
        header: new Headers({ "content-type": contentType ?? "application/grpc-web+proto" }),
        body: createAsyncIterable([encodeEnvelope(trailerFlag, trailerSerialize(setTrailerStatus(new Headers(), error)))]),
      };
  }
}

const grpcUnitMs: ReadonlyMap<string, number> = new Map([
  ["H", 3_600_000],
  ["M", 60_000],
  ["S", 1000],
  ["m", 1],
  ["u", 0.001],
  ["n", 0.000_001],
]);

/**
 * Cuts the client's deadline to `maxMs`, in the header connect reads it from: Connect's connect-timeout-ms, gRPC's
 * and gRPC-web's grpc-timeout. A value in neither header's syntax is left alone, for connect to refuse with
 * INVALID_ARGUMENT.
 */
export function capDeadline(header: Headers, maxMs: number): void {
  const connect = header.get("connect-timeout-ms");
  if (connect !== null && /^\d{1,10}$/.test(connect) && Number(connect) > maxMs) header.set("connect-timeout-ms", String(maxMs));
  const grpc = header.get("grpc-timeout");
  const match = grpc === null ? null : /^(\d{1,8})([HMSmun])$/.exec(grpc);
  if (match !== null && Number(match[1]) * (grpcUnitMs.get(match[2] as string) ?? 0) > maxMs) header.set("grpc-timeout", `${maxMs}m`);
}

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * connect-node's gzip and brotli at the REST door's levels and window. Its own compress at zlib's defaults: brotli
 * quality 11 cost 1.7 s of server CPU for one 100-trace page, which any client could ask for with
 * `grpc-accept-encoding: br`. Decompression (of request bodies) is connect-node's, with its size bound.
 */
export const rpcCompressions: Compression[] = [
  {
    ...compressionGzip,
    compress: async (bytes) => new Uint8Array(await gzipped(bytes, { level: gzipLevel })),
  },
  {
    ...compressionBrotli,
    compress: async (bytes) => new Uint8Array(await brotli(bytes, { params: brotliParams })),
  },
];
