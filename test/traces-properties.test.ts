import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { create } from "@bufbuild/protobuf";
import { GetTracesRequestSchema } from "../gen/tonquery/v1/service_pb.ts";
import { traceChunkSize } from "../src/handlers/traces.ts";
import { presentTracesResponse } from "../src/present/v3/trace.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// Properties of trace assembly and paging on generated traces: random trees of 1–15 transactions, some
// messages never delivered, one trace with an orphan, across accounts shared between traces.

type Json = Record<string, unknown>;

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hashOf = (text: string) => createHash("sha256").update(text).digest("base64");
const accounts = Array.from({ length: 6 }, (_, i) => `0:${createHash("sha256").update(`account${i}`).digest("hex").toUpperCase()}`);

interface GeneratedTx {
  hash: string;
  lt: bigint;
  account: string;
  inMsg: string | undefined;
  outMsgs: string[];
}

interface GeneratedTrace {
  id: string;
  txs: GeneratedTx[];
  endLt: bigint;
  orphan: boolean;
}

function generate(count: number, seed: number): GeneratedTrace[] {
  const next = random(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)] as T;
  let lt = 1_000_000n;
  const traces: GeneratedTrace[] = [];
  for (let t = 0; t < count; t++) {
    const size = 1 + Math.floor(next() * 15);
    const txs: GeneratedTx[] = [];
    for (let i = 0; i < size; i++) {
      lt += 1n + BigInt(Math.floor(next() * 3));
      const hash = hashOf(`trace${t}tx${i}`);
      const parent = i === 0 ? undefined : pick(txs);
      const inMsg = parent === undefined ? hashOf(`trace${t}external`) : hashOf(`trace${t}msg${i}`);
      if (parent !== undefined) parent.outMsgs.push(inMsg);
      txs.push({ hash, lt, account: pick(accounts), inMsg, outMsgs: [] });
    }
    // Messages that were never delivered: their sender's node has outbound messages but no children.
    for (const tx of txs) if (next() < 0.2) tx.outMsgs.push(hashOf(`${tx.hash}undelivered`));
    traces.push({ id: (txs[0] as GeneratedTx).hash, txs, endLt: lt, orphan: false });
  }
  // One trace holding a transaction whose parent is not indexed: toncenter's missing-node warning.
  const withOrphan = traces.find((trace) => trace.txs.length <= 10) as GeneratedTrace;
  lt += 1n;
  withOrphan.txs.push({ hash: hashOf("orphan"), lt, account: accounts[0] as string, inMsg: hashOf("never sent"), outMsgs: [] });
  withOrphan.endLt = lt;
  withOrphan.orphan = true;
  return traces;
}

async function insert(db: TestDatabase, traces: GeneratedTrace[]) {
  const sql = db.admin;
  const transactions = traces.flatMap((trace) =>
    trace.txs.map((tx) => ({ account: tx.account, hash: tx.hash, lt: String(tx.lt), trace_id: trace.id, now: 1_700_000_000 + Number(tx.lt % 1000n) })),
  );
  const messages = traces.flatMap((trace) =>
    trace.txs.flatMap((tx) => [
      ...(tx.inMsg === undefined ? [] : [{ tx_hash: tx.hash, tx_lt: String(tx.lt), msg_hash: tx.inMsg, direction: "in", trace_id: trace.id, created_lt: null }]),
      ...tx.outMsgs.map((msg, i) => ({ tx_hash: tx.hash, tx_lt: String(tx.lt), msg_hash: msg, direction: "out", trace_id: trace.id, created_lt: String(tx.lt + BigInt(i) + 1n) })),
    ]),
  );
  const traceRows = traces.map((trace, i) => ({
    trace_id: trace.id,
    start_lt: String(trace.txs[0]?.lt),
    end_lt: String(trace.endLt),
    start_utime: 1_700_000_000 + i,
    end_utime: 1_700_000_000 + i,
    state: "complete",
    nodes_: trace.txs.length,
    edges_: 0,
    pending_edges_: 0,
  }));
  await sql`insert into transactions ${sql(transactions)}`;
  await sql`insert into messages ${sql(messages, "tx_hash", "tx_lt", "msg_hash", "direction", "trace_id", "created_lt")}`;
  await sql`insert into traces ${sql(traceRows)}`;
}

let db: TestDatabase;
let server: TestServer;
let traces: GeneratedTrace[];

beforeAll(async () => {
  db = await createTestDatabase();
  // More traces than one chunk of the handler (traceChunkSize), so that large pages are assembled from several.
  traces = generate(250, 20261121);
  await insert(db, traces);
  server = await startTestServer(db.url, { MAX_TRACE_TRANSACTIONS: "12" });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

async function page(query: string): Promise<Json[]> {
  const { status, body } = await server.rest(`/api/v3/traces?${query}`);
  expect(status, query).toBe(200);
  return (body as { traces: Json[] }).traces;
}

/** Walks the nested tree, checking each child against its parent on the way. */
function walk(node: Json, transactions: Record<string, Json>, seen: string[]) {
  const hash = node.tx_hash as string;
  seen.push(hash);
  const outHashes = ((transactions[hash]?.out_msgs ?? []) as Json[]).map((m) => m.hash);
  const children = node.children as Json[] | null;
  if (outHashes.length === 0) expect(children).toEqual([]);
  else if (children === null) return;
  else expect(children.length).toBeGreaterThan(0);
  let previousLt = -1n;
  for (const child of children ?? []) {
    const childTx = transactions[child.tx_hash as string] as Json;
    expect(outHashes).toContain((childTx.in_msg as Json).hash);
    expect(child.in_msg_hash).toBe((childTx.in_msg as Json).hash);
    expect(BigInt(childTx.lt as string) > previousLt).toBe(true);
    previousLt = BigInt(childTx.lt as string);
    walk(child, transactions, seen);
  }
}

describe("generated traces", () => {
  it("hold every transaction exactly once, each child under the parent that sent its in_msg", async () => {
    expect(traces.filter((t) => t.orphan && t.txs.length <= 12)).toHaveLength(1);
    for (const trace of traces.filter((t) => t.txs.length <= 12)) {
      const [found] = await page(`trace_id=${encodeURIComponent(trace.id)}`);
      const transactions = found?.transactions as Record<string, Json>;
      const seen: string[] = [];
      walk(found?.trace as Json, transactions, seen);
      const expected = trace.txs.filter((tx) => !(trace.orphan && tx.hash === hashOf("orphan"))).map((tx) => tx.hash);
      expect(seen.sort()).toEqual([...expected].sort());
      expect(found?.transactions_order).toEqual(trace.txs.map((tx) => tx.hash));
      expect(found?.warning).toBe(trace.orphan ? "missing node in trace found" : undefined);
    }
  });

  it("come back incomplete, without transactions, over the configured size", async () => {
    const large = traces.filter((t) => t.txs.length > 12);
    expect(large.length).toBeGreaterThan(0);
    for (const trace of large) {
      const [found] = await page(`trace_id=${encodeURIComponent(trace.id)}&include_actions=true`);
      expect(found).toMatchObject({ is_incomplete: true, warning: "trace is too large" });
      expect(found).not.toHaveProperty("transactions");
      expect(found).not.toHaveProperty("trace");
    }
  });

  it.each(["desc", "asc"])("page by offset in %s order: disjoint, complete and ordered", async (sort) => {
    const seen: Json[] = [];
    for (let offset = 0; ; offset += 7) {
      const traces = await page(`limit=7&offset=${offset}&sort=${sort}`);
      seen.push(...traces);
      if (traces.length < 7) break;
    }
    const ids = seen.map((t) => t.trace_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(traces.map((t) => t.id)));
    const keys = seen.map((t) => BigInt(t.end_lt as string));
    const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(keys).toEqual(sort === "asc" ? sorted : sorted.reverse());
  });

  it("filter by account, lt and time bounds", async () => {
    const account = accounts[1] as string;
    const byAccount = await page(`account=${encodeURIComponent(account)}&limit=1000`);
    const expected = traces.filter((t) => t.txs.some((tx) => tx.account === account)).map((t) => t.id);
    expect(new Set(byAccount.map((t) => t.trace_id))).toEqual(new Set(expected));

    const middle = traces[20] as GeneratedTrace;
    const byLt = await page(`start_lt=${middle.endLt}&limit=1000`);
    expect(byLt.every((t) => BigInt(t.end_lt as string) >= middle.endLt)).toBe(true);
    expect(byLt.length).toBe(traces.filter((t) => t.endLt >= middle.endLt).length);

    const byTime = await page("start_utime=1700000010&end_utime=1700000019&sort=asc&limit=1000");
    expect(byTime.map((t) => t.end_utime)).toEqual(Array.from({ length: 10 }, (_, i) => 1_700_000_010 + i));
  });

  it("assemble a page of several chunks exactly as one: the same bytes over REST as the RPC's answer presented", async () => {
    const limit = 2 * traceChunkSize + 50;
    expect(traces.length).toBeGreaterThanOrEqual(limit);
    // Uncoded, so that Content-Length counts the JSON (a compressed answer has none, nor one over REST_HOLD_MAX_BYTES,
    // which is streamed).
    const response = await fetch(`${server.baseUrl}/api/v3/traces?limit=${limit}&include_actions=true`, { headers: { "accept-encoding": "identity" } });
    const restText = await response.text();
    const bytes = Buffer.byteLength(restText);
    expect(response.headers.get("content-length")).toBe(bytes > server.config.restHoldMaxBytes ? null : String(bytes));
    const request = create(GetTracesRequestSchema, { limit, includeActions: true });
    const rpc = await server.client("grpc").getTraces(request);
    expect(rpc.traces).toHaveLength(limit);
    expect(restText).toBe(JSON.stringify(presentTracesResponse(rpc, request)));

    // Chunks neither drop nor repeat traces: the big page is the small pages end to end.
    const small: Json[] = [];
    for (let offset = 0; offset < limit; offset += traceChunkSize) small.push(...(await page(`limit=${Math.min(traceChunkSize, limit - offset)}&offset=${offset}`)));
    const big = (JSON.parse(restText) as { traces: Json[] }).traces;
    expect(big.map((t) => t.trace_id)).toEqual(small.map((t) => t.trace_id));
  });
});
