import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecording, recordingsDir } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/fixtures/loader.ts";
import type {
  RecordedAccountState,
  RecordedMasterchainInfo,
  RecordedTrace,
  RecordedTracesResponse,
  RecordedTransaction,
  RecordedTransactionsResponse,
} from "../src/fixtures/recorded.ts";
import type { Sql } from "../src/db/client.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// Every recorded v3 transaction (mainnet and testnet) goes into one database; the expectations are computed
// from the recordings themselves, independently of the loader.

type TransactionRecording =
  | { kind: "traces"; name: string; body: RecordedTracesResponse | RecordedTrace[] }
  | { kind: "response"; name: string; body: RecordedTransactionsResponse }
  | { kind: "transaction"; name: string; body: RecordedTransaction };

/** Recognises a recording by its shape, so a file with transactions cannot be missed by its name. */
function classify(name: string, body: unknown): TransactionRecording | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  if (Array.isArray(body) || "traces" in body) {
    return { kind: "traces", name, body: body as RecordedTracesResponse | RecordedTrace[] };
  }
  if ("transactions" in body && Array.isArray(body.transactions)) {
    return { kind: "response", name, body: body as RecordedTransactionsResponse };
  }
  if ("hash" in body && "description" in body) return { kind: "transaction", name, body: body as RecordedTransaction };
  return undefined;
}

function transactionsOf(recording: TransactionRecording): RecordedTransaction[] {
  switch (recording.kind) {
    case "traces": {
      const traces = Array.isArray(recording.body) ? recording.body : recording.body.traces;
      return traces.flatMap((trace) => Object.values(trace.transactions));
    }
    case "response":
      return recording.body.transactions;
    case "transaction":
      return [recording.body];
  }
}

function loadInto(loader: IndexLoader, recordings: readonly TransactionRecording[]): IndexLoader {
  for (const recording of recordings) {
    if (recording.kind === "traces") loader.addTracesTransactions(recording.body);
    else if (recording.kind === "response") loader.addTransactionsResponse(recording.body);
    else loader.addTransaction(recording.body);
  }
  return loader;
}

/** toncenter prints only the hash of a state the index holds no row for. */
function isBareHash(state: RecordedAccountState): boolean {
  const { hash: _hash, ...fields } = state;
  return Object.values(fields).every((value) => value === null || value === undefined);
}

const tables = [
  "blocks",
  "transactions",
  "messages",
  "message_contents",
  "account_states",
  "latest_account_states",
] as const;

async function rowCounts(sql: Sql): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`;
    counts[table] = row?.n ?? -1;
  }
  return counts;
}

describe("IndexLoader on every recorded transaction", () => {
  let db: TestDatabase;
  let recordings: TransactionRecording[];
  let transactions: RecordedTransaction[];

  beforeAll(async () => {
    const names = (await readdir(recordingsDir)).filter((name) => name.endsWith(".json")).sort();
    recordings = [];
    for (const name of names) {
      const recording = classify(name, await readRecording<unknown>(name));
      if (recording) recordings.push(recording);
    }
    transactions = recordings.flatMap(transactionsOf);
    db = await createTestDatabase();
    await loadInto(new IndexLoader(), recordings).write(db.admin);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("finds the recordings on both networks", () => {
    const names = recordings.map((r) => r.name);
    expect(names).toContain("traces_array_mainnet_mc35120456_blockcacher_sortedkeys.json");
    expect(names).toContain("adjacentTransactions_testnet_wallet_comment_1.json");
    expect(names).toContain("transaction_element_null_values_gem.json");
    expect(names.filter((name) => /^(getBlockTransactionsExt|masterchainInfo|blocks)_/.test(name))).toEqual([]);
    expect(transactions.length).toBeGreaterThan(250);
  });

  it("writes one transactions row per distinct transaction", async () => {
    const [row] = await db.admin<{ n: number }[]>`select count(*)::int as n from transactions`;
    expect(row?.n).toBe(new Set(transactions.map((tx) => tx.hash)).size);
  });

  it("writes one messages row per message and side", async () => {
    const keys = new Set(
      transactions.flatMap((tx) => [
        ...(tx.in_msg ? [`${tx.hash}|${tx.in_msg.hash}|in`] : []),
        ...tx.out_msgs.map((message) => `${tx.hash}|${message.hash}|out`),
      ]),
    );
    const [row] = await db.admin<{ n: number }[]>`select count(*)::int as n from messages`;
    expect(row?.n).toBe(keys.size);
  });

  it("round-trips an aborted transaction and its bounced message", async () => {
    // traces_mainnet_failedNftTransfer_mtw.json: the NFT rejects the transfer (exit code 413) and bounces it.
    const [tx] = await db.admin`
      select account, lt, total_fees, descr, aborted, credit, compute_success, compute_exit_code, compute_gas_fees,
             compute_gas_used, action_success, action_tot_msg_size_bits, bounce, bounce_msg_size_cells, bounce_msg_fees,
             bounce_fwd_fees, bounce_req_fwd_fees, block_workchain, block_shard, block_seqno, mc_block_seqno, trace_id,
             account_state_hash_after, total_fees_extra_currencies
      from transactions where hash = 'd50iW9+OzXrjCLa/tRRIpOSvTojWMAKbDWjYUJEUGWc='`;
    expect(tx).toEqual({
      account: "0:853DE9F75AFC0FD2C22BF82E33550B34DD423B4A0B05B3C9A50969C892328D2C",
      lt: "60137208000003",
      total_fees: "4564224",
      descr: "ord",
      aborted: true,
      credit: "100000000",
      compute_success: false,
      compute_exit_code: 413,
      compute_gas_fees: "1399600",
      compute_gas_used: "3499",
      // No action phase was recorded (the compute phase failed), so none of its columns is set.
      action_success: null,
      action_tot_msg_size_bits: null,
      bounce: "ok",
      bounce_msg_size_cells: "0",
      bounce_msg_fees: "133331",
      bounce_fwd_fees: "266669",
      bounce_req_fwd_fees: null,
      block_workchain: 0,
      block_shard: "-9223372036854775808",
      block_seqno: 55745781,
      mc_block_seqno: 50583482,
      trace_id: "s0cLqMif/nCuZTyG5pvsq3rLd9uVMWeNQG0Mm7HI9Qo=",
      account_state_hash_after: "eS3yJJvrxg8CGISGsGgy6gnSLJ8b/xtgMC2NOKB4XnY=",
      total_fees_extra_currencies: {},
    });
    const messages = await db.admin`
      select direction, msg_hash, opcode, value, extra_flags, msg_hash_norm, body_hash, mc_seqno, trace_id
      from messages where tx_hash = 'd50iW9+OzXrjCLa/tRRIpOSvTojWMAKbDWjYUJEUGWc=' order by direction`;
    expect(messages).toEqual([
      expect.objectContaining({ direction: "out", msg_hash: "Vt69iy/TPDBYRxLuurgYC2PS/GUsCU0IVoV0Bk8RBfc=", opcode: -1 }),
      expect.objectContaining({ direction: "in", msg_hash: "i49gHlCV6WfTITgGqYcsubLKb8avShiVD3S0wuzR+nA=", opcode: 0x5fcc3d14 }),
    ]);
    expect(messages[0]).toMatchObject({ value: "98200400", extra_flags: null, msg_hash_norm: null, trace_id: tx?.trace_id });
  });

  it("keeps the normalized hash of an external message and extra_flags of an internal one", async () => {
    const [external] = await db.admin`
      select msg_hash_norm, source, value, import_fee from messages
      where tx_hash = 's0cLqMif/nCuZTyG5pvsq3rLd9uVMWeNQG0Mm7HI9Qo=' and direction = 'in'`;
    expect(external).toEqual({
      msg_hash_norm: "HqGE7DWcruB8ZA1M+4cqlJRx5XAbQ7Qj8Ez8z73uGFU=",
      source: null,
      value: null,
      import_fee: "0",
    });
    // traces_mainnet_nft_transfer_2026_gem.json: an excess (op 0xd53276db, top bit set) after global version 12.
    const [excess] = await db.admin`
      select opcode, extra_flags, ihr_fee from messages
      where tx_hash = 'G1HVcPV+Aeta3ziT+HTZltkbscuv6pppDz1mANKU3zU=' and direction = 'in'`;
    expect(excess).toEqual({ opcode: -718113061, extra_flags: "0", ihr_fee: "0" });
  });

  it("stores message bodies and init states once per cell hash", async () => {
    const hashes = new Set(
      transactions.flatMap((tx) =>
        [tx.in_msg, ...tx.out_msgs].flatMap((message) =>
          message ? [message.message_content?.hash, message.init_state?.hash].filter((hash) => hash !== undefined) : [],
        ),
      ),
    );
    const [row] = await db.admin<{ n: number }[]>`select count(*)::int as n from message_contents`;
    expect(row?.n).toBe(hashes.size);
  });

  it("does not insert states the index holds no row for", async () => {
    const states = transactions.flatMap((tx) => [tx.account_state_before, tx.account_state_after]);
    const stored = new Set(states.filter((state) => !isBareHash(state)).map((state) => state.hash));
    const bare = new Set(states.filter((state) => isBareHash(state) && !stored.has(state.hash)).map((state) => state.hash));
    expect(bare.size).toBeGreaterThan(0);
    expect(bare).toContain("rdEuQmiruB0Tnjakhlh5S5X+EebE16FDb/pNvn1WuhM=");

    const rows = await db.admin<{ hash: string }[]>`select hash from account_states`;
    expect(rows.filter((row) => bare.has(row.hash))).toEqual([]);
    expect(rows.length).toBe(stored.size);
  });

  it("keeps each account's state after its highest-lt transaction", async () => {
    // The wallet of traces_mainnet_failedNftTransfer_mtw.json: its first transaction left a state the index did
    // not store, the bounce it received later left one it did.
    const [wallet] = await db.admin`
      select hash, last_trans_hash, last_trans_lt, "timestamp", account_status, balance, code_hash, account_friendly
      from latest_account_states where account = '0:A35884719E3B78E40800FC85E15E74DFCD6C41B0D386BCCD020B7F063AE4BAA1'`;
    expect(wallet).toMatchObject({
      hash: "R6e1vcUGbMN8E1y3lWS3+K6MQXsPzbjUwpRyrJTpvGw=",
      last_trans_hash: "SfioVIqhtWoB8p0l11ErzY/My7TJcsm1Gt9mgxzZZA0=",
      last_trans_lt: "60137208000005",
      account_status: "active",
      balance: "158836064",
      code_hash: "IINLe3KxEhR+Gy+0V7hOdNGjDwT3N9T2KmaOlVLSty8=",
      account_friendly: null,
    });

    const last = new Map<string, RecordedTransaction>();
    for (const tx of transactions) {
      const seen = last.get(tx.account);
      if (seen === undefined || BigInt(tx.lt) > BigInt(seen.lt)) last.set(tx.account, tx);
    }
    const expected = [...last.values()]
      .filter((tx) => !isBareHash(tx.account_state_after))
      .map((tx) => ({ account: tx.account, hash: tx.account_state_after.hash, last_trans_lt: tx.lt }))
      .sort((a, b) => a.account.localeCompare(b.account));
    const rows = await db.admin<{ account: string; hash: string; last_trans_lt: string }[]>`
      select account, hash, last_trans_lt from latest_account_states`;
    expect([...rows].sort((a, b) => a.account.localeCompare(b.account))).toEqual(expected);
  });

  it("maps the July-2024 transaction shape", async () => {
    // transactions_testnet_ton_transfer_crosschain_1.json: compute_ph says type "vm" instead of skipped false, and
    // credit_ph.credit (16298225961743024383) does not fit bigint.
    const [tx] = await db.admin`
      select compute_skipped, credit, trace_id, total_fees_extra_currencies, action_tot_msg_size_cells
      from transactions where hash = 'zDx7EjkQvC/Bi2QM5yqmaKDrKf+tN20o3k8u8/e6T3E='`;
    expect(tx).toEqual({
      compute_skipped: false,
      credit: null,
      trace_id: null,
      total_fees_extra_currencies: null,
      action_tot_msg_size_cells: "1",
    });
  });

  it("writes id-only rows for the blocks of transactions", async () => {
    const [block] = await db.admin`
      select root_hash, mc_block_seqno, gen_utime from blocks where workchain = -1 and seqno = 51319006`;
    expect(block).toEqual({ root_hash: null, mc_block_seqno: null, gen_utime: null });
  });

  it("lets a full block win over the id-only row of the same block", async () => {
    const recording = await readRecording<RecordedMasterchainInfo>("masterchainInfo_mainnet_gem_1.json");
    const masterchainTransactions = transactions.filter((tx) => tx.block_ref.workchain === -1);
    const [inLastBlock, inFirstBlock] = masterchainTransactions;
    if (inLastBlock === undefined || inFirstBlock === undefined) throw new Error("expected masterchain transactions");
    // Already-loaded transactions moved into the recorded blocks: their own rows exist already and stay put, only
    // the blocks they name are new. One is added before the full block, one after.
    await new IndexLoader()
      .addTransaction({ ...inLastBlock, block_ref: recording.last })
      .addMasterchainInfo(recording)
      .addTransaction({ ...inFirstBlock, block_ref: recording.first })
      .write(db.admin);

    const blocks = await db.admin`
      select seqno, root_hash, gen_utime from blocks
      where workchain = -1 and seqno in (${recording.first.seqno}, ${recording.last.seqno})
      order by seqno`;
    expect(blocks).toEqual([
      { seqno: recording.first.seqno, root_hash: recording.first.root_hash, gen_utime: recording.first.gen_utime },
      { seqno: recording.last.seqno, root_hash: recording.last.root_hash, gen_utime: recording.last.gen_utime },
    ]);
  });

  it("is idempotent", async () => {
    const before = await rowCounts(db.admin);
    await loadInto(new IndexLoader(), recordings).write(db.admin);
    expect(await rowCounts(db.admin)).toEqual(before);
  });

  it("does not let an earlier transaction replace a later latest state", async () => {
    const byAccount = Map.groupBy(transactions, (tx) => tx.account);
    // The first transaction of an account that has later ones, where that first one left a stored state.
    const older = [...byAccount.values()]
      .map((txs) => txs.toSorted((a, b) => (BigInt(a.lt) < BigInt(b.lt) ? -1 : 1)))
      .filter((txs) => new Set(txs.map((tx) => tx.lt)).size > 1)
      .map((txs) => txs[0])
      .find((tx) => tx !== undefined && !isBareHash(tx.account_state_after));
    if (older === undefined) throw new Error("expected an account with several transactions");
    const latest = () => db.admin`select last_trans_lt, hash from latest_account_states where account = ${older.account}`;
    const [before] = await latest();
    await new IndexLoader().addTransaction(older).write(db.admin);
    const [after] = await latest();
    expect(after).toEqual(before);
    expect(after?.last_trans_lt).not.toBe(older.lt);
  });
});
