// Load-generator clients, one per protocol, kept light because they share two cores with the server and
// PostgreSQL. In "raw" mode each request is encoded once and every call only writes those bytes and reads the
// answer as bytes, checking the HTTP, Connect or gRPC status; the first answer is decoded and its size compared with
// the handler's in-process answer. In "sdk" mode Connect, gRPC and gRPC-web go through @connectrpc clients (which
// decode every response: the client's decoding is then part of the latency). REST is plain node:http in both.
// HTTP/1.1 connections are kept alive (one per request in flight); gRPC uses one HTTP/2 connection, as gRPC
// clients do.

import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import type { Protocol } from "./args.ts";
import { type BenchCase, inputSchema, outputSchema } from "./cases.ts";
import { summarize, type ResponseSummary } from "./capture.ts";

/** A request the server answered with a failure; `status` is the HTTP status ("504") or the gRPC code ("DEADLINE_EXCEEDED"). */
export class RequestFailed extends Error {
  readonly status: string;
  constructor(message: string, status: string) {
    super(message);
    this.status = status;
  }
}

/** An answer past the server's own deadline (HTTP 504, gRPC DEADLINE_EXCEEDED): load shed by design, not a fault. */
export class DeadlineExceeded extends RequestFailed {}

/**
 * A REST answer whose 200 came and whose body did not end (the server closed the connection): a page streamed past
 * REST_HOLD_MAX_BYTES that the server cannot finish (its deadline passed, the database failed under it) can only be
 * cut, where a held one would be answered 504 or 503. Counted with the answers past the deadline.
 */
export class AnswerCut extends DeadlineExceeded {}

/** What an AnswerCut is counted under (see failureStatus). */
export const answerCutStatus = "cut after its head";

function failure(message: string, status: string, deadline: boolean): Error {
  return deadline ? new DeadlineExceeded(message, status) : new RequestFailed(message, status);
}

/** The canonical gRPC name of a status code (4 → DEADLINE_EXCEEDED), as the gRPC specification spells it. */
function grpcCodeName(code: number): string {
  const name = Code[code] as string | undefined;
  return name === undefined ? `grpc-status ${code}` : name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** The failure of a gRPC or gRPC-web answer whose grpc-status (digits) is not 0, or of one without a status. */
function grpcFailure(protocol: string, grpcStatus: string): Error {
  const status = /^\d+$/.test(grpcStatus) ? grpcCodeName(Number(grpcStatus)) : grpcStatus;
  return failure(`${protocol} ${status}`, status, grpcStatus === "4");
}

/** Whether a failed request was answered with the server's deadline error, by a raw client or an SDK one. */
export function isDeadlineExceeded(err: unknown): boolean {
  return err instanceof DeadlineExceeded || (err instanceof ConnectError && err.code === Code.DeadlineExceeded);
}

/**
 * What a failed request is counted under: the status it was answered with (HTTP status, gRPC code name), or the
 * error code of a request that got no answer (ECONNRESET).
 */
export function failureStatus(err: unknown): string {
  if (err instanceof RequestFailed) return err.status;
  if (err instanceof ConnectError) return grpcCodeName(err.code);
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : "no answer";
}
import type { Send } from "./load.ts";


export interface ProtocolClient {
  /** A sender for one case; `check` sends once and returns the decoded answer's size. */
  prepare(c: BenchCase): { send: Send; check(): Promise<ResponseSummary> };
  close(): Promise<void>;
}

interface Http1Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  bytes: number;
  body: Buffer | undefined;
}

interface Http1Request {
  method: string;
  path: string;
  headers: http.OutgoingHttpHeaders;
  body?: Buffer;
}

/** One request on a keep-alive agent; an abort destroys its connection (the server sees the client go). */
function http1(agent: http.Agent, port: number, r: Http1Request, keep: boolean, signal: AbortSignal | undefined): Promise<Http1Response> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: r.method, path: r.path, agent, headers: r.headers, signal }, (res) => {
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (keep) chunks.push(chunk);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, body: keep ? Buffer.concat(chunks) : undefined }));
      res.on("error", (err) => {
        // Aborted by the load generator itself (the run bound): not the server's failure.
        if (signal?.aborted === true) reject(err);
        else reject(new AnswerCut(`REST ${res.statusCode ?? 0} ${answerCutStatus} (${err.message})`, answerCutStatus));
      });
    });
    req.on("error", reject);
    req.end(r.body);
  });
}

/** A body or gRPC message coded as Content-Encoding / grpc-encoding says; only the answer check decodes. */
function decoded(body: Buffer, coding: string | string[] | undefined): Buffer {
  if (coding === "gzip") return gunzipSync(body);
  if (coding === "br") return brotliDecompressSync(body);
  if (coding === undefined || coding === "identity") return body;
  throw new Error(`unexpected coding ${String(coding)}`);
}

/** The headers that ask for a compressed answer in each protocol (see BenchCase.acceptEncoding). */
function acceptEncoding(c: BenchCase, header: "accept-encoding" | "grpc-accept-encoding"): http.OutgoingHttpHeaders {
  return c.acceptEncoding === undefined ? {} : { [header]: c.acceptEncoding };
}

const rpcPath = (c: BenchCase) => `/${TonQueryService.typeName}/${TonQueryService.method[c.method].name}`;

function encode(c: BenchCase): Uint8Array {
  return toBinary(inputSchema(c.method), c.request as MessageShape<DescMessage>);
}

function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The messages and the trailer of a gRPC-web body. */
function unframe(body: Buffer, coding?: string | string[]): { messages: Buffer[]; trailer: string } {
  const messages: Buffer[] = [];
  let trailer = "";
  let at = 0;
  while (at + 5 <= body.length) {
    const flags = body[at] ?? 0;
    const length = body.readUInt32BE(at + 1);
    const payload = body.subarray(at + 5, at + 5 + length);
    if (flags & 0x80) trailer += payload.toString("latin1");
    else messages.push(flags & 0x01 ? decoded(payload, coding) : payload);
    at += 5 + length;
  }
  return { messages, trailer };
}

class RestClient implements ProtocolClient {
  private readonly agent: http.Agent;
  private readonly port: number;
  constructor(port: number, concurrency: number) {
    this.port = port;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  }
  prepare(c: BenchCase) {
    const request: Http1Request = { method: "GET", path: c.restPath, headers: acceptEncoding(c, "accept-encoding") };
    const call = async (keep: boolean, signal?: AbortSignal) => {
      const res = await http1(this.agent, this.port, request, keep, signal);
      if (res.status !== 200) throw failure(`REST ${res.status}`, String(res.status), res.status === 504);
      return res;
    };
    const send: Send = async (signal) => (await call(false, signal)).bytes;
    return {
      send,
      check: async () => {
        const res = await call(true);
        return summarize(c.method, JSON.parse(decoded(res.body ?? Buffer.alloc(0), res.headers["content-encoding"]).toString("utf8")));
      },
    };
  }
  async close() {
    this.agent.destroy();
  }
}

class RawConnectClient implements ProtocolClient {
  private readonly agent: http.Agent;
  private readonly port: number;
  constructor(port: number, concurrency: number) {
    this.port = port;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  }
  prepare(c: BenchCase) {
    const body = Buffer.from(encode(c));
    const headers = { "content-type": "application/proto", "connect-protocol-version": "1", "content-length": body.length, ...acceptEncoding(c, "accept-encoding") };
    const request: Http1Request = { method: "POST", path: rpcPath(c), headers, body };
    const call = async (keep: boolean, signal?: AbortSignal) => {
      const res = await http1(this.agent, this.port, request, keep, signal);
      if (res.status !== 200) throw failure(`Connect ${res.status}`, String(res.status), res.status === 504);
      return res;
    };
    const send: Send = async (signal) => (await call(false, signal)).bytes;
    return {
      send,
      check: async () => {
        const res = await call(true);
        return summarize(c.method, fromBinary(outputSchema(c.method), decoded(res.body ?? Buffer.alloc(0), res.headers["content-encoding"])));
      },
    };
  }
  async close() {
    this.agent.destroy();
  }
}

class RawGrpcWebClient implements ProtocolClient {
  private readonly agent: http.Agent;
  private readonly port: number;
  constructor(port: number, concurrency: number) {
    this.port = port;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  }
  prepare(c: BenchCase) {
    const body = frame(encode(c));
    const headers = { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", "content-length": body.length, ...acceptEncoding(c, "grpc-accept-encoding") };
    const request: Http1Request = { method: "POST", path: rpcPath(c), headers, body };
    const call = async (signal?: AbortSignal) => {
      const res = await http1(this.agent, this.port, request, true, signal);
      const { messages, trailer } = unframe(res.body ?? Buffer.alloc(0), res.headers["grpc-encoding"]);
      const status = /grpc-status:\s*(\d+)/i.exec(trailer)?.[1] ?? String(res.headers["grpc-status"] ?? "");
      if (res.status !== 200) throw failure(`gRPC-web HTTP ${res.status}`, `HTTP ${res.status}`, false);
      if (status !== "0") throw grpcFailure("gRPC-web", status || "no grpc-status");
      return { bytes: res.bytes, message: messages[0] };
    };
    const send: Send = async (signal) => (await call(signal)).bytes;
    return {
      send,
      check: async () => summarize(c.method, fromBinary(outputSchema(c.method), (await call()).message ?? Buffer.alloc(0))),
    };
  }
  async close() {
    this.agent.destroy();
  }
}

class RawGrpcClient implements ProtocolClient {
  private readonly session: http2.ClientHttp2Session;
  constructor(port: number) {
    // Large windows, as gRPC's own clients size them from the bandwidth-delay product: 64 KiB windows would
    // throttle multi-megabyte trace pages on the client's side, not the server's.
    this.session = http2.connect(`http://127.0.0.1:${port}`, { maxSessionMemory: 512, settings: { initialWindowSize: 16 * 1024 * 1024 } });
    this.session.on("error", () => {});
    this.session.on("connect", () => this.session.setLocalWindowSize(256 * 1024 * 1024));
  }
  prepare(c: BenchCase) {
    const body = frame(encode(c));
    const path = rpcPath(c);
    const call = (keep: boolean, signal?: AbortSignal) =>
      new Promise<{ bytes: number; body: Buffer | undefined; coding: string | undefined }>((resolve, reject) => {
        const request = { ":method": "POST", ":path": path, "content-type": "application/grpc+proto", te: "trailers", ...acceptEncoding(c, "grpc-accept-encoding") };
        const stream = this.session.request(request, { signal });
        let bytes = 0;
        let status: string | undefined;
        let coding: string | undefined;
        const chunks: Buffer[] = [];
        stream.on("response", (headers) => {
          coding = headers["grpc-encoding"] as string | undefined;
          if (headers[":status"] !== 200) status = `HTTP ${headers[":status"]}`;
          else if (headers["grpc-status"] !== undefined) status = String(headers["grpc-status"]);
        });
        stream.on("trailers", (trailers) => {
          status ??= String(trailers["grpc-status"] ?? "no grpc-status");
        });
        stream.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
          if (keep) chunks.push(chunk);
        });
        stream.on("error", reject);
        stream.on("close", () => {
          if (status === "0") resolve({ bytes, body: keep ? Buffer.concat(chunks) : undefined, coding });
          else reject(grpcFailure("gRPC", status ?? `stream reset ${stream.rstCode}`));
        });
        stream.end(body);
      });
    const send: Send = async (signal) => (await call(false, signal)).bytes;
    return {
      send,
      check: async () => {
        const res = await call(true);
        return summarize(c.method, fromBinary(outputSchema(c.method), unframe(res.body ?? Buffer.alloc(0), res.coding).messages[0] ?? Buffer.alloc(0)));
      },
    };
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.session.close(() => resolve()));
  }
}

class SdkClient implements ProtocolClient {
  private readonly client: Client<typeof TonQueryService>;
  private readonly agent: http.Agent;
  constructor(protocol: "connect" | "grpc" | "grpc-web", port: number, concurrency: number) {
    const baseUrl = `http://127.0.0.1:${port}`;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
    const transport =
      protocol === "grpc"
        ? createGrpcTransport({ baseUrl })
        : protocol === "connect"
          ? createConnectTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { agent: this.agent } })
          : createGrpcWebTransport({ baseUrl, httpVersion: "1.1", nodeOptions: { agent: this.agent } });
    this.client = createClient(TonQueryService, transport);
  }
  prepare(c: BenchCase) {
    const call = (signal?: AbortSignal): Promise<unknown> => {
      switch (c.method) {
        case "getMasterchainInfo":
          return this.client.getMasterchainInfo(c.request, { signal });
        case "getAdjacentTransactions":
          return this.client.getAdjacentTransactions(c.request, { signal });
        case "getTraces":
          return this.client.getTraces(c.request, { signal });
        case "getBlockTransactionsExt":
          return this.client.getBlockTransactionsExt(c.request, { signal });
      }
    };
    const send: Send = async (signal) => {
      await call(signal);
      return 0;
    };
    return {
      send,
      check: async () => summarize(c.method, await call()),
    };
  }
  async close() {
    this.agent.destroy();
  }
}

/** A fresh client for one (protocol, concurrency) run: connections are opened during the warm-up. */
export function createProtocolClient(protocol: Protocol, mode: "raw" | "sdk", port: number, concurrency: number): ProtocolClient {
  if (protocol === "rest") return new RestClient(port, concurrency);
  if (mode === "sdk") return new SdkClient(protocol, port, concurrency);
  switch (protocol) {
    case "connect":
      return new RawConnectClient(port, concurrency);
    case "grpc":
      return new RawGrpcClient(port);
    case "grpc-web":
      return new RawGrpcWebClient(port, concurrency);
  }
}
