import { Code, ConnectError } from "@connectrpc/connect";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import type { Config } from "../runtime/config.ts";
import { log } from "../runtime/log.ts";
import { currentRequest, nameRequest, type RequestRecord } from "../observability/request-context.ts";
import { requestIdHeader } from "../observability/requests.ts";
import { drained } from "../rest/body.ts";
import { sendJson } from "../rest/router.ts";
import { publicError, restStatus } from "../server/errors.ts";
import type { HttpHandler, HttpRequest, HttpResponse } from "../server/single-port.ts";
import { positionOf, type StreamHub, type StreamItem } from "./hub.ts";
import { blockEvents, parseEventId, withEventId, parseSubscription, type ResumePoint, type Subscription } from "./toncenter.ts";

// The REST doors of the live streams, as toncenter's Streaming API v2 serves them: POST /api/streaming/v2/sse (and
// GET, with the subscription in the query, for EventSource), GET /api/streaming/v2/ws (WebSocket).

export const ssePath = "/api/streaming/v2/sse";
export const wsPath = "/api/streaming/v2/ws";

/** A subscription of STREAM_MAX_ADDRESSES raw addresses fits with room to spare. */
export const maxBodyBytes = 1024 * 1024;

/**
 * The HTTP status of a stream's refusal: toncenter's Streaming API answers a bad subscription with 400 (the REST
 * paths' 422 is toncenter v3's), and a position too old to resume from is gone (410); else as the REST paths.
 */
function httpStatus(code: Code): number {
  if (code === Code.InvalidArgument) return 400;
  if (code === Code.OutOfRange) return 410;
  return restStatus(code);
}

function errorBody(error: ConnectError): Record<string, unknown> {
  const position = positionOf(error);
  return { error: error.rawMessage, code: Code[error.code], ...(position !== undefined && { position, last_event_id: String(position) }) };
}

async function readBody(req: HttpRequest): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) throw new ConnectError(`subscription larger than ${maxBodyBytes} bytes`, Code.InvalidArgument);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The subscription of a GET (EventSource): lists comma-separated or repeated, flags true/false. */
function subscriptionFromQuery(query: URLSearchParams): Record<string, unknown> {
  const list = (name: string) => {
    const values = query.getAll(name).flatMap((value) => value.split(","));
    return values.length === 0 ? undefined : values.filter((value) => value !== "");
  };
  const bool = (name: string) => {
    const value = query.get(name);
    if (value === null) return undefined;
    if (value === "true" || value === "1") return true;
    if (value === "false" || value === "0") return false;
    return value;
  };
  return {
    types: list("types"),
    addresses: list("addresses"),
    trace_external_hash_norms: list("trace_external_hash_norms"),
    action_types: list("action_types"),
    supported_action_types: list("supported_action_types"),
    min_finality: query.get("min_finality") ?? undefined,
    include_address_book: bool("include_address_book"),
    include_metadata: bool("include_metadata"),
  };
}

/** The events of a stream from `resume`, as the doors send them: per block, its events after the skipped ones, then heartbeats. */
async function* events(
  hub: StreamHub,
  subscription: Subscription,
  resume: ResumePoint | undefined,
  signal: AbortSignal,
  door: string,
  abortTransport: () => void,
): AsyncGenerator<{ id: string; event: string; json: string }> {
  let skip = resume?.skip ?? 0;
  for await (const item of hub.open(subscription.filter, resume?.after, signal, door, abortTransport)) {
    if (item.kind === "heartbeat") {
      skip = 0;
      yield { id: String(item.seqno), event: "heartbeat", json: `{"type":"heartbeat","position":${item.seqno}}` };
      continue;
    }
    const all = blockEvents(subscription, item as Extract<StreamItem, { kind: "block" }>);
    const from = resume !== undefined && item.seqno === resume.after + 1 ? skip : 0;
    skip = 0;
    for (const event of all.slice(from)) yield { id: event.id, event: "event", json: event.json };
  }
}

export interface StreamingDoors {
  http: HttpHandler;
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Closes the WebSocket server's connections (after the hub ended their streams). */
  close(): void;
}

export function streamingDoors(hub: StreamHub, config: Config, next: HttpHandler): StreamingDoors {
  const wss = new WebSocketServer({ noServer: true, maxPayload: maxBodyBytes });
  // The 101 carries the request's id as every other response does: ws writes the head within handleUpgrade, so in
  // the upgrade's request context.
  wss.on("headers", (headers: string[]) => {
    const record = currentRequest();
    if (record !== undefined) headers.push(`${requestIdHeader}: ${record.id}`);
  });
  const shutdown = new AbortController();

  const sse = async (req: HttpRequest, res: HttpResponse, url: URL) => {
    const abort = new AbortController();
    res.once("close", () => abort.abort(new ConnectError("the client went away", Code.Canceled)));
    let subscription: Subscription;
    let resume: ResumePoint | undefined;
    try {
      const body = req.method === "POST" ? parseJsonObject(await readBody(req)) : subscriptionFromQuery(url.searchParams);
      subscription = parseSubscription(body, config);
      const header = req.headers["last-event-id"];
      resume = parseEventId((Array.isArray(header) ? header[0] : header) ?? url.searchParams.get("last_event_id"));
      await hub.admit(resume?.after, abort.signal);
    } catch (err) {
      const error = publicError(err, "stream sse");
      if (!abort.signal.aborted) sendJson(res, httpStatus(error.code), errorBody(error));
      return;
    }
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      "x-accel-buffering": "no",
    });
    const write = async (text: string) => {
      if (!res.write(text)) await drained(res);
    };
    // toncenter's first event; then the reconnection delay EventSource waits after the stream ends.
    await write(`event: connected\ndata: {"status":"subscribed"}\n\nretry: 1000\n\n`);
    try {
      for await (const { id, event, json } of events(hub, subscription, resume, abort.signal, "sse", () => res.destroy())) {
        await write(`event: ${event}\nid: ${id}\ndata: ${json}\n\n`);
      }
    } catch (err) {
      const error = publicError(err, "stream sse");
      if (!abort.signal.aborted) await write(`event: error\ndata: ${JSON.stringify(errorBody(error))}\n\n`);
    }
    res.end();
  };

  const http: HttpHandler = (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (path === ssePath) {
      // Logged and counted as the REST door's StreamTraces, the RPC it is the REST form of.
      nameRequest("rest", "StreamTraces");
      if (req.method !== "POST" && req.method !== "GET") {
        sendJson(res, 405, { error: "method not allowed: POST a subscription (or GET one in the query, for EventSource)" }, { allow: "POST, GET" });
        return;
      }
      void sse(req, res, new URL(req.url ?? "/", "http://localhost")).catch((err: unknown) => {
        log.error("sse stream failed", { error: err });
        if (!res.headersSent) sendJson(res, 500, { error: "internal error", code: "Internal" });
        else res.destroy();
      });
      return;
    }
    if (path === wsPath) {
      sendJson(res, 426, { error: "this path speaks WebSocket: send an Upgrade request" }, { upgrade: "websocket" });
      return;
    }
    next(req, res);
  };

  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (path !== wsPath) {
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    // Logged as the SSE door is, as the REST door's StreamTraces: once, when the session ends (observeUpgrades).
    const record = nameRequest("rest", "StreamTraces");
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (record !== undefined) record.upgraded = true;
      serveWebSocket(ws, hub, config, shutdown.signal, record);
    });
  };

  return {
    http,
    upgrade,
    close: () => {
      // Each subscription sends its end (UNAVAILABLE with its position) and then closes its connection; one that has
      // none closes at once, and none is left open after a second.
      shutdown.abort();
      const last = setTimeout(() => {
        for (const client of wss.clients) client.terminate();
      }, 1000);
      last.unref();
    },
  };
}

function parseJsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ConnectError("the subscription is not JSON", Code.InvalidArgument);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ConnectError("the subscription must be a JSON object", Code.InvalidArgument);
  return value as Record<string, unknown>;
}

/**
 * One WebSocket connection: one subscription at a time (subscribe replaces it), toncenter's operations, a ping
 * frame every heartbeat period (a connection that answered none of the last two is closed).
 */
function serveWebSocket(ws: WebSocket, hub: StreamHub, config: Config, shutdown: AbortSignal, record: RequestRecord | undefined): void {
  let current: AbortController | undefined;
  const closeIfIdle = () => {
    if (current === undefined) ws.close(1001, "server shutting down");
  };
  if (shutdown.aborted) closeIfIdle();
  else shutdown.addEventListener("abort", closeIfIdle, { once: true });
  let alive = true;
  const sendText = (text: string) =>
    new Promise<void>((resolve) => {
      if (ws.readyState !== WebSocket.OPEN) {
        resolve();
        return;
      }
      if (record !== undefined) record.bytes += Buffer.byteLength(text);
      ws.send(text, () => resolve());
    });
  const send = (value: unknown) => sendText(JSON.stringify(value));
  const pinger = setInterval(() => {
    if (!alive) {
      ws.terminate();
      return;
    }
    alive = false;
    ws.ping();
  }, config.streamHeartbeatMs);
  ws.on("pong", () => (alive = true));
  ws.on("close", () => {
    clearInterval(pinger);
    shutdown.removeEventListener("abort", closeIfIdle);
    current?.abort(new ConnectError("the client went away", Code.Canceled));
  });

  const run = async (id: unknown, subscription: Subscription, resume: ResumePoint | undefined, controller: AbortController) => {
    try {
      for await (const { id: eventId, json } of events(hub, subscription, resume, controller.signal, "ws", () => ws.terminate())) {
        await sendText(withEventId({ id: eventId, json }));
      }
    } catch (err) {
      if (controller.signal.aborted) return;
      await send({ ...(id !== undefined && { id }), ...errorBody(publicError(err, "stream ws")) });
    } finally {
      if (current === controller) current = undefined;
      if (shutdown.aborted) ws.close(1001, "server shutting down");
    }
  };

  ws.on("message", (data, isBinary) => {
    let message: Record<string, unknown>;
    try {
      if (isBinary) throw new ConnectError("messages are JSON text", Code.InvalidArgument);
      message = parseJsonObject(data.toString());
    } catch (err) {
      void send({ error: publicError(err, "stream ws").rawMessage });
      return;
    }
    const id = message.id;
    const operation = message.operation;
    if (operation === "ping") {
      void send({ ...(id !== undefined && { id }), status: "pong" });
      return;
    }
    if (operation === "unsubscribe") {
      current?.abort();
      current = undefined;
      void send({ ...(id !== undefined && { id }), status: "unsubscribed" });
      return;
    }
    if (operation !== "subscribe") {
      void send({ ...(id !== undefined && { id }), error: `unknown operation ${JSON.stringify(operation)}: expected subscribe, unsubscribe or ping` });
      return;
    }
    void (async () => {
      let subscription: Subscription;
      let resume: ResumePoint | undefined;
      const controller = new AbortController();
      try {
        subscription = parseSubscription(message, config);
        const lastEventId = message.last_event_id;
        if (lastEventId !== undefined && lastEventId !== null && typeof lastEventId !== "string" && typeof lastEventId !== "number") {
          throw new ConnectError("last_event_id must be a string", Code.InvalidArgument);
        }
        resume = parseEventId(lastEventId === undefined || lastEventId === null ? undefined : String(lastEventId));
        // The new subscription replaces the old one: no event of the old one follows the acknowledgement.
        current?.abort();
        current = controller;
        await hub.admit(resume?.after, controller.signal);
      } catch (err) {
        if (current === controller) current = undefined;
        await send({ ...(id !== undefined && { id }), ...errorBody(publicError(err, "stream ws")) });
        return;
      }
      await send({ ...(id !== undefined && { id }), status: "subscribed" });
      await run(id, subscription, resume, controller);
    })();
  });
}
