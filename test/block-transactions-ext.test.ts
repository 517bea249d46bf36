import { Code, ConnectError } from "@connectrpc/connect";
import { Address } from "@ton/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecording } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedBlockTransactionsExt, RecordedRawMessage } from "../src/recordings/recorded.ts";
import { conformBlockTransactionsExt } from "./support/conformance.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

type Json = Record<string, unknown>;

const recordingFiles = [
  "getBlockTransactionsExt_mainnet_mc39984096_blockpi.json",
  "getBlockTransactionsExt_mainnet_mc_seqno1_truncated.json",
  "getBlockTransactionsExt_mainnet_mc57442406_page1_abbreviated.json",
  "getBlockTransactionsExt_mainnet_mc57442406_page2_abbreviated.json",
];
const masterchain = "workchain=-1&shard=-9223372036854775808";

let db: TestDatabase;
let server: TestServer;
const recordings = new Map<string, { ok: boolean; result: Json }>();

/**
 * The abbreviated and truncated recordings carry no transaction BOCs, so the loader cannot index them as the
 * worker would; index what they state (the other columns stay NULL) to check paging and the fields they show.
 */
async function indexWhatIsStated(recording: RecordedBlockTransactionsExt) {
  const sql = db.admin;
  const { workchain, shard, seqno } = recording.id;
  const rawAccount = (friendly: string) => {
    const { workChain, hash } = Address.parse(friendly);
    return `${workChain}:${hash.toString("hex").toUpperCase()}`;
  };
  for (const tx of recording.transactions) {
    const account = rawAccount(tx.address.account_address);
    const { lt, hash } = tx.transaction_id;
    await sql`insert into transactions (account, hash, lt, block_workchain, block_shard, block_seqno, now, total_fees)
      values (${account}, ${hash}, ${lt}, ${workchain}, ${shard}, ${seqno}, ${tx.utime}, ${tx.fee})`;
    const messages = [...(tx.in_msg ? [["in", tx.in_msg] as const] : []), ...tx.out_msgs.map((m) => ["out", m] as const)];
    for (const [index, [direction, m]] of messages.entries()) {
      const text = (address: RecordedRawMessage["source"]) => (typeof address === "string" ? address : address?.account_address) || undefined;
      const [from, to] = [text(m.source), text(m.destination)];
      const source = from ? rawAccount(from) : direction === "out" ? account : null;
      const destination = to ? rawAccount(to) : direction === "in" ? account : null;
      const extra = m.extra_currencies === undefined ? null : Object.fromEntries(m.extra_currencies.map((c) => [String(c.id), c.amount]));
      await sql`insert into messages (tx_hash, tx_lt, msg_hash, direction, source, destination, value, value_extra_currencies,
          fwd_fee, ihr_fee, created_lt, body_hash)
        values (${hash}, ${lt}, ${m.hash ?? `${hash.slice(0, 40)}${index}msg`}, ${direction}, ${source}, ${destination}, ${m.value},
          ${extra === null ? null : sql.json(extra)}, ${m.fwd_fee ?? null}, ${m.ihr_fee ?? null}, ${m.created_lt ?? null}, ${m.body_hash ?? null})`;
      if (m.body_hash && m.msg_data?.body) {
        await sql`insert into message_contents values (${m.body_hash}, ${m.msg_data.body}) on conflict do nothing`;
      }
    }
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  const loader = new IndexLoader();
  const stated: RecordedBlockTransactionsExt[] = [];
  for (const file of recordingFiles) {
    const recording = await readRecording<{ ok: boolean; result: Json }>(file);
    recordings.set(file, recording);
    const result = recording.result as unknown as RecordedBlockTransactionsExt;
    loader.addBlockTransactionsExt(result);
    if (!result.transactions.every((tx) => loader.indexesTransactionData(tx))) stated.push(result);
  }
  await loader.write(db.admin);
  for (const recording of stated) await indexWhatIsStated(recording);
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

async function v2(query: string) {
  return server.rest(`/api/v2/getBlockTransactionsExt?${query}`);
}

describe("the recorded getBlockTransactionsExt responses", () => {
  it.each([
    ["getBlockTransactionsExt_mainnet_mc39984096_blockpi.json", `${masterchain}&seqno=39984096&count=40`],
    ["getBlockTransactionsExt_mainnet_mc_seqno1_truncated.json", `${masterchain}&seqno=1`],
    ["getBlockTransactionsExt_mainnet_mc57442406_page1_abbreviated.json", `${masterchain}&seqno=57442406&count=3`],
    [
      "getBlockTransactionsExt_mainnet_mc57442406_page2_abbreviated.json",
      `${masterchain}&seqno=57442406&count=3&after_lt=67098924000005&after_hash=${encodeURIComponent("hYMkXXLa8SUI7BumkwtWnwge+nH9KB5B/0ICBqdyaKQ=")}`,
    ],
  ])("%s is reproduced by its request", async (file, query) => {
    const recorded = recordings.get(file) as { ok: boolean; result: Json };
    const { status, body } = await v2(query);
    expect(status).toBe(200);
    const response = body as { ok: boolean; result: Json };
    expect(response.ok).toBe(true);
    expect(conformBlockTransactionsExt(response.result, recorded.result, file.includes("abbreviated"))).toEqual(recorded.result);
  });

  it("answers a block again from the rebuilt BOCs it keeps, as a server that keeps none does", async () => {
    const query = `${masterchain}&seqno=39984096&count=40`;
    const recorded = recordings.get("getBlockTransactionsExt_mainnet_mc39984096_blockpi.json") as { result: Json };
    const uncached = await startTestServer(db.url, { TRANSACTION_BOC_CACHE_MB: "0" });
    try {
      const first = await v2(query);
      const again = await v2(query);
      const rebuilt = await uncached.rest(`/api/v2/getBlockTransactionsExt?${query}`);
      const transactions = (body: unknown) => (body as { result: { transactions: Json[] } }).result.transactions;
      expect(transactions(again.body)).toEqual(transactions(first.body));
      expect(transactions(rebuilt.body)).toEqual(transactions(first.body));
      expect(transactions(again.body).map((t) => t.data)).toEqual((recorded.result.transactions as Json[]).map((t) => t.data));
    } finally {
      await uncached.close();
    }
  });

  it("pages with the (account, lt) cursor: disjoint and complete", async () => {
    const all = ((await v2(`${masterchain}&seqno=39984096`)).body as { result: { transactions: Json[] } }).result.transactions;
    const paged: Json[] = [];
    let cursor = "";
    for (;;) {
      const { result } = (await v2(`${masterchain}&seqno=39984096&count=1${cursor}`)).body as { result: { transactions: Json[]; incomplete: boolean } };
      paged.push(...result.transactions);
      const last = result.transactions.at(-1) as Json | undefined;
      if (!result.incomplete || last === undefined) break;
      const id = last.transaction_id as Json;
      cursor = `&after_lt=${id.lt}&after_hash=${encodeURIComponent(last.account as string)}`;
    }
    expect(paged.map((t) => (t.transaction_id as Json).hash)).toEqual(all.map((t) => (t.transaction_id as Json).hash));
    expect(all.length).toBe(3);
  });

  it("checks root_hash and file_hash against the block", async () => {
    const block = `${masterchain}&seqno=39984096`;
    const rootHash = "b26/Pw8BYz6VY7RyYB/w2Nf8pKBebsg+H4rT1pH5ZEM=";
    const hex = Buffer.from(rootHash, "base64").toString("hex");
    expect((await v2(`${block}&root_hash=${encodeURIComponent(rootHash)}`)).status).toBe(200);
    expect((await v2(`${block}&root_hash=${hex}`)).status).toBe(200);
    expect(await v2(`${block}&root_hash=${"00".repeat(32)}`)).toMatchObject({ status: 404, body: { ok: false, code: 404 } });
  });
});

describe("bad input gets the v2 envelope", () => {
  it.each([
    ["shard=-9223372036854775808&seqno=1", 422, "failed to parse get request: failed to parse workchain"],
    ["workchain=x&shard=-9223372036854775808&seqno=1", 422, "failed to parse get request: failed to parse workchain"],
    ["workchain=-1&shard=0x8000000000000000&seqno=1", 422, "failed to parse get request: failed to parse shard"],
    ["workchain=-1&seqno=1", 422, "failed to parse get request: failed to parse shard"],
    [`${masterchain}`, 422, "failed to parse get request: failed to parse seqno"],
    [`${masterchain}&seqno=0`, 422, "failed to validate request: seqno should be positive"],
    [`${masterchain}&seqno=1&count=0`, 422, "failed to validate request: count should be positive"],
    [`${masterchain}&seqno=1&count=10001`, 422, "failed to validate request: count should be less or equal 10000"],
    [`${masterchain}&seqno=1&count=many`, 422, "failed to parse get request: failed to parse count"],
    [`${masterchain}&seqno=1&after_lt=5`, 422, "failed to validate request: after_lt and after_hash should be used together"],
    [`${masterchain}&seqno=1&after_lt=-5&after_hash=${"00".repeat(32)}`, 422, "failed to validate request: after_lt should be non-negative"],
    [`${masterchain}&seqno=1&after_lt=5&after_hash=nope`, 422, "failed to parse get request: failed to parse after_hash"],
    [`${masterchain}&seqno=1&root_hash=nope`, 422, "failed to parse get request: failed to parse root_hash"],
    [`${masterchain}&seqno=1&file_hash=nope`, 422, "failed to parse get request: failed to parse file_hash"],
    [`${masterchain}&seqno=7`, 404, "block not found: (-1,-9223372036854775808,7)"],
  ])("?%s → %i", async (query, code, error) => {
    expect(await v2(query)).toMatchObject({ status: code, body: { ok: false, error, code } });
  });
});

describe("the typed API", () => {
  it.each(rpcProtocols)("returns the same transactions over %s", async (protocol) => {
    const response = await server.client(protocol).getBlockTransactionsExt({ workchain: -1, shard: "-9223372036854775808", seqno: 39984096 });
    expect(response.id?.rootHash).toBe("b26/Pw8BYz6VY7RyYB/w2Nf8pKBebsg+H4rT1pH5ZEM=");
    expect(response.reqCount).toBe(40);
    expect(response.transactions.map((t) => t.transactionId?.lt)).toEqual(["48756940000001", "48756940000002", "48756940000003"]);
    expect(response.transactions[1]?.inMsg?.msgData?.kind.case).toBe("raw");
    const failure = await server.client(protocol).getBlockTransactionsExt({ workchain: -1, shard: "-9223372036854775808", seqno: 0 }).catch((e: unknown) => e);
    expect((failure as ConnectError).code).toBe(Code.InvalidArgument);
  });
});
