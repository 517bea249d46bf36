import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDemoDataset, readRecording } from "../src/demo/dataset.ts";
import type { RecordedTrace } from "../src/recordings/recorded.ts";
import { cacheControl } from "../src/rest/caching.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { decodedBody, rawRequest, type RawResponse } from "./support/raw-http.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// ETag, If-None-Match and Cache-Control of the REST answers (src/rest/caching.ts). A wrong "immutable" would be
// served to everyone behind a shared cache, so the answers that must not be final are checked as closely as those
// that must.

type Json = Record<string, unknown>;

let db: TestDatabase;
let server: TestServer;
/** The five complete, classified traces of mc block 35120456 (fixtures/toncenter/traces_array_...). */
let settled: RecordedTrace[];

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  settled = await readRecording<RecordedTrace[]>("traces_array_mainnet_mc35120456_blockcacher_sortedkeys.json");
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

const get = (path: string, headers: Record<string, string> = {}, method = "GET") => rawRequest(server.baseUrl, path, headers, method);
const json = (response: RawResponse) => JSON.parse(decodedBody(response).toString("utf8")) as Json;
const q = encodeURIComponent;
const hex = (base64: string) => Buffer.from(base64, "base64").toString("hex");

const block = "/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=39984096";
/** The demo's wallet transfer: a complete trace the classifier has not marked (classification_state unclassified). */
const unclassifiedTx = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";

function caching(response: RawResponse) {
  return { status: response.status, cacheControl: response.headers["cache-control"], etag: response.headers.etag };
}

describe("ETag and If-None-Match", () => {
  it("gives a 200 a weak ETag over its content, the same for every coding and every request", async () => {
    const first = await get(`${block}&count=2`);
    expect(first.status).toBe(200);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]{11}"$/);
    // The v2 stamp (@extra, the answer's time) changes from one answer to the next; the ETag does not.
    for (const accept of ["identity", "gzip", "br"]) {
      const again = await get(`${block}&count=2`, { "accept-encoding": accept });
      expect({ accept, etag: again.headers.etag }).toEqual({ accept, etag });
    }
    expect((await get(`${block}&count=3`)).headers.etag).not.toBe(etag);
  });

  it("gives an answer the same ETag however often it is asked, while PostgreSQL changes its plans", async () => {
    // One connection for prepared statements, so that they move to their generic plan after five runs; another
    // plan may return rows in another order, and the same answer must still be the same bytes.
    // The 1000-trace page is over REST_HOLD_MAX_BYTES' default, past which an answer is streamed without an ETag.
    const onePool = await startTestServer(db.url, { DB_POOL_SIZE: "2", REST_HOLD_MAX_BYTES: String(64 * 1024 * 1024) });
    try {
      for (const path of ["/api/v3/traces?limit=1000", `${block}&count=40`]) {
        const etags = new Set<string>();
        for (let i = 0; i < 12; i++) etags.add((await rawRequest(onePool.baseUrl, path)).headers.etag as string);
        expect(etags.has(undefined as unknown as string), path).toBe(false);
        expect({ path, etags: etags.size }).toEqual({ path, etags: 1 });
      }
    } finally {
      await onePool.close();
    }
  });

  it("answers a matching If-None-Match with 304: no body, the ETag, Cache-Control and Vary of the 200", async () => {
    for (const path of [`${block}&count=2`, "/api/v3/masterchainInfo", `/api/v3/adjacentTransactions?hash=${unclassifiedTx}&direction=out`]) {
      const ok = await get(path, { "accept-encoding": "br" });
      const etag = ok.headers.etag as string;
      const opaque = etag.slice(2);
      for (const ifNoneMatch of [etag, opaque, `"other", ${etag}`, "*"]) {
        for (const method of ["GET", "HEAD"]) {
          const notModified = await get(path, { "if-none-match": ifNoneMatch, "accept-encoding": "br" }, method);
          expect({ path, ifNoneMatch, method, status: notModified.status, bytes: notModified.body.length }).toEqual({
            path,
            ifNoneMatch,
            method,
            status: 304,
            bytes: 0,
          });
          expect(notModified.headers.etag).toBe(etag);
          expect(notModified.headers["cache-control"]).toBe(ok.headers["cache-control"]);
          expect(notModified.headers.vary).toBe("Accept-Encoding");
          expect(notModified.headers["content-encoding"]).toBeUndefined();
        }
      }
      // Another coding of the same answer is the same answer: the ETag a gzip client kept still matches.
      expect((await get(path, { "if-none-match": etag, "accept-encoding": "gzip" })).status).toBe(304);
      expect((await get(path, { "if-none-match": etag })).status).toBe(304);
    }
  });

  it("answers a stale or foreign If-None-Match, or a forced reload, with the whole answer", async () => {
    const path = `${block}&count=2`;
    const etag = (await get(path)).headers.etag as string;
    const requests: Record<string, string>[] = [
      { "if-none-match": 'W/"stale"' },
      { "if-none-match": (await get(`${block}&count=3`)).headers.etag as string },
      { "if-none-match": etag, "cache-control": "no-cache" },
    ];
    for (const headers of requests) {
      const response = await get(path, headers);
      expect(response.status).toBe(200);
      expect((json(response).result as Json).transactions).toHaveLength(2);
    }
  });

  it("never gives an error, /healthz or a 404 an ETag, nor answers them with 304", async () => {
    for (const path of [
      "/api/v3/traces?limit=5000",
      "/api/v3/adjacentTransactions?hash=00",
      `${block}&count=0`,
      "/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=7",
      "/healthz",
      "/no/such/path",
    ]) {
      const response = await get(path, { "if-none-match": "*" });
      expect({ path, ...caching(response) }).toEqual({ path, status: response.status, cacheControl: "no-store", etag: undefined });
      expect(response.status).not.toBe(304);
    }
  });
});

describe("Cache-Control", () => {
  it("declares a page of an indexed block's transactions final", async () => {
    for (const count of [1, 2, 40]) {
      const response = await get(`${block}&count=${count}`);
      expect(caching(response)).toMatchObject({ status: 200, cacheControl: "public, max-age=31536000, immutable" });
    }
  });

  it("does not declare a block's empty page, a missing block or a block with other hashes final", async () => {
    const whole = json(await get(`${block}&count=1000`)).result as { transactions: { transaction_id: { lt: string }; address: { account_address: string } }[] };
    const last = whole.transactions.at(-1);
    expect(last).toBeDefined();
    const pastTheEnd = await get(`${block}&after_lt=${last?.transaction_id.lt}&after_hash=${q(last?.address.account_address ?? "")}`);
    expect((json(pastTheEnd).result as Json).transactions).toEqual([]);
    expect(caching(pastTheEnd)).toMatchObject({ status: 200, cacheControl: "no-cache" });

    const missing = await get("/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=39984097");
    expect(caching(missing)).toEqual({ status: 404, cacheControl: "no-store", etag: undefined });
    const otherHash = await get(`${block}&root_hash=${"00".repeat(32)}`);
    expect(caching(otherHash)).toEqual({ status: 404, cacheControl: "no-store", etag: undefined });
  });

  it("lets masterchainInfo be cached for a second and adjacentTransactions only with revalidation", async () => {
    expect(caching(await get("/api/v3/masterchainInfo"))).toMatchObject({ status: 200, cacheControl: "public, max-age=1" });
    for (const query of [`hash=${unclassifiedTx}&direction=out`, `hash=${unclassifiedTx}`]) {
      const response = await get(`/api/v3/adjacentTransactions?${query}`);
      expect(caching(response)).toMatchObject({ status: 200, cacheControl: "no-cache" });
    }
    // A root transaction has no parent: "not found" now, never cached.
    const noParent = await get(`/api/v3/adjacentTransactions?hash=${unclassifiedTx}&direction=in`);
    expect(caching(noParent)).toEqual({ status: 404, cacheControl: "no-store", etag: undefined });
  });

  it("declares complete, classified traces looked up by id or transaction hash final", async () => {
    expect(settled).toHaveLength(5);
    for (const trace of settled) {
      expect(trace.trace_info).toMatchObject({ trace_state: "complete", classification_state: "ok", pending_messages: 0 });
      const byId = [`trace_id=${q(trace.trace_id)}`, `trace_id=${hex(trace.trace_id)}`, `trace_id=${q(trace.trace_id)}&include_actions=true`];
      const byTx = Object.keys(trace.transactions ?? {}).map((hash) => `tx_hash=${q(hash)}`);
      for (const query of [...byId, ...byTx]) {
        const response = await get(`/api/v3/traces?${query}`);
        expect({ query, ...caching(response) }).toMatchObject({ query, status: 200, cacheControl: cacheControl.finalTraces });
        expect(json(response).traces).toHaveLength(1);
      }
    }
    const all = settled.map((t) => `trace_id=${q(t.trace_id)}`).join("&");
    expect(caching(await get(`/api/v3/traces?${all}`))).toMatchObject({ status: 200, cacheControl: "public, max-age=86400, immutable" });
  });

  it("does not declare final a page that may still grow or change", async () => {
    const [first, second] = settled as [RecordedTrace, RecordedTrace];
    const firstTx = Object.values(first.transactions ?? {})[0];
    const unknown = "11".repeat(32);
    const notFinal = {
      "by message hash (an external message can be accepted again)": `msg_hash=${q(first.external_hash ?? "")}`,
      "by account": `account=${q(firstTx?.account ?? "")}`,
      "the newest traces": "limit=5",
      "by masterchain block": `mc_seqno=${first.mc_seqno_end}`,
      "an unknown trace id (empty page)": `trace_id=${unknown}`,
      "an unknown transaction hash (empty page)": `tx_hash=${unknown}`,
      "a trace id found and one not (yet)": `trace_id=${q(first.trace_id)}&trace_id=${unknown}`,
      "two trace ids, a page of one": `trace_id=${q(first.trace_id)}&trace_id=${q(second.trace_id)}&limit=1`,
      "a complete trace not classified yet": `tx_hash=${unclassifiedTx}`,
      "a complete trace not classified yet, by id, with actions": `trace_id=${unclassifiedTx}&include_actions=true`,
    };
    for (const [what, query] of Object.entries(notFinal)) {
      const response = await get(`/api/v3/traces?${query}`);
      expect({ what, ...caching(response) }).toMatchObject({ what, status: 200, cacheControl: "no-cache" });
      expect(response.headers.etag, what).toBeDefined();
    }
  });

  it("does not declare final a trace over MAX_TRACE_TRANSACTIONS (returned incomplete)", async () => {
    const small = await startTestServer(db.url, { MAX_TRACE_TRANSACTIONS: "5" });
    try {
      const large = settled.find((t) => Object.keys(t.transactions ?? {}).length > 5) as RecordedTrace;
      const tiny = settled.find((t) => Object.keys(t.transactions ?? {}).length === 1) as RecordedTrace;
      const cut = await rawRequest(small.baseUrl, `/api/v3/traces?trace_id=${q(large.trace_id)}`);
      expect((json(cut).traces as Json[])[0]?.is_incomplete).toBe(true);
      expect(caching(cut)).toMatchObject({ status: 200, cacheControl: "no-cache" });
      const whole = await rawRequest(small.baseUrl, `/api/v3/traces?trace_id=${q(tiny.trace_id)}`);
      expect(caching(whole)).toMatchObject({ status: 200, cacheControl: cacheControl.finalTraces });
    } finally {
      await small.close();
    }
  });

  it("stops declaring a trace final while it is pending, and changes its ETag", async () => {
    const trace = settled[3] as RecordedTrace;
    const path = `/api/v3/traces?tx_hash=${q(Object.keys(trace.transactions ?? {})[0] ?? "")}`;
    const before = await get(path);
    expect(caching(before)).toMatchObject({ status: 200, cacheControl: cacheControl.finalTraces });
    await db.admin`update traces set state = 'pending', pending_edges_ = 1 where trace_id = ${trace.trace_id}`;
    try {
      const pending = await get(path, { "if-none-match": before.headers.etag as string });
      expect(pending.status).toBe(200);
      expect((json(pending).traces as Json[])[0]?.trace_info).toMatchObject({ trace_state: "pending", pending_messages: 1 });
      expect(caching(pending)).toMatchObject({ cacheControl: "no-cache" });
      expect(pending.headers.etag).not.toBe(before.headers.etag);
    } finally {
      await db.admin`update traces set state = 'complete', pending_edges_ = 0 where trace_id = ${trace.trace_id}`;
    }
  });

  it("does not declare a trace final while a token's metadata is not indexed yet", async () => {
    const trace = settled[4] as RecordedTrace;
    const path = `/api/v3/traces?trace_id=${q(trace.trace_id)}`;
    expect(caching(await get(path))).toMatchObject({ status: 200, cacheControl: cacheControl.finalTraces });
    const account = Object.values(trace.transactions ?? {})[0]?.account ?? "";
    // A jetton master the metadata fetcher has not seen: no address_metadata row.
    await db.admin`insert into jetton_masters (address) values (${account})`;
    try {
      const response = await get(path);
      expect((json(response).metadata as Record<string, Json>)[account]?.is_indexed).toBe(false);
      expect(caching(response)).toMatchObject({ status: 200, cacheControl: "no-cache" });
    } finally {
      await db.admin`delete from jetton_masters where address = ${account}`;
    }
  });
});
