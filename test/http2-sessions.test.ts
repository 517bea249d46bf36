import { create, toBinary } from "@bufbuild/protobuf";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTracesRequestSchema } from "../gen/tonquery/v1/service_pb.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { envelope } from "./support/raw-rpc.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// HTTP/2 sessions whose calls the service refuses (issue 23, failure 2). A gRPC call whose message is larger than
// the service reads (64 KB) is answered RESOURCE_EXHAUSTED before its body has arrived; the client, held back by
// flow control, still has the rest to send. Unless the service resets the stream, the stream stays open, its session
// never counts as idle and keeps its place under MAX_CONNECTIONS: ten such sessions shut out every new client
// at a cap of 10. Timeouts are a few hundred milliseconds here; assertions allow several times that.

const slack = 2500;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const within = <T>(promise: Promise<T>, ms: number): Promise<T | "timeout"> => Promise.race([promise, sleep(ms).then(() => "timeout" as const)]);

/**
 * The two refused calls, with the grpc-status each gets: a 1 MB message (past the door's read limit:
 * RESOURCE_EXHAUSTED), and 1,400 tx_hash values (92 KB: within the 256 KB a StreamTraces of 1,000 addresses needs,
 * so read in full and refused by the handler for too many values: INVALID_ARGUMENT).
 */
const refusedCalls: [string, Buffer, string][] = [
  ["a 1 MB message", envelope(new Uint8Array(1024 * 1024)), String(8 /* RESOURCE_EXHAUSTED */)],
  [
    "1,400 tx_hash values",
    envelope(toBinary(GetTracesRequestSchema, create(GetTracesRequestSchema, { txHash: Array.from({ length: 1400 }, (_, i) => i.toString(16).padStart(64, "0")) }))),
    String(3 /* INVALID_ARGUMENT */),
  ],
];

interface Session {
  session: http2.ClientHttp2Session;
  goaway: Promise<number>;
  closed: Promise<void>;
}

function h2Connect(baseUrl: string): Promise<Session> {
  const session = http2.connect(baseUrl);
  session.on("error", () => {});
  const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
  const closed = new Promise<void>((resolve) => session.once("close", () => resolve()));
  return new Promise((resolve, reject) => {
    session.once("connect", () => resolve({ session, goaway, closed }));
    session.once("error", reject);
  });
}

/** Sends a GetTraces call with `payload` as its whole body; resolves with its grpc-status and how its stream ends. */
function call(session: http2.ClientHttp2Session, payload: Buffer) {
  const stream = session.request({ ":method": "POST", ":path": "/tonquery.v1.TonQueryService/GetTraces", "content-type": "application/grpc+proto", te: "trailers" });
  stream.on("error", () => {});
  stream.on("data", () => {});
  let status: string | undefined;
  const readStatus = (headers: http2.IncomingHttpHeaders) => {
    const value = headers["grpc-status"];
    if (typeof value === "string") status = value;
  };
  stream.on("response", readStatus);
  const answered = new Promise<string | undefined>((resolve) =>
    stream.on("trailers", (trailers) => {
      readStatus(trailers);
      resolve(status);
    }),
  );
  const closed = new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode ?? -1)));
  stream.end(payload);
  return { answered, closed };
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("HTTP/2 calls the service refuses", () => {
  let server: TestServer;
  beforeAll(async () => {
    // The body deadline is long: only resetting the stream can end it in time.
    server = await startTestServer(db.url, { HEADERS_TIMEOUT_MS: "300", BODY_TIMEOUT_MS: "60000", IDLE_TIMEOUT_MS: "300" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each(refusedCalls)("resets the stream of a call refused for %s, and closes the session once it is idle", async (_, payload, status) => {
    const { session, goaway, closed } = await h2Connect(server.baseUrl);
    try {
      const refused = call(session, payload);
      expect(await within(refused.answered, slack)).toBe(status);
      // RST_STREAM NO_ERROR: the answer stands, the rest of the upload is not wanted (RFC 9113 §8.1).
      expect(await within(refused.closed, slack)).toBe(http2.constants.NGHTTP2_NO_ERROR);
      expect(await within(goaway, 300 + slack)).toBe(http2.constants.NGHTTP2_NO_ERROR);
      expect(await within(closed, slack)).toBeUndefined();
    } finally {
      session.destroy();
    }
  });
});

describe("the connection cap, with sessions whose calls were refused", () => {
  let server: TestServer;
  beforeAll(async () => {
    // Deadlines of a minute: only the cap's making room can let a new client in.
    server = await startTestServer(db.url, { MAX_CONNECTIONS: "10", HEADERS_TIMEOUT_MS: "60000", BODY_TIMEOUT_MS: "60000", IDLE_TIMEOUT_MS: "60000" });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("lets new clients in past ten such sessions", async () => {
    const sessions: Session[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        const opened = await h2Connect(server.baseUrl);
        sessions.push(opened);
        const [, payload, status] = refusedCalls[i % refusedCalls.length] as [string, Buffer, string];
        const refused = call(opened.session, payload);
        expect(await within(refused.answered, slack)).toBe(status);
        await within(refused.closed, slack);
      }
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${server.baseUrl}/livez`);
        expect(response.status).toBe(200);
      }
    } finally {
      for (const { session } of sessions) session.destroy();
    }
  });
});
