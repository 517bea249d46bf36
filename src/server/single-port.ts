import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { CountedHttp1Response, CountedHttp2Response } from "../observability/counted-responses.ts";
import { log } from "../runtime/log.ts";

// Node cannot serve HTTP/1.1 and cleartext HTTP/2 on one port by itself (http2's allowHTTP1 needs TLS),
// yet gRPC clients speak h2c with prior knowledge while browsers and curl speak HTTP/1.1. So one TCP
// listener reads the first bytes of each connection: the HTTP/2 client preface sends it to the HTTP/2
// server, anything else to the HTTP/1.1 server. The bytes read are pushed back before the hand-over.
//
// Every client connection holds a file descriptor and some memory until it closes, so none may stay
// open on the client's say-so alone: each one is, at every moment, either waiting for a request under a
// deadline (headers, body), serving one (bounded by the request deadline of the handlers), or idle
// under the idle timeout; and the number open at once is capped below what the process can hold.

const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** What Node's HTTP/1.1 server itself answers when a request's headers are late (its socketOnError). */
const requestTimeoutResponse = Buffer.from("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n");

/**
 * The answer to an HTTP/1.1 CONNECT: Node hands such a request to a 'connect' listener with the bare socket (a proxy
 * would tunnel it), and without one closes the socket with no answer at all. The service is no proxy; the methods it
 * serves anywhere are named, as for any method it does not serve (see server.ts).
 */
const connectRefusal = (() => {
  const body = JSON.stringify({ error: "method CONNECT not allowed" });
  return Buffer.from(
    "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD, POST, OPTIONS\r\nContent-Type: application/json; charset=utf-8\r\n" +
      `Cache-Control: no-store\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
})();

/**
 * How long a peer gets to read our last bytes (a 408, a GOAWAY) and close its side before the socket is
 * destroyed. Closing first, with the peer's data possibly still unread, makes the kernel answer with a
 * reset, which can discard the very response the peer was about to read; waiting for ever would let a
 * peer that never closes keep the descriptor.
 */
const lingerMs = 1000;

/** Longest drain of idle HTTP/1.1 connections on shutdown (see close()). */
const maxDrainMs = 1000;

/** A request handler for both HTTP/1.1 and HTTP/2 requests, as Connect's Node adapter defines it. */
export type HttpHandler = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
export type HttpRequest = Parameters<HttpHandler>[0];
export type HttpResponse = Parameters<HttpHandler>[1];

/** The bounds on client connections; see src/runtime/config.ts for what each one promises. */
export interface ConnectionLimits {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  idleTimeoutMs: number;
  maxConnections: number;
}

export interface SinglePortServer {
  listen(port: number, host: string): Promise<AddressInfo>;
  /** Stops accepting, lets requests in flight finish for up to `graceMs`, then closes what is left. */
  close(graceMs: number, onGraceExpired: () => void): Promise<void>;
}

interface Connection {
  socket: net.Socket;
  protocol: "sniffing" | "http1" | "http2";
  /** Requests (HTTP/2: streams) begun and not yet closed. */
  inFlight: number;
  /** The headers deadline while no request has come yet; then, for HTTP/2, the idle timeout. */
  timer: NodeJS.Timeout | undefined;
  /** We are closing it: nothing more will be served on it. */
  ending: boolean;
  /** HTTP/1.1 responses not yet closed, so that shutdown can still turn them into the last ones. */
  responses: Set<http.ServerResponse>;
  session: http2.ServerHttp2Session | undefined;
}

/** An HTTP/1.1 Upgrade request (WebSocket): the handler owns the socket from then on. */
export type UpgradeHandler = (req: http.IncomingMessage, socket: import("node:stream").Duplex, head: Buffer) => void;

export function createSinglePortServer(handler: HttpHandler, limits: ConnectionLimits, onUpgrade?: UpgradeHandler): SinglePortServer {
  const http1 = http.createServer({
    // Responses that count their body bytes for the access log (see counted-responses.ts).
    ServerResponse: CountedHttp1Response,
    // The HTTP/1.1 server never listens, but Node's own timeouts work on sockets handed to it once its
    // connection tracking runs (see below). Node's headersTimeout is the only way to bound the headers
    // of a keep-alive connection's second and later requests: the HTTP parser reads the socket in C++,
    // so JavaScript never sees when such a request's first byte arrives.
    headersTimeout: limits.headersTimeoutMs,
    // Node's requestTimeout runs from a request's first byte, not from the end of its headers as
    // BODY_TIMEOUT_MS promises, and it answers a late body only on its next check; watchBody does it.
    requestTimeout: 0,
    // Node checks header deadlines on this period only: a tenth of the timeout keeps a late connection
    // open at most 10% (and at most a second) longer, at the cost of one pass over the open connections.
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMs / 10))),
    // Advertised to clients as `Keep-Alive: timeout=…`; Node closes an idle connection
    // keepAliveTimeoutBuffer (1 s) later still, so that clients honouring the hint close first and never
    // send on a connection the server is closing.
    keepAliveTimeout: limits.idleTimeoutMs,
  });
  // Node starts an HTTP server's connection tracking (the list its header timeout is checked against,
  // and the one closeIdleConnections reads) when the server emits 'listening', which a server that never
  // listens does not. Without it headersTimeout silently does nothing for sockets handed over, which is
  // how one byte per connection could hold a descriptor for ever.
  http1.emit("listening");

  // Large trace pages multiplexed on one gRPC connection exceed the 10 MB default session budget.
  const h2 = http2.createServer({ maxSessionMemory: 128, Http2ServerResponse: CountedHttp2Response });

  const connections = new Map<net.Socket, Connection>();
  // Connections that may be closed to make room for a new one at the cap, in the order they are closed.
  // A Set iterates in insertion order, so the first entry is the oldest: the longest-waiting connection
  // that never sent a request (or one already being closed), then the longest-idle one.
  const unproductive = new Set<Connection>();
  const idle = new Set<Connection>();
  let closing = false;
  let drained = false;
  let allClosed: (() => void) | undefined;

  const track = (socket: net.Socket): Connection => {
    const conn: Connection = { socket, protocol: "sniffing", inFlight: 0, timer: undefined, ending: false, responses: new Set(), session: undefined };
    connections.set(socket, conn);
    unproductive.add(conn);
    // One deadline from connect to the first request's complete headers (HTTP/2: to the end of the
    // preface), across sniffing and hand-over: measured per byte, as a socket timeout is, a connection
    // sending one byte every few seconds would never be done.
    conn.timer = setTimeout(() => headersLate(conn), limits.headersTimeoutMs);
    socket.once("close", () => untrack(conn));
    return conn;
  };

  const untrack = (conn: Connection) => {
    clearTimeout(conn.timer);
    connections.delete(conn.socket);
    unproductive.delete(conn);
    idle.delete(conn);
    if (closing && connections.size === 0) allClosed?.();
  };

  const headersLate = (conn: Connection) => {
    if (conn.protocol === "http1") endGently(conn, requestTimeoutResponse);
    else conn.socket.destroy();
  };

  const requestStarted = (conn: Connection) => {
    if (conn.inFlight === 0 && !conn.ending && conn.timer !== undefined) {
      clearTimeout(conn.timer);
      conn.timer = undefined;
    }
    conn.inFlight++;
    if (!conn.ending) unproductive.delete(conn);
    idle.delete(conn);
  };

  const requestEnded = (conn: Connection) => {
    conn.inFlight--;
    if (conn.inFlight > 0 || conn.socket.destroyed) return;
    if (conn.ending) {
      markEnding(conn);
      lingerThenDestroy(conn);
      return;
    }
    // Re-inserted, so that the Set's order stays the order in which connections became idle.
    idle.delete(conn);
    idle.add(conn);
    if (conn.protocol === "http2") {
      conn.timer = setTimeout(() => goAway(conn), limits.idleTimeoutMs);
    } else if (closing && drained) {
      // A response that went out before shutdown without `Connection: close` leaves its connection
      // open; close it now unless the client has begun another request on it (Node knows, see close()).
      setImmediate(() => http1.closeIdleConnections());
    }
  };

  /** Sends `lastBytes` and closes our side; the peer gets lingerMs to read them and close its own. */
  const endGently = (conn: Connection, lastBytes: Buffer) => {
    if (conn.ending) return;
    conn.ending = true;
    markEnding(conn);
    conn.socket.end(lastBytes);
    lingerThenDestroy(conn);
  };

  const markEnding = (conn: Connection) => {
    idle.delete(conn);
    unproductive.delete(conn);
    unproductive.add(conn);
  };

  const lingerThenDestroy = (conn: Connection) => {
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => conn.socket.destroy(), lingerMs);
  };

  /**
   * Closes an HTTP/2 session gracefully: GOAWAY names the last stream served, streams in flight finish.
   * A stream the client opens before the GOAWAY reaches it is refused, unprocessed, which the client
   * learns from that last stream id and may safely retry (RFC 9113 §6.8). The two-step GOAWAY that would
   * avoid even that (nghttp2_submit_shutdown_notice) is not exposed by Node: any GOAWAY it sends stops
   * nghttp2 from accepting new streams.
   */
  const goAway = (conn: Connection) => {
    const session = conn.session;
    if (session === undefined || conn.ending) return;
    conn.ending = true;
    clearTimeout(conn.timer);
    conn.timer = undefined;
    if (!session.closed && !session.destroyed) session.close();
    // Node then waits for the peer to close the socket; a peer that never does is cut off.
    if (conn.inFlight === 0) {
      markEnding(conn);
      lingerThenDestroy(conn);
    }
  };

  /**
   * Bounds the arrival of a request's body, from the end of its headers. A body still incomplete then
   * gets a 408 if no response has begun; either way the request ends there (HTTP/1.1: with its
   * connection, whose next bytes would be the rest of that body; HTTP/2: only its own stream).
   */
  const watchBody = (conn: Connection, req: HttpRequest, res: HttpResponse) => {
    if (conn.protocol === "http1") {
      const request = req as http.IncomingMessage;
      const response = res as http.ServerResponse;
      const timer = setTimeout(() => {
        if (request.complete || conn.socket.destroyed) return;
        if (response.headersSent) conn.socket.destroy();
        // Our own bytes on the socket, as Node writes its own 408: the handler's response, if it comes,
        // is then held back by Node, since the socket no longer takes writes.
        else endGently(conn, requestTimeoutResponse);
      }, limits.bodyTimeoutMs);
      request.once("end", () => clearTimeout(timer));
      response.once("close", () => {
        if (request.complete || conn.socket.destroyed) clearTimeout(timer);
      });
    } else {
      const stream = (req as http2.Http2ServerRequest).stream;
      const timer = setTimeout(() => {
        if (stream.closed || stream.destroyed || stream.state.remoteClose) return;
        let responded = stream.writableEnded;
        if (!stream.headersSent) {
          stream.respond({ ":status": 408 }, { endStream: true });
          responded = true;
        }
        // Closed at once, so that the handler's own writeHead, should it come, is a no-op. After a complete
        // response, NO_ERROR is RFC 9113 §8.1's way to stop the upload without failing the request.
        closeStream(stream, responded ? http2.constants.NGHTTP2_NO_ERROR : http2.constants.NGHTTP2_CANCEL);
      }, limits.bodyTimeoutMs);
      stream.once("close", () => clearTimeout(timer));
    }
  };

  /**
   * Resets a stream and makes sure it ends. Node emits a stream's 'close', which ends the request for the connection's
   * bookkeeping, only once its readable side has ended too: a request body nobody reads any more (a call refused
   * before its body was read, a handler that answered without reading it) kept the stream, and with it the session,
   * open for good. What the client sent is dropped, and a stream still open a linger later is destroyed.
   */
  const closeStream = (stream: http2.ServerHttp2Stream, code: number) => {
    if (stream.destroyed) return;
    // Closed already (the client reset it): nothing more can go out on it, only its unread body holds it open.
    if (stream.closed) {
      stream.destroy();
      return;
    }
    stream.close(code);
    stream.resume();
    const timer = setTimeout(() => stream.destroy(), lingerMs);
    stream.once("close", () => clearTimeout(timer));
  };

  /**
   * Once a stream's response is complete, a request still uploading is stopped: RST_STREAM with NO_ERROR, RFC 9113
   * §8.1's way to say the answer stands and the rest of the body is not wanted. A gRPC error is answered before the
   * body has been read (a message past readMaxBytes: RESOURCE_EXHAUSTED), and the client, held back by flow control,
   * would otherwise keep the stream, and its session, open for as long as it likes.
   *
   * The reset must not overtake the response: nghttp2 sends a RST_STREAM ahead of the frames still queued for its
   * stream, and gRPC's status travels in the trailers, which Node hands over after the body ('finish'). So the
   * reset waits until the stream's last frame has gone out (state.localClose), which Node exposes no event for:
   * it is looked at every few milliseconds, for at most lingerMs, and only for the rare stream whose client is
   * still sending when its answer is complete.
   */
  const stopUploadOnceAnswered = (stream: http2.ServerHttp2Stream) => {
    stream.once("finish", () => {
      if (stream.destroyed) return;
      // A body nobody reads any more would keep the stream from closing even once the client has sent all of it.
      stream.resume();
      if (stream.state.remoteClose === 1) return;
      const givingUp = Date.now() + lingerMs;
      const resetWhenSent = () => {
        if (stream.destroyed) return;
        if (stream.closed || stream.state.localClose === 1 || Date.now() > givingUp) closeStream(stream, http2.constants.NGHTTP2_NO_ERROR);
        else setTimeout(resetWhenSent, 5);
      };
      resetWhenSent();
    });
  };

  http1.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const conn = connections.get(req.socket);
    // A request parsed after we ended the socket cannot be answered: do not start its work.
    if (conn === undefined || req.socket.writableEnded) {
      req.socket.destroy();
      return;
    }
    requestStarted(conn);
    conn.responses.add(res);
    res.once("close", () => {
      conn.responses.delete(res);
      requestEnded(conn);
    });
    // Before the handler runs, since it may answer at once; Node then closes the connection after it.
    if (closing) res.setHeader("connection", "close");
    watchBody(conn, req, res);
    handler(req, res);
  });

  // An upgraded connection (a WebSocket) counts as a request in flight for as long as it is open: no header, idle or
  // cap rule closes it, and shutdown waits for it (the streams' door closes it first).
  http1.on("upgrade", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const conn = connections.get(socket);
    if (conn === undefined || onUpgrade === undefined || closing) {
      socket.destroy();
      return;
    }
    requestStarted(conn);
    socket.once("close", () => requestEnded(conn));
    onUpgrade(req, socket, head);
  });

  http1.on("connect", (_request: http.IncomingMessage, socket: net.Socket) => {
    const conn = connections.get(socket);
    if (conn === undefined) socket.destroy();
    else endGently(conn, connectRefusal);
  });

  let handingOver: Connection | undefined;
  const sessionConnections = new WeakMap<http2.Http2Session, Connection>();
  h2.on("session", (session: http2.ServerHttp2Session) => {
    // Emitted synchronously from h2.emit("connection") below, so this is the connection handed over.
    const conn = handingOver;
    if (conn === undefined) return;
    conn.session = session;
    sessionConnections.set(session, conn);
    session.on("stream", (stream: http2.ServerHttp2Stream) => {
      requestStarted(conn);
      stream.once("close", () => requestEnded(conn));
      stopUploadOnceAnswered(stream);
    });
    if (closing) goAway(conn);
    else conn.timer = setTimeout(() => goAway(conn), limits.idleTimeoutMs);
  });
  h2.on("request", (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    const session = req.stream.session;
    const conn = session && sessionConnections.get(session);
    if (conn !== undefined) watchBody(conn, req, res);
    handler(req, res);
  });

  /** Makes room for one more connection, or says there is none (every connection has work in flight). */
  const makeRoom = (): boolean => {
    if (connections.size < limits.maxConnections) return true;
    const victim = unproductive.values().next().value ?? idle.values().next().value;
    if (victim === undefined) return false;
    // Closed at once, not gently: the new connection needs the descriptor now. The victim is idle, so
    // no response is lost; at worst a request its client sends at this very moment fails.
    // Forgotten now, not on its 'close' event, which comes later: the next connection must see the room.
    untrack(victim);
    victim.session?.destroy();
    victim.socket.destroy();
    return true;
  };

  // Nagle's algorithm off, as Node's HTTP servers have it on the sockets they accept themselves: the answers' last
  // small writes (a chunked body's end, a compressor's tail, HTTP/2 frames) must not wait for the client's delayed ACK.
  const tcp = net.createServer({ noDelay: true }, (socket) => {
    if (!makeRoom()) {
      socket.destroy();
      return;
    }
    const conn = track(socket);
    let received = Buffer.alloc(0);
    const dropBroken = () => socket.destroy();
    socket.on("error", dropBroken);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const n = Math.min(received.length, preface.length);
      const isHttp2 = received.subarray(0, n).equals(preface.subarray(0, n));
      if (isHttp2 && received.length < preface.length) return;
      socket.removeListener("data", onData);
      socket.removeListener("error", dropBroken);
      socket.pause();
      socket.unshift(received);
      if (isHttp2) {
        clearTimeout(conn.timer);
        conn.timer = undefined;
        conn.protocol = "http2";
        handingOver = conn;
        // The HTTP/2 session takes over the socket's handle and reads what is already buffered itself.
        try {
          h2.emit("connection", socket);
        } finally {
          handingOver = undefined;
        }
      } else {
        conn.protocol = "http1";
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
          // Failing to accept one connection (the descriptor limit reached, say) must not end the process.
          tcp.on("error", (err) => log.error("accepting a connection failed", { error: err }));
          resolve(tcp.address() as AddressInfo);
        });
      });
    },

    /**
     * Shutdown without dropping requests clients have already sent.
     *
     * HTTP/2 sessions get a GOAWAY at once (see goAway): streams in flight finish, and a stream racing the
     * GOAWAY is refused unprocessed, which the client knows it may retry.
     *
     * HTTP/1.1 has no way to tell a client not to send on an idle keep-alive connection but closing it,
     * and a request sent just as the close reaches the client is lost (it sees a reset or an empty
     * reply). No design removes that race; this one keeps it to where it is least likely:
     * - idle connections are not closed at once. For a drain period (a second, at most half the grace)
     *   requests arriving on them, and responses in flight whose headers have not gone out yet, are
     *   answered with `Connection: close`: the connection then closes right after that response, and
     *   the client, told so, does not reuse it: no race. A request already on its way when shutdown
     *   begins is thus served instead of reset, and clients have time to notice that our listener no
     *   longer accepts and move on;
     * - then the idle connections are closed, as Node's closeIdleConnections decides: its parser knows
     *   whether a next request has begun to arrive, which JavaScript cannot see, and those connections
     *   are left to finish it and be answered with `Connection: close`.
     * What is left is the time for our FIN to reach a client, about one network round trip, on a
     * connection that client has left unused for the whole drain period.
     */
    async close(graceMs, onGraceExpired) {
      closing = true;
      const stopped = new Promise<void>((resolve) => tcp.close(() => resolve()));
      const everyoneGone = new Promise<void>((resolve) => {
        allClosed = resolve;
        if (connections.size === 0) resolve();
      });
      for (const conn of connections.values()) {
        if (conn.protocol === "http2") goAway(conn);
        for (const res of conn.responses) if (!res.headersSent) res.setHeader("connection", "close");
      }
      const drain = setTimeout(
        () => {
          drained = true;
          // Connections still short of their first request's headers after the drain period are held
          // by slow or hostile clients: a shutdown need not wait for their header deadline.
          for (const conn of [...unproductive]) if (!conn.ending && conn.inFlight === 0) headersLate(conn);
          http1.closeIdleConnections();
        },
        Math.min(maxDrainMs, graceMs / 2),
      );
      let graceTimer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<boolean>((resolve) => (graceTimer = setTimeout(() => resolve(true), graceMs)));
      const expired = await Promise.race([everyoneGone.then(() => false), graceOver]);
      clearTimeout(graceTimer);
      clearTimeout(drain);
      if (expired && connections.size > 0) {
        onGraceExpired();
        for (const conn of connections.values()) {
          conn.session?.destroy();
          conn.socket.destroy();
        }
      }
      // Stops Node's header-deadline checks (the listener itself is closed above).
      http1.close();
      await stopped;
    },
  };
}
