import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";

// Node cannot serve HTTP/1.1 and cleartext HTTP/2 on one port by itself (http2's allowHTTP1 needs TLS),
// yet gRPC clients speak h2c with prior knowledge while browsers and curl speak HTTP/1.1. So one TCP
// listener reads the first bytes of each connection: the HTTP/2 client preface sends it to the HTTP/2
// server, anything else to the HTTP/1.1 server. The bytes read are pushed back before the hand-over.

const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
/** A connection that sends nothing for this long before being recognised is dropped. */
const sniffTimeoutMs = 10_000;

/** A request handler for both HTTP/1.1 and HTTP/2 requests, as Connect's Node adapter defines it. */
export type HttpHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
export type HttpRequest = Parameters<HttpHandler>[0];
export type HttpResponse = Parameters<HttpHandler>[1];

export interface SinglePortServer {
  listen(port: number, host: string): Promise<AddressInfo>;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then closes what is left. */
  close(graceMs: number, onGraceExpired: () => void): Promise<void>;
}

export function createSinglePortServer(handler: HttpHandler): SinglePortServer {
  const http1 = http.createServer({ keepAliveTimeout: 65_000 }, handler);
  // Large trace pages multiplexed on one gRPC connection exceed the 10 MB default session budget.
  const h2 = http2.createServer({ maxSessionMemory: 128 }, handler);
  const sockets = new Set<net.Socket>();
  // Requests in flight per HTTP/1.1 connection: an idle keep-alive connection can be closed at once on
  // shutdown (the HTTP/1.1 server never listens itself, so its own idle tracking does not apply).
  const http1Busy = new Map<net.Socket, number>();
  const sessions = new Set<http2.ServerHttp2Session>();
  let closing = false;

  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    if (closing) session.close();
  });
  http1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    http1Busy.set(socket, (http1Busy.get(socket) ?? 0) + 1);
    res.once("close", () => {
      const left = (http1Busy.get(socket) ?? 1) - 1;
      http1Busy.set(socket, left);
      if (closing && left === 0) socket.destroySoon();
    });
    if (closing) res.setHeader("connection", "close");
  });

  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      http1Busy.delete(socket);
    });
    let received = Buffer.alloc(0);
    const dropSilent = () => socket.destroy();
    socket.setTimeout(sniffTimeoutMs, dropSilent);
    socket.on("error", dropSilent);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const n = Math.min(received.length, preface.length);
      const isHttp2 = received.subarray(0, n).equals(preface.subarray(0, n));
      if (isHttp2 && received.length < preface.length) return;
      socket.removeListener("data", onData);
      socket.removeListener("error", dropSilent);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(received);
      if (isHttp2) {
        // The HTTP/2 session takes over the socket's handle and reads what is already buffered itself.
        h2.emit("connection", socket);
      } else {
        http1Busy.set(socket, 0);
        http1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
  });

  return {
    listen(port, host) {
      return new Promise((resolve, reject) => {
        tcp.once("error", reject);
        tcp.listen(port, host, () => {
          tcp.removeListener("error", reject);
          resolve(tcp.address() as AddressInfo);
        });
      });
    },
    async close(graceMs, onGraceExpired) {
      closing = true;
      const stopped = new Promise<void>((resolve) => tcp.close(() => resolve()));
      for (const session of sessions) session.close();
      for (const [socket, busy] of http1Busy) if (busy === 0) socket.destroySoon();
      const deadline = Date.now() + graceMs;
      while (sockets.size > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      if (sockets.size > 0) {
        onGraceExpired();
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }
      await stopped;
    },
  };
}
