import { createHook } from "node:async_hooks";
import http from "node:http";
import http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { brotliWindowBytes } from "./support/brotli-window.ts";
import { decodedBody, rawRequest, rawRequestHttp2, type RawResponse } from "./support/raw-http.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// REST answers compressed by Accept-Encoding (src/rest/compression.ts), read as raw bytes with node:http.

let db: TestDatabase;
/** Default settings: compression on, 1024-byte threshold. */
let server: TestServer;
/** COMPRESSION_MIN_BYTES=0: every answer is coded when the client asks, so that every path's coding is checked. */
let everything: TestServer;
/** COMPRESSION=false. */
let off: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  [server, everything, off] = await Promise.all([
    startTestServer(db.url),
    startTestServer(db.url, { COMPRESSION_MIN_BYTES: "0" }),
    startTestServer(db.url, { COMPRESSION: "false" }),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.close(), everything?.close(), off?.close()]);
  await db?.drop();
});

const demoTx = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";
/** Every trace of the demo: the largest page it has (several 64 KB batches). */
const largePage = "/api/v3/traces?limit=1000&include_actions=true";

/** Every kind of JSON answer of the REST door, successes and errors. */
const paths = [
  "/api/v3/masterchainInfo",
  `/api/v3/adjacentTransactions?hash=${demoTx}&direction=out`,
  "/api/v3/adjacentTransactions?hash=nothex",
  "/api/v3/traces?account=UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH&limit=5",
  `/api/v3/traces?tx_hash=${demoTx}&include_actions=true`,
  largePage,
  "/api/v3/traces?limit=2000",
  "/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=39984096&count=40",
  "/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=1",
  "/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=x",
  "/healthz",
  "/no/such/path",
];

/** v2 answers carry the time they were made (toncenter's `@extra`); everything else must be byte for byte the same. */
function withoutStamp(body: Buffer): Buffer {
  return Buffer.from(body.toString("utf8").replace(/"@extra":"[^"]*"/, '"@extra":""'));
}

/** Headers that must be alike between two answers to the same request: all but the per-message ones. */
function comparableHeaders(response: RawResponse): Record<string, unknown> {
  // The request id is each request's own (see Observability).
  const { date: _date, connection: _connection, "keep-alive": _keepAlive, "transfer-encoding": _te, "x-request-id": _id, ...rest } = response.headers;
  return rest;
}

describe("REST compression", () => {
  it("codes every REST answer with gzip and br into exactly the bytes of the uncoded answer", async () => {
    for (const path of paths) {
      const identity = await rawRequest(everything.baseUrl, path);
      expect(identity.headers["content-encoding"], path).toBeUndefined();
      // An answer over REST_HOLD_MAX_BYTES is streamed, without a Content-Length (see rest-streaming.test.ts).
      if (identity.body.length > everything.config.restHoldMaxBytes) expect(identity.headers["transfer-encoding"], path).toBe("chunked");
      else expect(Number(identity.headers["content-length"]), path).toBe(identity.body.length);
      JSON.parse(identity.body.toString("utf8"));
      for (const coding of ["gzip", "br"]) {
        const coded = await rawRequest(everything.baseUrl, path, { "accept-encoding": coding });
        expect({ path, status: coded.status, coding: coded.headers["content-encoding"] }).toEqual({ path, status: identity.status, coding });
        expect(coded.headers["content-length"], path).toBeUndefined();
        expect(coded.headers.vary, path).toBe("Accept-Encoding");
        expect(coded.headers["content-type"], path).toBe("application/json; charset=utf-8");
        expect(withoutStamp(decodedBody(coded)).equals(withoutStamp(identity.body)), `${path} ${coding}`).toBe(true);
        expect(coded.body.equals(identity.body), `${path} ${coding}`).toBe(false);
      }
    }
  });

  it("streams a large page through the compressor, a third of its size or less", async () => {
    const identity = await rawRequest(server.baseUrl, largePage);
    expect(identity.body.length).toBeGreaterThan(4 * 64 * 1024);
    for (const coding of ["gzip", "br"]) {
      const coded = await rawRequest(server.baseUrl, largePage, { "accept-encoding": coding });
      expect(coded.headers["content-encoding"]).toBe(coding);
      expect(coded.headers["transfer-encoding"]).toBe("chunked");
      expect(decodedBody(coded).equals(identity.body)).toBe(true);
      expect(coded.body.length).toBeLessThan(identity.body.length / 3);
    }
  });

  it("codes br with a window of 256 KB, not brotli's 4 MB: the memory of a compressor follows the chunk, not the page", async () => {
    const coded = await rawRequest(server.baseUrl, largePage, { "accept-encoding": "br" });
    expect(coded.body.length).toBeGreaterThan(0);
    expect(brotliWindowBytes(coded.body)).toBe(256 * 1024);
  });

  it("codes answers over HTTP/2 as well", async () => {
    const identity = await rawRequestHttp2(server.baseUrl, largePage);
    const coded = await rawRequestHttp2(server.baseUrl, largePage, { "accept-encoding": "br" });
    expect(coded.status).toBe(200);
    expect(coded.headers["content-encoding"]).toBe("br");
    expect(coded.headers.vary).toBe("Accept-Encoding");
    expect(decodedBody(coded).equals(identity.body)).toBe(true);
  });

  // RFC 9110 §12.5.3. Ties go to br, then gzip; nothing acceptable gets identity rather than a 406.
  it.each([
    [undefined, undefined],
    ["", undefined],
    ["gzip", "gzip"],
    ["br", "br"],
    ["GZIP", "gzip"],
    ["gzip, deflate, br, zstd", "br"],
    ["deflate, gzip", "gzip"],
    ["br;q=0.5, gzip", "gzip"],
    ["gzip;q=0.8, br;q=0.9", "br"],
    ["br;q=0, gzip", "gzip"],
    ["br;q=0, *", "gzip"],
    ["*", "br"],
    ["*;q=0.1, gzip;q=0.5", "gzip"],
    ["gzip;q=0.5, identity", undefined],
    ["identity", undefined],
    ["deflate", undefined],
    ["gzip;q=0, br;q=0", undefined],
    ["identity;q=0", undefined],
    ["*;q=0", undefined],
    ["zstd, identity;q=0", undefined],
    ["gzip;q=abc", undefined],
  ])("Accept-Encoding %j gets %s", async (accept, expected) => {
    const response = await rawRequest(server.baseUrl, largePage, accept === undefined ? {} : { "accept-encoding": accept });
    expect(response.status).toBe(200);
    expect(response.headers["content-encoding"]).toBe(expected);
    expect(response.headers.vary).toBe("Accept-Encoding");
    JSON.parse(decodedBody(response).toString("utf8"));
  });

  it("sends answers under COMPRESSION_MIN_BYTES uncoded unless the client refuses identity", async () => {
    for (const path of ["/healthz", "/api/v3/adjacentTransactions?hash=nothex", `/api/v3/adjacentTransactions?hash=${demoTx}&direction=in`]) {
      const small = await rawRequest(server.baseUrl, path, { "accept-encoding": "gzip, br" });
      expect(small.body.length, path).toBeLessThan(1024);
      expect(small.headers["content-encoding"], path).toBeUndefined();
      expect(Number(small.headers["content-length"]), path).toBe(small.body.length);
      expect(small.headers.vary, path).toBe("Accept-Encoding");

      const refused = await rawRequest(server.baseUrl, path, { "accept-encoding": "gzip, identity;q=0" });
      expect(refused.headers["content-encoding"], path).toBe("gzip");
      expect(decodedBody(refused).equals(small.body), path).toBe(true);
    }
    // Just over the threshold: coded.
    const info = await rawRequest(server.baseUrl, "/api/v3/masterchainInfo");
    const threshold = await startTestServer(db.url, { COMPRESSION_MIN_BYTES: String(info.body.length) });
    try {
      const at = await rawRequest(threshold.baseUrl, "/api/v3/masterchainInfo", { "accept-encoding": "gzip" });
      expect(at.headers["content-encoding"]).toBe("gzip");
      const above = await startTestServer(db.url, { COMPRESSION_MIN_BYTES: String(info.body.length + 1) });
      try {
        const under = await rawRequest(above.baseUrl, "/api/v3/masterchainInfo", { "accept-encoding": "gzip" });
        expect(under.headers["content-encoding"]).toBeUndefined();
      } finally {
        await above.close();
      }
    } finally {
      await threshold.close();
    }
  });

  it("keeps an existing Vary and adds Accept-Encoding to it", async () => {
    const corsOrigin = await startTestServer(db.url, { CORS_ORIGIN: "https://app.example" });
    try {
      const response = await rawRequest(corsOrigin.baseUrl, largePage, { origin: "https://app.example", "accept-encoding": "gzip" });
      expect(response.headers.vary).toBe("Origin, Accept-Encoding");
      expect(response.headers["content-encoding"]).toBe("gzip");
    } finally {
      await corsOrigin.close();
    }
  });

  it("COMPRESSION=false sends every answer uncoded, without Vary", async () => {
    const response = await rawRequest(off.baseUrl, largePage, { "accept-encoding": "br, gzip" });
    expect(response.headers["content-encoding"]).toBeUndefined();
    expect(response.headers.vary).toBeUndefined();
    // Over REST_HOLD_MAX_BYTES: streamed as it is, chunked.
    expect(response.headers["transfer-encoding"]).toBe("chunked");
    JSON.parse(response.body.toString("utf8"));
  });

  it("answers HEAD with the headers of GET and no body", async () => {
    for (const accept of ["br", "gzip", "identity"]) {
      for (const path of [largePage, "/api/v3/masterchainInfo", "/api/v3/traces?limit=2000", "/healthz"]) {
        const get = await rawRequest(server.baseUrl, path, { "accept-encoding": accept });
        const head = await rawRequest(server.baseUrl, path, { "accept-encoding": accept }, "HEAD");
        expect({ path, accept, status: head.status, headers: comparableHeaders(head) }).toEqual({
          path,
          accept,
          status: get.status,
          headers: comparableHeaders(get),
        });
        expect(head.body.length).toBe(0);
      }
    }
  });
});

describe("a client that goes away in the middle of a coded answer", () => {
  /** The stream that owns a zlib handle: node:zlib marks its handle with it under the symbol `owner_symbol`. */
  function owner(handle: object): { constructor: { name: string }; destroyed: boolean } | undefined {
    const symbol = Object.getOwnPropertySymbols(handle).find((s) => s.description === "owner_symbol");
    return symbol === undefined ? undefined : (handle as Record<symbol, { constructor: { name: string }; destroyed: boolean }>)[symbol];
  }

  /** The compressors created while `run` runs (the server runs in this process, so its zlib handles are seen here). */
  async function watchCompressors(run: (compressors: () => ({ destroyed: boolean } | undefined)[]) => Promise<void>) {
    const handles: object[] = [];
    const hook = createHook({
      init(_id, type, _trigger, resource) {
        if (type === "ZLIB") handles.push(resource as object);
      },
    }).enable();
    const compressors = () => handles.map(owner).filter((o) => o?.constructor.name === "Gzip" || o?.constructor.name === "BrotliCompress");
    try {
      await run(compressors);
    } finally {
      hook.disable();
    }
  }

  /**
   * Over HTTP/2 the client's flow-control window holds the server to 64 KB it has not read: the server waits for the
   * client in the middle of the coded answer, for as long as the client does not read. Then the client cancels.
   */
  function leaveHttp2(coding: string, whileWaiting: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(server.baseUrl);
      session.on("error", reject);
      const stream = session.request({ ":path": largePage, "accept-encoding": coding });
      stream.on("response", (headers) => {
        expect(headers["content-encoding"]).toBe(coding);
        stream.pause();
        setTimeout(() => {
          whileWaiting();
          stream.close(http2.constants.NGHTTP2_CANCEL, () => session.close(() => resolve()));
        }, 300);
      });
    });
  }

  /** HTTP/1.1: reads the first chunk, stops reading, then drops the connection. */
  function leaveHttp1(coding: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const req = http.get(`${server.baseUrl}${largePage}`, { headers: { "accept-encoding": coding }, agent: false }, (res) => {
        res.once("data", () => {
          res.pause();
          req.destroy();
          resolve();
        });
      });
      req.on("error", (err) => (req.destroyed ? undefined : reject(err)));
    });
  }

  it("costs the server nothing: no error, every compressor destroyed, the next requests served", async () => {
    await watchCompressors(async (compressors) => {
      for (const coding of ["br", "gzip"]) {
        for (let i = 0; i < 3; i++) {
          const seen = compressors().length;
          // The answer is under way, its compressor alive, when the client goes away.
          await leaveHttp2(coding, () => expect(compressors().slice(seen).map((c) => c?.destroyed)).toEqual([false]));
        }
        for (let i = 0; i < 3; i++) await leaveHttp1(coding);
      }
      const after = await rawRequest(server.baseUrl, largePage, { "accept-encoding": "br" });
      expect(after.status).toBe(200);
      JSON.parse(decodedBody(after).toString("utf8"));
      expect((await rawRequest(server.baseUrl, "/api/v3/masterchainInfo")).status).toBe(200);
      expect(compressors().length).toBe(13);
      // An abandoned answer's compressor is destroyed (its native memory freed) once the client is gone.
      for (let i = 0; i < 50 && compressors().some((c) => !c?.destroyed); i++) await sleep(100);
      expect(compressors().filter((c) => !c?.destroyed).length).toBe(0);
    });
  });
});
