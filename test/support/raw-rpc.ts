import { Code } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import http2 from "node:http2";
import net from "node:net";
import { pauseStream, type PausedStream } from "./paused-stream.ts";

// RPC calls made by hand, below any client library, to send what a client library never would (bytes that do not
// parse, odd headers) and to read exactly what the server answered: the HTTP status, the RPC code and message.

export type RawProtocol = "connect" | "grpc" | "grpc-web";
export const rawProtocols: RawProtocol[] = ["connect", "grpc", "grpc-web"];

export interface RawAnswer {
  /** HTTP status of the response. */
  status: number;
  /** The RPC outcome: Connect's error code, or gRPC's grpc-status; 0 for success. */
  code: Code | 0;
  message: string;
  /** The raw response body. */
  body: Buffer;
  headers: Record<string, string | string[] | undefined>;
}

export interface RawCallOptions {
  /** JSON instead of protobuf; ignored when `contentType` is given. */
  json?: boolean;
  contentType?: string;
  headers?: Record<string, string>;
  /** gRPC and gRPC-web: send `body` as it is instead of wrapping it in one uncompressed envelope. */
  enveloped?: boolean;
}

export function envelope(message: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

const servicePath = "/tonquery.v1.TonQueryService/";

export async function rawCall(
  baseUrl: string,
  protocol: RawProtocol,
  method: string,
  body: Uint8Array | string,
  options: RawCallOptions = {},
): Promise<RawAnswer> {
  const bytes = typeof body === "string" ? Buffer.from(body) : Buffer.from(body);
  const subtype = options.json ? "json" : "proto";
  if (protocol === "connect") {
    const response = await fetch(`${baseUrl}${servicePath}${method}`, {
      method: "POST",
      headers: { "content-type": options.contentType ?? `application/${subtype}`, ...options.headers },
      body: bytes,
    });
    return connectAnswer(response);
  }
  const payload = options.enveloped ? bytes : envelope(bytes);
  if (protocol === "grpc-web") {
    const response = await fetch(`${baseUrl}${servicePath}${method}`, {
      method: "POST",
      headers: { "content-type": options.contentType ?? `application/grpc-web+${subtype}`, ...options.headers },
      body: payload,
    });
    const raw = Buffer.from(await response.arrayBuffer());
    const headers = Object.fromEntries(response.headers);
    const trailer = { ...headers, ...grpcWebTrailer(raw) };
    return { status: response.status, ...grpcStatus(trailer), body: raw, headers };
  }
  return grpcCall(baseUrl, method, payload, options.contentType ?? `application/grpc+${subtype}`, options.headers ?? {});
}

/** A Connect GET (unary, side-effect free procedures), with the query string given as is. */
export async function connectGet(baseUrl: string, method: string, query: string): Promise<RawAnswer> {
  return connectAnswer(await fetch(`${baseUrl}${servicePath}${method}?${query}`));
}

async function connectAnswer(response: Response): Promise<RawAnswer> {
  const raw = Buffer.from(await response.arrayBuffer());
  const headers = Object.fromEntries(response.headers);
  if (response.status === 200) return { status: 200, code: 0, message: "", body: raw, headers };
  let error: { code?: string; message?: string } = {};
  try {
    error = JSON.parse(raw.toString()) as typeof error;
  } catch {
    // not a Connect error body: reported with code undefined below
  }
  return { status: response.status, code: codeFromString(error.code ?? "") ?? Code.Unknown, message: error.message ?? "", body: raw, headers };
}

/** The gRPC-web trailer frame (flag 0x80) of a response body, as header lines. */
function grpcWebTrailer(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  for (let at = 0; at + 5 <= body.length; ) {
    const flags = body.readUInt8(at);
    const length = body.readUInt32BE(at + 1);
    const data = body.subarray(at + 5, at + 5 + length);
    if ((flags & 0x80) !== 0) {
      for (const line of data.toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) out[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    }
    at += 5 + length;
  }
  return out;
}

function grpcStatus(trailer: Record<string, string | string[] | undefined>): { code: Code | 0; message: string } {
  const status = trailer["grpc-status"];
  const message = trailer["grpc-message"];
  return {
    code: (status === undefined ? Code.Unknown : Number(status)) as Code | 0,
    message: typeof message === "string" ? decodeURIComponent(message) : "",
  };
}

function grpcCall(baseUrl: string, method: string, payload: Buffer, contentType: string, headers: Record<string, string>): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const request = session.request({ ":method": "POST", ":path": `${servicePath}${method}`, "content-type": contentType, te: "trailers", ...headers });
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    request.on("response", (h) => (responseHeaders = h));
    request.on("trailers", (t) => (trailers = t));
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("error", reject);
    request.on("end", () => {
      session.close();
      // A trailers-only answer carries its status in the headers.
      const all = { ...responseHeaders, ...trailers };
      resolve({ status: Number(responseHeaders[":status"]), ...grpcStatus(all), body: Buffer.concat(chunks), headers: responseHeaders });
    });
    request.end(payload);
  });
}

/** One HTTP/1.x exchange written byte for byte (for requests fetch refuses to send), answered with the raw response. */
export function rawHttp(baseUrl: string, text: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.end(text));
    let out = "";
    socket.on("data", (data: Buffer) => (out += data.toString("latin1")));
    socket.on("close", () => resolve(out));
    socket.on("error", reject);
  });
}

/** A call `pausedCall` made, held by its client after the first bytes of the answer. */
export type PausedCall = PausedStream<PausedOutcome>;

export interface PausedOutcome {
  answer: RawAnswer;
  /** The stream ended normally (END_STREAM), rather than by a reset. */
  complete: boolean;
  rstCode: number;
}

/**
 * A unary call over HTTP/2 in `protocol` (protobuf), whose client stops reading once the first bytes of the answer
 * have come: the stream's flow-control window (64 KB) then holds the server to what the client has not read, as a
 * slow or stalled client's would.
 */
export function pausedCall(baseUrl: string, protocol: RawProtocol, method: string, message: Uint8Array, headers: Record<string, string> = {}): Promise<PausedCall> {
  const session = http2.connect(baseUrl);
  session.on("error", () => {});
  const contentType = { connect: "application/proto", grpc: "application/grpc+proto", "grpc-web": "application/grpc-web+proto" }[protocol];
  const stream = session.request({
    ":method": "POST",
    ":path": `${servicePath}${method}`,
    "content-type": contentType,
    ...(protocol === "grpc" && { te: "trailers" }),
    ...headers,
  });
  const chunks: Buffer[] = [];
  let responseHeaders: http2.IncomingHttpHeaders = {};
  let trailers: http2.IncomingHttpHeaders = {};
  let complete = false;
  stream.on("response", (h) => (responseHeaders = h));
  stream.on("trailers", (t) => (trailers = t));
  stream.on("end", () => (complete = true));
  stream.on("error", () => {});
  const outcome = new Promise<PausedOutcome>((resolve) => {
    stream.on("close", () => {
      const body = Buffer.concat(chunks);
      const status = Number(responseHeaders[":status"]);
      const trailer = { ...responseHeaders, ...trailers, ...(protocol === "grpc-web" ? grpcWebTrailer(body) : {}) };
      const rpcStatus = protocol === "connect" ? { code: status === 200 ? (0 as const) : Code.Unknown, message: "" } : grpcStatus(trailer);
      resolve({ answer: { status, ...rpcStatus, body, headers: responseHeaders }, complete, rstCode: stream.rstCode ?? 0 });
      session.close();
    });
  });
  return new Promise((resolve, reject) => {
    stream.once("data", () => resolve(pauseStream(stream, responseHeaders, outcome)));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.once("close", () => reject(new Error("the stream closed before the answer's first bytes")));
    stream.end(protocol === "connect" ? Buffer.from(message) : envelope(message));
  });
}
