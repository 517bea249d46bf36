import type { DescMessage, DescMethod, DescMethodUnary, MessageShape } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import vary from "vary";
import type { HttpHandler, HttpRequest, HttpResponse } from "../server/single-port.ts";
import { TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import { publicError, restStatus } from "../server/errors.ts";
import { jsonBytes } from "../present/json-text.ts";
import { nameRequest } from "../observability/request-context.ts";
import { presentMasterchainInfo } from "../present/v3/block.ts";
import { TracesJsonEncoder } from "../encode/v3-json/traces.ts";
import { writeTransactionsResponse } from "../encode/v3-json/transactions.ts";
import { writeBlockTransactionsExt } from "../encode/v2-json/block-transactions.ts";
import type { TonQueryServiceImpl } from "../service/service.ts";
import { cacheControl, entityTag, notModified, TracePageFinality } from "./caching.ts";
import { chooseCoding, type CompressionSettings, drained, noCompression, writeCoded } from "./compression.ts";
import { adjacentTransactionsQuery, blockTransactionsExtQuery, tracesQuery } from "./queries.ts";

/** toncenter's two JSON dialects: v3 errors are {"error"}, v2 wraps everything in {"ok", ...}. */
type Dialect = "v3" | "v2";

/** A successful answer: its body, serialised, in pieces to be sent one after the other, and how long it may be cached. */
interface RestAnswer {
  body: Buffer[];
  /** What the ETag is computed over, when not the whole body. */
  content?: Buffer[];
  cacheControl: string;
}

/**
 * The v2 envelope's content without toncenter's `@extra` stamp (the time of the answer, the result's last member):
 * two answers that differ only in it are the same answer, and must have the same ETag for If-None-Match to work.
 */
function withoutV2Stamp(body: Buffer): Buffer {
  const stamp = body.lastIndexOf(',"@extra":"');
  return stamp < 0 ? body : body.subarray(0, stamp);
}

interface Route {
  dialect: Dialect;
  method: DescMethod;
  handle(query: URLSearchParams, context: HandlerContext): Promise<RestAnswer>;
}

/** A service method as the REST door calls it: `finish` runs while the request still holds its admission. */
type ServiceCall<I, R> = (request: I, context: HandlerContext, finish: (response: R) => RestAnswer) => Promise<RestAnswer>;

/**
 * Binds a legacy path to an RPC: parse the query into the RPC's request message (bad input throws
 * InvalidArgument), call the same service method the RPC doors call, present the result as legacy JSON with the
 * Cache-Control that `caching` gives the result (see caching.ts).
 */
function route<I extends DescMessage, O extends DescMessage, R>(
  dialect: Dialect,
  method: DescMethodUnary<I, O>,
  parse: (query: URLSearchParams) => MessageShape<I>,
  call: ServiceCall<MessageShape<I>, R>,
  present: (response: R, request: MessageShape<I>) => unknown,
  caching: (response: R) => string,
): Route {
  return {
    dialect,
    method,
    handle(query, context) {
      const request = parse(query);
      return call(request, context, (response) => {
        const presented = present(response, request);
        const body = jsonBytes(dialect === "v2" ? { ok: true, result: presented } : presented);
        return { body: [body], content: dialect === "v2" ? [withoutV2Stamp(body)] : undefined, cacheControl: caching(response) };
      });
    },
  };
}

export function restRoutes(service: TonQueryServiceImpl): Map<string, Route> {
  const m = TonQueryService.method;
  return new Map([
    [
      "/api/v3/masterchainInfo",
      route(
        "v3",
        m.getMasterchainInfo,
        () => create(m.getMasterchainInfo.input),
        (request, context, finish) => service.getMasterchainInfo(request, context, finish),
        presentMasterchainInfo,
        () => cacheControl.latestBlock,
      ),
    ],
    [
      "/api/v3/adjacentTransactions",
      {
        dialect: "v3",
        method: m.getAdjacentTransactions,
        handle(query, context) {
          // A transaction's children may still be on their way (a pending trace).
          return service.loadAdjacentTransactions(adjacentTransactionsQuery(query), context, (loaded) => ({
            body: writeTransactionsResponse(loaded),
            cacheControl: cacheControl.revalidate,
          }));
        },
      },
    ],
    [
      "/api/v3/traces",
      {
        dialect: "v3",
        method: m.getTraces,
        async handle(query, context) {
          const request = tracesQuery(query);
          let page: TracePageFinality<Buffer[]> | undefined;
          const body = await service.getTracesInto(request, context, () => (page = new TracePageFinality(request, new TracesJsonEncoder(request))));
          return { body, cacheControl: (page as TracePageFinality<Buffer[]>).cacheControl() };
        },
      },
    ],
    [
      "/api/v2/getBlockTransactionsExt",
      {
        dialect: "v2",
        method: m.getBlockTransactionsExt,
        handle(query, context) {
          return service.loadBlockTransactionsExt(blockTransactionsExtQuery(query), context, (loaded) => {
            // The ETag leaves the time stamp out, as withoutV2Stamp does for the other v2 answers.
            const { content, stamp } = writeBlockTransactionsExt(loaded);
            return {
              body: [...content, stamp],
              content,
              // The block exists (else NotFound). An empty page (a cursor past the end) is final too, but costs nothing
              // to answer again: only pages that hold transactions are declared final.
              cacheControl: loaded.page.rows.length > 0 ? cacheControl.finalBlockPage : cacheControl.revalidate,
            };
          });
        },
      },
    ],
  ]);
}

export interface RestOptions {
  service: TonQueryServiceImpl;
  shutdownSignal: AbortSignal;
  /** Upper bound of one request, as a Connect client's deadline would be. */
  timeoutMs: number;
  /** Of every JSON answer that passes this door, the next handler's (/healthz, 404) included. */
  compression: CompressionSettings;
}

/** The compression settings of the door a response passed, for sendJson's callers outside the door's own code. */
const compressionOf = new WeakMap<object, CompressionSettings>();

/** The REST door: a Node request handler for the legacy paths; anything else goes to `next`. */
export function restHandler(options: RestOptions, next: HttpHandler): HttpHandler {
  const routes = restRoutes(options.service);
  return (req, res) => {
    compressionOf.set(res, options.compression);
    const url = requestUrl(req);
    if (url === undefined) {
      sendJson(res, 400, { error: "malformed request target" });
      return;
    }
    const found = routes.get(url.pathname);
    if (found === undefined) {
      next(req, res);
      return;
    }
    if (refusedMethod(req, res, found.dialect)) return;
    void serve(found, url, req, res, options);
  };
}

/** The request's target as a URL; undefined when it makes none (an absolute-form target whose host does not parse). */
export function requestUrl(req: HttpRequest): URL | undefined {
  try {
    return new URL(req.url ?? "/", "http://localhost");
  } catch {
    return undefined;
  }
}

/** Answers 405 (with Allow) to a method other than GET and HEAD, in the path's dialect; whether it did. */
export function refusedMethod(req: HttpRequest, res: HttpResponse, dialect: Dialect = "v3"): boolean {
  if (req.method === "GET" || req.method === "HEAD") return false;
  sendJson(res, 405, errorBody(dialect, 405, `method ${req.method} not allowed: use GET`), { allow: "GET, HEAD" });
  return true;
}

async function serve(found: Route, url: URL, req: HttpRequest, res: HttpResponse, options: RestOptions) {
  nameRequest("rest", found.method.name);
  const clientGone = new AbortController();
  res.once("close", () => clientGone.abort(connectionClosed));
  const context = createHandlerContext({
    service: TonQueryService,
    method: found.method,
    protocolName: "rest",
    requestMethod: req.method ?? "GET",
    url: url.toString(),
    timeoutMs: options.timeoutMs,
    shutdownSignal: options.shutdownSignal,
    requestSignal: clientGone.signal,
    requestHeader: headersOf(req),
  });
  try {
    const answer = await found.handle(url.searchParams, context);
    const headers = { etag: await entityTag(answer.content ?? answer.body), "cache-control": answer.cacheControl };
    if (notModified(req.headers, headers.etag)) sendNotModified(res, headers);
    else await sendBody(res, 200, answer.body, req.method === "HEAD", headers);
  } catch (err) {
    const error = publicError(err, `REST ${url.pathname}`);
    const status = restStatus(error.code);
    // A request shed under overload says when to come back (see Admission); RPC doors carry it as error metadata.
    const retryAfter = error.metadata.get("retry-after");
    sendJson(res, status, errorBody(found.dialect, status, error.rawMessage), retryAfter === null ? {} : { "retry-after": retryAfter }, req.method === "HEAD");
  } finally {
    context.abort(requestEnded);
  }
}

// Reasons made once: aborting without one builds a DOMException with its stack, twice per request (3 % of the
// server's CPU on masterchainInfo). Only work still running when its request is over ever sees them.
const connectionClosed = new ConnectError("the client's connection closed", Code.Canceled);
const requestEnded = new ConnectError("the request has been answered", Code.Canceled);

function errorBody(dialect: Dialect, status: number, message: string) {
  return dialect === "v2" ? { ok: false, error: message, code: status } : { error: message };
}

function headersOf(req: HttpRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** The part of an HTTP/1.1 or HTTP/2 response that writing a JSON body needs. */
interface ResponseSink {
  /** The request answered: its Accept-Encoding and method choose the body's coding. */
  readonly req: { readonly headers: IncomingHttpHeaders; readonly method?: string | undefined };
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  getHeader(name: string): number | string | string[] | undefined;
  setHeader(name: string, value: string): unknown;
  writeHead(status: number, headers: OutgoingHttpHeaders): unknown;
  write(chunk: Buffer): boolean;
  end(chunk: string | Buffer): unknown;
  destroy(): unknown;
  once(event: "drain" | "close", listener: () => void): unknown;
  off(event: "drain" | "close", listener: () => void): unknown;
}

/** A JSON answer that is not a REST path's 200 (an error, /healthz, a 404): never cached, unless `extraHeaders` says so. */
export function sendJson(res: ResponseSink, status: number, body: unknown, extraHeaders: Record<string, string> = {}, headOnly = false): void {
  void sendBody(res, status, jsonBytes(body), headOnly, { "cache-control": cacheControl.never, ...extraHeaders });
}

/**
 * Writes the response in batches, each after the client has taken the one before: a 25 MB page of 1000 traces
 * written at once held the event loop for 15-40 ms copying it into the socket's buffer, and kept a second copy
 * of the page there for as long as the client took to read it. A body the client asked to be compressed
 * (compression.ts) goes through the compressor batch by batch, with no Content-Length: its coded size is known
 * only at its end. HEAD gets the headers GET would, and no body. Never rejects.
 */
async function sendBody(res: ResponseSink, status: number, body: Buffer | readonly Buffer[], headOnly: boolean, extraHeaders: Record<string, string> = {}): Promise<void> {
  if (res.headersSent || res.writableEnded) return;
  const pieces = Buffer.isBuffer(body) ? [body] : body;
  const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
  const compression = compressionOf.get(res) ?? noCompression;
  const coding = chooseCoding(res.req.headers, length, compression);
  if (compression.enabled) varyOnAcceptEncoding(res);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    ...(coding === undefined ? { "content-length": length } : { "content-encoding": coding }),
    ...extraHeaders,
  });
  if (headOnly || res.req.method === "HEAD") {
    res.end("");
    return;
  }
  if (coding !== undefined) {
    await writeCoded(res, coding, writeBatches(pieces));
    return;
  }
  for (const batch of writeBatches(pieces)) {
    if (res.destroyed) return;
    if (!res.write(batch)) await drained(res);
  }
  res.end("");
}

/** 304: the validator and caching headers a 200 would carry (RFC 9110 §15.4.5), no body. */
function sendNotModified(res: ResponseSink, headers: Record<string, string>): void {
  if ((compressionOf.get(res) ?? noCompression).enabled) varyOnAcceptEncoding(res);
  res.writeHead(304, headers);
  res.end("");
}

/** Adds Accept-Encoding to whatever Vary the response has already (CORS adds Origin). */
function varyOnAcceptEncoding(res: ResponseSink): void {
  const current = res.getHeader("vary");
  res.setHeader("vary", vary.append(Array.isArray(current) ? current.join(", ") : String(current ?? ""), "Accept-Encoding"));
}

/** Small pieces (a trace each) joined into writes of about 64 KB: one socket write per piece cost more than the copy. */
function* writeBatches(pieces: readonly Buffer[]): Generator<Buffer> {
  const target = 64 * 1024;
  let run: Buffer[] = [];
  let size = 0;
  for (const piece of pieces) {
    run.push(piece);
    size += piece.length;
    if (size >= target) {
      yield run.length === 1 ? piece : Buffer.concat(run, size);
      run = [];
      size = 0;
    }
  }
  if (run.length > 0) yield run.length === 1 ? (run[0] as Buffer) : Buffer.concat(run, size);
}

export function sendEmpty(res: ResponseSink, status: number, headers: OutgoingHttpHeaders): void {
  res.writeHead(status, headers);
  res.end("");
}
