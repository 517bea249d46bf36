import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { defaultMaxConnections } from "../src/runtime/config.ts";
import { readRecording } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedMasterchainInfo } from "../src/recordings/recorded.ts";
import { createSinglePortServer, type ConnectionLimits, type HttpHandler, type SinglePortServer } from "../src/server/single-port.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// What a client can do to the service's connections: hold them open without finishing a request, leave
// them idle, open more than the process has descriptors for, or be talking when the service shuts down.
// Timeouts are a few hundred milliseconds here; assertions allow several times that.

const small: ConnectionLimits = { headersTimeoutMs: 300, bodyTimeoutMs: 300, idleTimeoutMs: 300, maxConnections: 1000 };
/** How long a connection may take to be closed after its bound, before we call it held for ever. */
const slack = 2500;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** "/slow?ms=N" answers after N ms; a POST answers once its whole body has arrived; anything else at once. */
const testHandler: HttpHandler = (req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost");
  const ms = Number(url.searchParams.get("ms") ?? "0");
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    setTimeout(() => {
      if (res.headersSent || res.writableEnded || res.destroyed) return;
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(`ok ${Buffer.concat(chunks).length}`);
    }, ms);
  });
  req.on("error", () => {});
};

interface Running {
  server: SinglePortServer;
  port: number;
  graceExpired: () => boolean;
  close(graceMs?: number): Promise<void>;
}

const running = new Set<Running>();

async function start(limits: Partial<ConnectionLimits> = {}, handler: HttpHandler = testHandler): Promise<Running> {
  const server = createSinglePortServer(handler, { ...small, ...limits });
  const { port } = await server.listen(0, "127.0.0.1");
  let expired = false;
  let closed: Promise<void> | undefined;
  const r: Running = {
    server,
    port,
    graceExpired: () => expired,
    close: (graceMs = 2000) => (closed ??= server.close(graceMs, () => (expired = true))),
  };
  running.add(r);
  return r;
}

afterEach(async () => {
  await Promise.all([...running].map((r) => r.close(0)));
  running.clear();
});

interface Raw {
  socket: net.Socket;
  received: () => string;
  /** Resolves with true once the server has closed the connection, or false after `ms`. */
  closedWithin(ms: number): Promise<boolean>;
  isClosed: () => boolean;
}

async function connect(port: number): Promise<Raw> {
  const socket = net.connect(port, "127.0.0.1");
  let data = "";
  let closed = false;
  const closedEvent = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve();
    }),
  );
  socket.on("data", (chunk: Buffer) => (data += chunk.toString("latin1")));
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return {
    socket,
    received: () => data,
    isClosed: () => closed,
    closedWithin: (ms) => Promise.race([closedEvent.then(() => true), sleep(ms).then(() => false)]),
  };
}

/** Writes `text` one byte every `everyMs` until the socket closes or `text` runs out. */
async function trickle(raw: Raw, text: string, everyMs: number): Promise<void> {
  for (const ch of text) {
    if (raw.isClosed() || raw.socket.destroyed) return;
    raw.socket.write(ch);
    await sleep(everyMs);
  }
}

const endlessHeaders = "GET / HTTP/1.1\r\nHost: localhost\r\n" + "X-Padding: a\r\n".repeat(1000);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

function get(port: number, path: string, agent: http.Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

function h2Get(session: http2.ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":path": path });
    let status = 0;
    let body = "";
    stream.setEncoding("utf8");
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    stream.on("data", (chunk: string) => (body += chunk));
    stream.on("end", () => resolve({ status, body }));
    stream.on("error", reject);
    stream.end();
  });
}

function h2Connect(port: number): Promise<{ session: http2.ClientHttp2Session; goaway: Promise<number>; closed: Promise<void> }> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
  const closed = new Promise<void>((resolve) => session.once("close", () => resolve()));
  return new Promise((resolve, reject) => {
    session.once("connect", () => resolve({ session, goaway, closed }));
    session.once("error", reject);
  });
}

async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
  return true;
}

const within = <T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> =>
  Promise.race([promise, sleep(ms).then(() => "timeout" as const)]);

describe("connections that never finish a request", () => {
  it("closes a connection that sends nothing", async () => {
    const { port } = await start();
    const raw = await connect(port);
    expect(await raw.closedWithin(small.headersTimeoutMs + slack)).toBe(true);
  });

  it("closes a slowloris connection trickling its request headers, with a 408", async () => {
    const { port } = await start();
    const raw = await connect(port);
    void trickle(raw, endlessHeaders, 20);
    expect(await raw.closedWithin(small.headersTimeoutMs + slack)).toBe(true);
    expect(raw.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes a keep-alive connection trickling the headers of its second request", async () => {
    // Trickled faster than the idle timeout, so only a bound on the request's headers can end it.
    const { port } = await start({ idleTimeoutMs: 60_000 });
    const raw = await connect(port);
    raw.socket.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    await until(() => raw.received().includes("ok 0"), 1000);
    expect(raw.received()).toMatch(/^HTTP\/1\.1 200 /);
    void trickle(raw, endlessHeaders, 20);
    expect(await raw.closedWithin(small.headersTimeoutMs + slack)).toBe(true);
  });

  it("closes a connection that sends part of the HTTP/2 preface and stops", async () => {
    const { port } = await start();
    const raw = await connect(port);
    raw.socket.write("PRI * HTTP/2.0\r\n");
    expect(await raw.closedWithin(small.headersTimeoutMs + slack)).toBe(true);
  });

  it("closes a connection trickling the HTTP/2 preface", async () => {
    const { port } = await start();
    const raw = await connect(port);
    // 24 bytes at 150 ms each would complete after 3.6 s: the preface deadline must come first.
    void trickle(raw, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 150);
    expect(await raw.closedWithin(small.headersTimeoutMs + slack)).toBe(true);
  });

  it("answers 408 and closes when a request's body is trickled", async () => {
    const { port } = await start({ idleTimeoutMs: 60_000 });
    const raw = await connect(port);
    raw.socket.write("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n");
    void trickle(raw, "x".repeat(1000), 20);
    expect(await raw.closedWithin(small.bodyTimeoutMs + slack)).toBe(true);
    expect(raw.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(raw.received()).toMatch(/\r\nconnection: close\r\n/i);
  });

  it("answers 408 and closes when a request's body never ends", async () => {
    const { port } = await start({ idleTimeoutMs: 60_000 });
    const raw = await connect(port);
    raw.socket.write("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nabc");
    expect(await raw.closedWithin(small.bodyTimeoutMs + slack)).toBe(true);
    expect(raw.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("answers 408 on an HTTP/2 stream whose body never ends, and keeps serving the session", async () => {
    const { port } = await start({ idleTimeoutMs: 60_000 });
    const { session } = await h2Connect(port);
    try {
      const stream = session.request({ ":path": "/", ":method": "POST" });
      stream.on("error", () => {});
      stream.write("abc");
      const status = new Promise<number>((resolve) => stream.on("response", (headers) => resolve(Number(headers[":status"]))));
      expect(await within(status, small.bodyTimeoutMs + slack)).toBe(408);
      expect(await h2Get(session, "/")).toEqual({ status: 200, body: "ok 0" });
    } finally {
      session.destroy();
    }
  });
});

describe("idle connections", () => {
  it("closes an HTTP/1.1 keep-alive connection left idle", async () => {
    const { port } = await start();
    const raw = await connect(port);
    raw.socket.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    // Node closes keepAliveTimeoutBuffer (1 s) after the advertised timeout.
    expect(await raw.closedWithin(small.idleTimeoutMs + 1000 + slack)).toBe(true);
    expect(raw.received()).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("sends GOAWAY to an HTTP/2 session that never opens a stream, then closes it", async () => {
    const { port } = await start({ headersTimeoutMs: 60_000 });
    const { goaway, closed } = await h2Connect(port);
    expect(await within(goaway, small.idleTimeoutMs + slack)).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(await within(closed, slack)).toBeUndefined();
  });

  it("sends GOAWAY to an HTTP/2 session idle after its requests", async () => {
    const { port } = await start();
    const { session, goaway, closed } = await h2Connect(port);
    expect(await h2Get(session, "/")).toEqual({ status: 200, body: "ok 0" });
    expect(await within(goaway, small.idleTimeoutMs + slack)).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(await within(closed, slack)).toBeUndefined();
  });

  it("does not cut requests in progress longer than the header and idle timeouts", async () => {
    const { port } = await start();
    const raw = await connect(port);
    // The first request on a connection, then a second one after it on the same connection.
    raw.socket.write("GET /slow?ms=1200 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    expect(await until(() => raw.received().includes("ok 0"), 5000)).toBe(true);
    raw.socket.write("GET /slow?ms=1200 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    expect(await until(() => raw.received().split("ok 0").length === 3, 5000)).toBe(true);
    expect(raw.received().match(/HTTP\/1\.1 200 /g)).toHaveLength(2);
    raw.socket.destroy();

    const { session } = await h2Connect(port);
    try {
      expect(await h2Get(session, "/slow?ms=1200")).toEqual({ status: 200, body: "ok 0" });
    } finally {
      session.destroy();
    }
  });
});

describe("writes", () => {
  // Node's HTTP servers turn Nagle's algorithm off on the sockets they accept themselves, but this server accepts them
  // with its own net.Server and hands them over. With Nagle on, a body written in several pieces (a compressed or
  // streamed answer) waited for the client's delayed ACK before its last small segment: the hot 100-trace page
  // over REST with brotli took 72-76 ms at concurrency 1 against 28 ms with it off. Node keeps the choice under an
  // internal symbol only (there is no getsockopt); its absence fails the test rather than passing it.
  const noDelay = Object.getOwnPropertySymbols(new net.Socket()).find((symbol) => symbol.description === "kSetNoDelay");

  it("sends HTTP/1.1 and HTTP/2 answers without waiting for the client's acknowledgements (TCP_NODELAY)", async () => {
    expect(noDelay).toBeDefined();
    const seen: unknown[] = [];
    const { port } = await start({}, (req, res) => {
      seen.push((req.socket as unknown as Record<symbol, unknown>)[noDelay as symbol]);
      res.end("ok");
    });
    await new Promise<void>((resolve, reject) => http.get({ port, host: "127.0.0.1", agent: false }, (res) => res.resume().on("end", resolve)).on("error", reject));
    const { session } = await h2Connect(port);
    try {
      expect(await h2Get(session, "/")).toEqual({ status: 200, body: "ok" });
    } finally {
      session.destroy();
    }
    expect(seen).toEqual([true, true]);
  });
});

describe("shutdown", () => {
  it("answers requests sent on idle keep-alive connections as close() starts, with Connection: close", async () => {
    const r = await start({ idleTimeoutMs: 60_000, headersTimeoutMs: 60_000 }, (req, res) => {
      setTimeout(() => testHandler(req, res), 20);
    });
    const agents = Array.from({ length: 40 }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
    const sessions = await Promise.all(Array.from({ length: 5 }, () => h2Connect(r.port)));
    try {
      // Every client holds one idle keep-alive connection.
      for (const agent of agents) expect((await get(r.port, "/", agent)).status).toBe(200);
      for (const { session } of sessions) expect((await h2Get(session, "/")).status).toBe(200);

      // HTTP/2 requests in flight when shutdown starts.
      const h2InFlight = sessions.map(({ session }) => h2Get(session, "/slow?ms=500"));
      await sleep(100);

      const send = (agent: http.Agent) => get(r.port, "/", agent).then((a) => a, (err: unknown) => err as Error);
      // A quarter of the clients send in the same tick as close() is called (their bytes reach the
      // server while it begins shutting down), the others over the next 200 ms.
      const h1 = agents.filter((_, i) => i % 4 === 0).map(send);
      const closed = r.close(5000);
      h1.push(...agents.filter((_, i) => i % 4 !== 0).map((agent, i) => sleep(i * 7).then(() => send(agent))));
      const h2 = sessions.map(({ session }) => h2Get(session, "/").then((a) => a, (err: unknown) => err as Error));
      const answers = await Promise.all(h1);
      const errors = answers.filter((a) => a instanceof Error).map((e) => `${(e as NodeJS.ErrnoException).code}: ${e.message}`);
      expect(errors).toEqual([]);
      for (const a of answers as Answer[]) {
        expect(a.status).toBe(200);
        expect(a.reusedSocket).toBe(true);
        expect(a.headers.connection).toBe("close");
      }
      // HTTP/2 streams in flight finish; one racing the GOAWAY is either served or refused unprocessed,
      // which its client knows it may retry; never reset after the server began it.
      expect(await Promise.all(h2InFlight)).toEqual(sessions.map(() => ({ status: 200, body: "ok 0" })));
      for (const a of await Promise.all(h2)) {
        if (a instanceof Error) expect(a.message).toMatch(/NGHTTP2_REFUSED_STREAM/);
        else expect(a).toEqual({ status: 200, body: "ok 0" });
      }
      expect(await within(closed, 4000)).toBeUndefined();
      expect(r.graceExpired()).toBe(false);
      // HTTP/2 clients were told with GOAWAY, and their connections are closed.
      for (const { goaway, closed: sessionClosed } of sessions) {
        expect(await within(goaway, 1000)).toBe(http2.constants.NGHTTP2_NO_ERROR);
        expect(await within(sessionClosed, 1000)).toBeUndefined();
      }
    } finally {
      for (const agent of agents) agent.destroy();
      for (const { session } of sessions) session.destroy();
    }
  });

  it("closes idle and never-productive connections without waiting for the whole grace period", async () => {
    const r = await start({ idleTimeoutMs: 60_000, headersTimeoutMs: 60_000 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const { session, closed: sessionClosed } = await h2Connect(r.port);
    const silent = await connect(r.port);
    const slowloris = await connect(r.port);
    void trickle(slowloris, endlessHeaders, 20);
    try {
      expect((await get(r.port, "/", agent)).status).toBe(200);
      expect((await h2Get(session, "/")).status).toBe(200);
      // The grace period is long; idle connections must not hold the shutdown for all of it.
      expect(await within(r.close(30_000), 10_000)).toBeUndefined();
      expect(r.graceExpired()).toBe(false);
      expect(await within(sessionClosed, 1000)).toBeUndefined();
      expect(silent.isClosed() && slowloris.isClosed()).toBe(true);
    } finally {
      agent.destroy();
      session.destroy();
      silent.socket.destroy();
      slowloris.socket.destroy();
    }
  });
});

describe("the default connection cap, in the real service under a 256-descriptor limit", () => {
  const projectRoot = new URL("..", import.meta.url).pathname;
  let db: TestDatabase;
  let child: ChildProcessWithoutNullStreams;
  let stderr = "";
  let port = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    const recording = await readRecording<RecordedMasterchainInfo>("masterchainInfo_mainnet_gem_1.json");
    await new IndexLoader().addMasterchainInfo(recording).write(db.admin);
    // The header and idle timeouts are a minute here: only the cap can keep the service answering, and it is left
    // to its default, which must follow the descriptor limit (issue 23: 2000 let the flood take every descriptor).
    child = spawn("bash", ["-c", 'ulimit -n 256 && exec "$0" src/main.ts', process.execPath], {
      cwd: projectRoot,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        HOST: "127.0.0.1",
        PORT: "0",
        DATABASE_URL: db.url,
        DB_POOL_SIZE: "4",
        HEADERS_TIMEOUT_MS: "60000",
        BODY_TIMEOUT_MS: "60000",
        IDLE_TIMEOUT_MS: "60000",
      },
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.resume();
    const deadline = Date.now() + 30_000;
    for (;;) {
      const m = /"message":"tonquery ready".*?"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(stderr);
      if (m) {
        port = Number(m[1]);
        break;
      }
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`service did not start: ${stderr}`);
      await sleep(50);
    }
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    }
    await db?.drop();
  });

  it("keeps answering while 300 connections are held open without a request", async () => {
    const attackers: Raw[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const raw = await connect(port);
        // Silent ones, one-byte ones, and ones partway into the HTTP/2 preface.
        if (i % 3 === 1) raw.socket.write("G");
        if (i % 3 === 2) raw.socket.write("PRI * HTTP/2.0\r\n");
        attackers.push(raw);
      }
      await sleep(200);
      for (let i = 0; i < 10; i++) {
        const response = await fetch(`http://127.0.0.1:${port}/api/v3/masterchainInfo`);
        expect(response.status, stderr).toBe(200);
        expect(((await response.json()) as { last: { seqno: number } }).last.seqno).toBeGreaterThan(0);
      }
      // The oldest held connections made room; the service stayed under its cap, what 256 descriptors leave.
      expect(attackers.filter((raw) => raw.isClosed()).length).toBeGreaterThanOrEqual(300 - defaultMaxConnections(256, 4 + 1));
    } finally {
      for (const raw of attackers) raw.socket.destroy();
    }
  });
});
