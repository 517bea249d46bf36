import type { IncomingHttpHeaders } from "node:http";
import WebSocket from "ws";

// Clients of the live streams' REST doors, as a toncenter Streaming API v2 client would read them.

export interface SseEvent {
  event: string;
  id: string | undefined;
  data: string;
}

/**
 * Reads server-sent events from a response body as they arrive. Ends when the server ends the body; stop it early
 * with the controller given to fetch.
 */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      let id: string | undefined;
      const data: string[] = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = value;
        else if (field === "id") id = value;
        else if (field === "data") data.push(value);
      }
      if (data.length > 0 || id !== undefined) yield { event, id, data: data.join("\n") };
    }
  }
}

export async function openSse(baseUrl: string, subscription: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${baseUrl}/api/streaming/v2/sse`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(subscription),
    signal,
  });
}

/** A WebSocket client of /api/streaming/v2/ws: its messages as they arrive, parsed. */
export interface WsClient {
  /** The headers of the server's 101. */
  headers: IncomingHttpHeaders;
  send(message: unknown): void;
  next(timeoutMs?: number): Promise<Record<string, unknown>>;
  close(): void;
  closed: Promise<void>;
}

export function openWs(baseUrl: string, options: { headers?: Record<string, string>; query?: string } = {}): Promise<WsClient> {
  const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/api/streaming/v2/ws${options.query ?? ""}`, { headers: options.headers });
  let headers: IncomingHttpHeaders = {};
  ws.once("upgrade", (response) => (headers = response.headers));
  const queue: Record<string, unknown>[] = [];
  const waiting: ((message: Record<string, unknown>) => void)[] = [];
  ws.on("message", (data) => {
    const message = JSON.parse(data.toString()) as Record<string, unknown>;
    const waiter = waiting.shift();
    if (waiter) waiter(message);
    else queue.push(message);
  });
  const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
  return new Promise((resolve, reject) => {
    ws.once("error", reject);
    ws.once("open", () =>
      resolve({
        headers,
        send: (message) => ws.send(JSON.stringify(message)),
        next: (timeoutMs = 20_000) => {
          const queued = queue.shift();
          if (queued) return Promise.resolve(queued);
          return new Promise((resolveNext, rejectNext) => {
            const timer = setTimeout(() => rejectNext(new Error("no WebSocket message in time")), timeoutMs);
            waiting.push((message) => {
              clearTimeout(timer);
              resolveNext(message);
            });
          });
        },
        close: () => ws.close(),
        closed,
      }),
    );
  });
}

/** The block seqno an event id ("N" or "N:k") belongs to. */
export function blockOfId(id: string): number {
  return Number(id.split(":", 1)[0]);
}
