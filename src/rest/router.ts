import type { DescMethod } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import type { OutgoingHttpHeaders } from "node:http";
import type { HttpHandler, HttpRequest, HttpResponse } from "../server/single-port.ts";
import { type GetMasterchainInfoResponse, TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import { publicError, restStatus } from "../server/errors.ts";
import { jsonBytes } from "../present/json-text.ts";
import { nameRequest, type RequestRecord } from "../observability/request-context.ts";
import { log } from "../runtime/log.ts";
import { presentMasterchainInfo } from "../present/v3/block.ts";
import { TracesJsonEncoder } from "../encode/v3-json/traces.ts";
import { writeTransactionsResponse } from "../encode/v3-json/transactions.ts";
import { writeBlockTransactionsExt } from "../encode/v2-json/block-transactions.ts";
import type { TonQueryServiceImpl } from "../service/service.ts";
import { cacheControl, entityTag, notModified, smallEntityTag, TracePageFinality } from "./caching.ts";
import { type BodySettings, plainBody, ResponseBody, type ResponseSink, sendBody, sendNotModified } from "./body.ts";
import { adjacentTransactionsQuery, blockTransactionsExtQuery, tracesQuery } from "./queries.ts";

/** toncenter's two JSON dialects: v3 errors are {"error"}, v2 wraps everything in {"ok", ...}. */
type Dialect = "v3" | "v2";

/** A successful answer: its body, serialised, in pieces to be sent one after the other, and how long it may be cached. */
interface RestAnswer {
  body: Buffer[];
  /** What the ETag is computed over, when not the whole body. */
  content?: Buffer[];
  /** The ETag, when the answer comes with it (an answer shared by several requests, hashed once). */
  etag?: string;
  cacheControl: string;
}

interface Route {
  dialect: Dialect;
  method: DescMethod;
  /**
   * Answers the request. A route whose answer can be large writes it into `body` as it is made (the traces page),
   * which streams it once it outgrows REST_HOLD_MAX_BYTES; the answer returned then holds `body.held()`, and is
   * not used once `body.sent`. The others return their answer whole and leave `body` alone.
   */
  handle(query: URLSearchParams, context: HandlerContext, body: ResponseBody): Promise<RestAnswer>;
}

/**
 * masterchainInfo's JSON and ETag, made once per read of the range: the requests one read serves (see SharedRead)
 * get the same blocks, hence the same answer. Keyed by the read's newest block, which they share.
 */
const masterchainAnswers = new WeakMap<object, RestAnswer>();

function masterchainAnswer(response: GetMasterchainInfoResponse): RestAnswer {
  const key = response.last ?? response;
  let answer = masterchainAnswers.get(key);
  if (answer === undefined) {
    const body = jsonBytes(presentMasterchainInfo(response));
    answer = { body: [body], etag: smallEntityTag(body), cacheControl: cacheControl.latestBlock };
    masterchainAnswers.set(key, answer);
  }
  return answer;
}

export function restRoutes(service: TonQueryServiceImpl): Map<string, Route> {
  const m = TonQueryService.method;
  return new Map([
    [
      "/api/v3/masterchainInfo",
      {
        dialect: "v3",
        method: m.getMasterchainInfo,
        handle(_query, context) {
          return service.getMasterchainInfo(create(m.getMasterchainInfo.input), context, masterchainAnswer);
        },
      },
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
        async handle(query, context, body) {
          const request = tracesQuery(query);
          let page: TracePageFinality<Buffer[]> | undefined;
          await service.getTracesInto(
            request,
            context,
            (run) => {
              body.begin(run.responseHeaders);
              return (page = new TracePageFinality(request, new TracesJsonEncoder(request, body)));
            },
            () => body.sent,
          );
          return { body: body.held(), cacheControl: (page as TracePageFinality<Buffer[]>).cacheControl() };
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
            // The ETag leaves out the `@extra` stamp (the time of the answer): two answers that differ only in it are the
            // same answer, and must have the same ETag for If-None-Match to work.
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

/** The door's body settings apply to every JSON answer that passes it, the next handler's (/healthz, 404) included. */
export interface RestOptions extends BodySettings {
  service: TonQueryServiceImpl;
  shutdownSignal: AbortSignal;
  /** Upper bound of one request, as a Connect client's deadline would be. */
  timeoutMs: number;
}

/** The body settings of the door a response passed, for sendJson's callers outside the door's own code. */
const bodySettingsOf = new WeakMap<object, BodySettings>();

/** The REST door: a Node request handler for the legacy paths; anything else goes to `next`. */
export function restHandler(options: RestOptions, next: HttpHandler): HttpHandler {
  const routes = restRoutes(options.service);
  return (req, res) => {
    bodySettingsOf.set(res, options);
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
  const record = nameRequest("rest", found.method.name);
  const context = createHandlerContext({
    service: TonQueryService,
    method: found.method,
    protocolName: "rest",
    requestMethod: req.method ?? "GET",
    url: url.toString(),
    timeoutMs: options.timeoutMs,
    shutdownSignal: options.shutdownSignal,
    requestHeader: headerPairs(req),
  });
  // The client going away aborts the context itself: a controller of its own, linked into the context's, cost one
  // more AbortController and two listeners per request.
  let clientGone = false;
  res.once("close", () => {
    clientGone = true;
    context.abort(connectionClosed);
  });
  const body = new ResponseBody(res, {
    compression: options.compression,
    holdMaxBytes: options.holdMaxBytes,
    signal: context.signal,
    responseHeader: context.responseHeader,
    // Finality (TracePageFinality) is known only once the page is read, after the head has gone out. "no-cache" is
    // the weakest claim a cacheable answer can make: a cache may keep the answer but must ask again before each use,
    // and with no ETag to revalidate with, that is a full request; so nothing stale is ever served from a cache,
    // which is all a final page's "immutable" would have added to (a streamed page is at least 1 MiB and rarely
    // asked twice).
    cacheControl: cacheControl.revalidate,
  });
  try {
    const answer = await found.handle(url.searchParams, context, body);
    if (await body.finish()) return;
    const headers = { etag: answer.etag ?? entityTag(answer.content ?? answer.body), "cache-control": answer.cacheControl };
    // Set by the service while it answered (X-Index-Seqno); a streamed answer's head took them already (ResponseBody).
    context.responseHeader.forEach((value, name) => res.setHeader(name, value));
    if (notModified(req.headers, headers.etag)) sendNotModified(res, headers, options.compression);
    else await sendBody(res, 200, answer.body, req.method === "HEAD", headers, options);
  } catch (err) {
    if (body.sent) {
      cutShort(err, body, res, record, url.pathname, clientGone);
      return;
    }
    const error = publicError(err, `REST ${url.pathname}`);
    const status = restStatus(error.code);
    // A request shed under overload says when to come back (see Admission); RPC doors carry it as error metadata.
    const retryAfter = error.metadata.get("retry-after");
    sendJson(res, status, errorBody(found.dialect, status, error.rawMessage), retryAfter === null ? {} : { "retry-after": retryAfter }, req.method === "HEAD");
  } finally {
    context.abort(requestEnded);
  }
}

/**
 * A streamed answer failed after its head went out (a statement's error, the deadline, shutdown, its snapshot lost
 * with its database member): no error answer can follow a 200, and the JSON so far must not pass for a whole one,
 * so the response ends abnormally (abortResponse), counted and logged once as the error it is. Nothing to do when
 * the response was already over: the client went away first (a 499 of its own), or a HEAD was answered with its
 * head and the work after it was cancelled.
 */
function cutShort(err: unknown, body: ResponseBody, res: HttpResponse, record: RequestRecord | undefined, path: string, clientGone: boolean): void {
  if (clientGone || res.writableEnded) return;
  const error = ConnectError.from(err);
  const status = restStatus(error.code);
  if (record !== undefined) record.restCode = String(status);
  log.error("streamed answer cut short", { where: `REST ${path}`, code: Code[error.code], status, bytes: record?.bytes, error: error.cause ?? error });
  body.abort();
}

// Reasons made once: aborting without one builds a DOMException with its stack, twice per request (3 % of the
// server's CPU on masterchainInfo). Only work still running when its request is over ever sees them.
const connectionClosed = new ConnectError("the client's connection closed", Code.Canceled);
const requestEnded = new ConnectError("the request has been answered", Code.Canceled);

function errorBody(dialect: Dialect, status: number, message: string) {
  return dialect === "v2" ? { ok: false, error: message, code: status } : { error: message };
}

/**
 * The request's headers as the context's Headers are made from (HTTP/2's pseudo-headers left out): pairs rather than
 * a Headers, which createHandlerContext would copy into another.
 */
function headerPairs(req: HttpRequest): [string, string][] {
  const pairs: [string, string][] = [];
  const headers = req.headers;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || name.charCodeAt(0) === colon) continue;
    if (typeof value === "string") pairs.push([name, value]);
    else for (const v of value) pairs.push([name, v]);
  }
  return pairs;
}

const colon = 0x3a;

/** A JSON answer that is not a REST path's 200 (an error, /healthz, a 404): never cached, unless `extraHeaders` says so. */
export function sendJson(res: ResponseSink, status: number, body: unknown, extraHeaders: Record<string, string> = {}, headOnly = false): void {
  void sendBody(res, status, jsonBytes(body), headOnly, { "cache-control": cacheControl.never, ...extraHeaders }, bodySettingsOf.get(res) ?? plainBody);
}

export function sendEmpty(res: ResponseSink, status: number, headers: OutgoingHttpHeaders): void {
  res.writeHead(status, headers);
  res.end("");
}
