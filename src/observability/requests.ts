import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { log } from "../runtime/log.ts";
import { countBodyBytes } from "./counted-responses.ts";
import type { HttpHandler, HttpRequest, HttpResponse, UpgradeHandler } from "../server/single-port.ts";
import type { Metrics } from "./metrics.ts";
import { RequestRecord, requestIdOf, runInRequest } from "./request-context.ts";
import type { Telemetry } from "./telemetry.ts";

/** Taken from the client when it is usable (see requestIdOf), else made up; returned on every response. */
export const requestIdHeader = "x-request-id";

export interface ObserveOptions {
  /** One info line per request. */
  accessLog: boolean;
}

/**
 * Wraps the whole port's handler: gives each request an id (X-Request-Id, echoed in the response headers, in the
 * RPC doors' response metadata too) that every log line written while serving it carries, and when its response is
 * over counts it in the metrics, writes its access line and ends its server span. The doors name the request (door,
 * operation) and the RPC door its outcome through the RequestRecord; anything no door claims is door "http",
 * operation "other".
 *
 * With tracing on, the server span continues the trace of an incoming W3C traceparent (tracestate kept) and is
 * active while the request is served, so statement spans become its children.
 */
export function observeRequests(next: HttpHandler, telemetry: Telemetry, options: ObserveOptions): HttpHandler {
  const { metrics, tracer } = telemetry;
  const ended = (record: RequestRecord, req: HttpRequest, res: HttpResponse, span: Span | undefined) => {
    const seconds = (performance.now() - record.startedAt) / 1000;
    const rpc = record.door !== "rest" && record.door !== "http";
    // An answer cut short after its head (restCode) may look finished to Node once its HTTP/2 stream is reset.
    const finished = res.writableFinished && record.restCode === undefined;
    // A REST answer the client did not wait for is nginx's 499, as errors.ts answers a cancelled one.
    const code = rpc ? (record.rpcCode ?? (finished ? "UNKNOWN" : "CANCELLED")) : (record.restCode ?? (finished ? String(res.statusCode) : "499"));
    metrics.requestEnded(record.door, record.operation, code, seconds);
    if (span !== undefined) endServerSpan(span, record, res.statusCode, code, rpc);
    if (options.accessLog && log.enabled("info")) writeAccessLine(record, req, res.statusCode, seconds, rpc || record.restCode !== undefined ? code : undefined, finished);
  };

  return (req, res) => {
    const record = new RequestRecord(requestIdOf(req.headers[requestIdHeader]), performance.now(), req.socket?.remoteAddress);
    res.setHeader(requestIdHeader, record.id);
    countBodyBytes(res, record);
    if (tracer === undefined) {
      res.once("close", () => ended(record, req, res, undefined));
      runInRequest(record, next, req, res);
      return;
    }
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      `HTTP ${req.method ?? ""}`,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": req.method, "url.path": pathOf(req), "tonquery.request_id": record.id } },
      parent,
    );
    res.once("close", () => ended(record, req, res, span));
    context.with(trace.setSpan(parent, span), () => runInRequest(record, next, req, res));
  };
}

/**
 * Wraps the HTTP/1.1 Upgrade handler as observeRequests wraps the handler: the request gets its id (which the door
 * echoes in its 101), and when its connection closes it is counted in the metrics and writes one access line: a
 * WebSocket session the door accepted (RequestRecord.upgraded) with status 101 and the session's duration, a refused
 * handshake with the status written to the socket (the ws library and the door answer there, not through a
 * response object), a connection closed before any answer as 499, as the REST door counts a client that left.
 */
export function observeUpgrades(next: UpgradeHandler, telemetry: Telemetry, options: ObserveOptions): UpgradeHandler {
  return (req, socket, head) => {
    const record = new RequestRecord(requestIdOf(req.headers[requestIdHeader]), performance.now(), req.socket?.remoteAddress);
    const answered = statusWritten(socket);
    socket.once("close", () => {
      const seconds = (performance.now() - record.startedAt) / 1000;
      const status = record.upgraded ? 101 : (answered() ?? 499);
      telemetry.metrics.requestEnded(record.door, record.operation, String(status), seconds);
      if (options.accessLog && log.enabled("info")) writeAccessLine(record, req, status, seconds);
    });
    runInRequest(record, next, req, socket, head);
  };
}

/**
 * Watches the first bytes written to an upgrade's socket for the status of the HTTP/1.1 answer they start with (the
 * 101, or a refusal), then lets the socket's writes be as they were.
 */
function statusWritten(socket: Parameters<UpgradeHandler>[1]): () => number | undefined {
  let status: number | undefined;
  const stop = watchWrites(socket, (chunk) => {
    if (typeof chunk !== "string" && !(chunk instanceof Uint8Array)) return;
    const head = typeof chunk === "string" ? chunk.slice(0, 12) : Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(12, chunk.byteLength)).toString("latin1");
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
    if (match !== null) status = Number(match[1]);
    stop();
  });
  return () => status;
}

function writeAccessLine(record: RequestRecord, req: { method?: string; url?: string }, status: number, seconds: number, code?: string, finished = true): void {
  log.info("request", {
    request_id: record.id,
    door: record.door,
    operation: record.operation,
    method: req.method,
    path: pathOf(req),
    status,
    ...(code !== undefined && { code }),
    ...(!finished && { completed: false }),
    duration_ms: Math.round(seconds * 1e6) / 1e3,
    bytes: record.bytes,
    client: record.client,
  });
}

// Codes that are the server's failure rather than the client's, as OpenTelemetry's RPC conventions mark them.
const serverErrorCodes = new Set(["UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS"]);

function endServerSpan(span: Span, record: RequestRecord, status: number, code: string, rpc: boolean): void {
  // Named by operation, as the metrics are; anything else keeps "HTTP <method>" (a name per URL would be unbounded).
  if (record.door !== "http") span.updateName(record.operation);
  span.setAttribute("tonquery.door", record.door);
  span.setAttribute("tonquery.operation", record.operation);
  span.setAttribute("http.response.status_code", status);
  if (rpc) {
    span.setAttribute("rpc.system", record.door === "connect" ? "connect_rpc" : "grpc");
    span.setAttribute("rpc.method", record.operation);
    span.setAttribute("rpc.response.status_code", code);
  }
  // A REST answer cut short after its 200 went out is an error all the same (its code is the failure's status).
  if (rpc ? serverErrorCodes.has(code) : status >= 500 || Number(code) >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

function pathOf(req: { url?: string }): string {
  const url = req.url ?? "";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

/**
 * Calls `watch` with every chunk written to `target` (by `write` or `end`) before it is written; the function
 * returned lets the writes be as they were. Wrappers on the object itself, which give it a shape of its own (see
 * counted-responses.ts): fit for an upgrade's socket, one per WebSocket session, not for every response.
 */
function watchWrites(target: object, watch: (chunk: unknown, encoding: unknown) => void): () => void {
  const sink = target as { write: (...args: unknown[]) => boolean; end: (...args: unknown[]) => unknown };
  const { write, end } = sink;
  sink.write = function (this: unknown, chunk: unknown, ...rest: unknown[]) {
    watch(chunk, rest[0]);
    return write.call(this, chunk, ...rest);
  };
  sink.end = function (this: unknown, chunk: unknown, ...rest: unknown[]) {
    watch(chunk, rest[0]);
    return end.call(this, chunk, ...rest);
  };
  return () => {
    sink.write = write;
    sink.end = end;
  };
}

/** GET /metrics: the Prometheus text exposition. */
export function metricsEndpoint(metrics: Metrics): HttpHandler {
  return (req, res) => {
    metrics.scrape().then(
      (text) => {
        res.writeHead(200, { "content-type": metrics.contentType, "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
        res.end(req.method === "HEAD" ? "" : text);
      },
      (err: unknown) => {
        log.error("collecting metrics failed", { error: err });
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
        res.end("collecting metrics failed\n");
      },
    );
  };
}
