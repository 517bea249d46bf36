import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRecording, recordingsDir } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type {
  RecordedAccountState,
  RecordedMasterchainInfo,
  RecordedMetadata,
  RecordedTokenInfo,
  RecordedTrace,
  RecordedTracesResponse,
  RecordedTransaction,
  RecordedTransactionsResponse,
} from "../src/recordings/recorded.ts";
import type { Sql } from "../src/db/client.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// Every recorded v3 transaction (mainnet and testnet), trace and metadata object goes into one database; the
// expectations are computed from the recordings themselves, independently of the loader.

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

function tracesOf(recording: TransactionRecording): RecordedTrace[] {
  if (recording.kind !== "traces") return [];
  return Array.isArray(recording.body) ? recording.body : recording.body.traces;
}

function metadataOf(recording: TransactionRecording): RecordedMetadata {
  return recording.kind === "traces" && !Array.isArray(recording.body) ? (recording.body.metadata ?? {}) : {};
}

function transactionsOf(recording: TransactionRecording): RecordedTransaction[] {
  switch (recording.kind) {
    case "traces":
      return tracesOf(recording).flatMap((trace) => Object.values(trace.transactions ?? {}));
    case "response":
      return recording.body.transactions;
    case "transaction":
      return [recording.body];
  }
}

function loadInto(loader: IndexLoader, recordings: readonly TransactionRecording[]): IndexLoader {
  for (const recording of recordings) {
    if (recording.kind === "traces") loader.addTraces(recording.body).addMetadata(metadataOf(recording));
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
  "traces",
  "jetton_wallets",
  "jetton_masters",
  "nft_items",
  "nft_collections",
  "address_metadata",
  "address_metadata_flags",
] as const;

async function countRows(sql: Sql, table: (typeof tables)[number]): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`;
  return row?.n ?? -1;
}

async function rowCounts(sql: Sql): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) counts[table] = await countRows(sql, table);
  return counts;
}

describe("IndexLoader on every recorded transaction, trace and metadata object", () => {
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

  it("writes one traces row per recorded trace", async () => {
    const traceIds = new Set(recordings.flatMap(tracesOf).map((trace) => trace.trace_id));
    expect(traceIds.size).toBeGreaterThan(30);
    expect(await countRows(db.admin, "traces")).toBe(traceIds.size);
  });

  it("round-trips every column of a trace", async () => {
    // traces_mainnet_failedNftTransfer_mtw.json; its actions carry trace_external_hash_norm.
    const rows = await db.admin`select * from traces where trace_id = 's0cLqMif/nCuZTyG5pvsq3rLd9uVMWeNQG0Mm7HI9Qo='`;
    expect(rows).toEqual([
      {
        trace_id: "s0cLqMif/nCuZTyG5pvsq3rLd9uVMWeNQG0Mm7HI9Qo=",
        external_hash: "BgVEXWHkeOgD632r4zjjskR+PsH++3KL+d3psm0dx8k=",
        external_hash_norm: "HqGE7DWcruB8ZA1M+4cqlJRx5XAbQ7Qj8Ez8z73uGFU=",
        mc_seqno_start: 50583482,
        mc_seqno_end: 50583482,
        start_lt: "60137208000001",
        start_utime: 1754362633,
        end_lt: "60137208000005",
        end_utime: 1754362633,
        state: "complete",
        pending_edges_: "0",
        edges_: "3",
        nodes_: "3",
        classification_state: "unclassified",
      },
    ]);
  });

  it("takes external_hash_norm from the actions, else from the root's in_msg, else leaves it NULL", async () => {
    const norms = await db.admin<{ trace_id: string; external_hash: string | null; external_hash_norm: string | null }[]>`
      select trace_id, external_hash, external_hash_norm from traces
      where trace_id in ('aauhCIOh6YFanxo483sLtzfeVEj05q4HCozrmNGsXdI=', '/vQvSjbtgBUiW0f5qfojHX4jvuEbFb0ttlMPkdbvnKY=',
                         '7ajk1gsr+YCIgcNz082WCzQcWQsY7oH76LdQOEie9zA=')
      order by trace_id`;
    expect(norms).toEqual([
      // traces_mainnet_nft_transfer_2026_gem.json: a 2026 capture whose actions and root in_msg print no norm.
      {
        trace_id: "/vQvSjbtgBUiW0f5qfojHX4jvuEbFb0ttlMPkdbvnKY=",
        external_hash: "/W8b7O9jJrCnkk5oL0B+IWJggTGz0CzaYSvPI18PW6M=",
        external_hash_norm: null,
      },
      // traces_array_mainnet_mc35120456_blockcacher_sortedkeys.json: a tick-tock root, without in_msg.
      { trace_id: "7ajk1gsr+YCIgcNz082WCzQcWQsY7oH76LdQOEie9zA=", external_hash: null, external_hash_norm: null },
      // traces_mainnet_contractCall_mtw.json: captured before actions carried the norm.
      {
        trace_id: "aauhCIOh6YFanxo483sLtzfeVEj05q4HCozrmNGsXdI=",
        external_hash: "K6gpSRaFh9t4//KLB/+gTL9XDSQJN9apL3VFyYNH4P0=",
        external_hash_norm: "sxf9knt1YZDzpuCfr3eQhg3BA/v6gZ4SRtDNOPKxS0A=",
      },
    ]);
  });

  it("writes one token-table row per recorded address and type, and address_metadata for the indexed ones", async () => {
    const entries = recordings.flatMap((recording) =>
      Object.entries(metadataOf(recording)).flatMap(([address, metadata]) =>
        metadata.token_info.map((info) => ({ address, info, isIndexed: metadata.is_indexed })),
      ),
    );
    const addressesOf = (type: RecordedTokenInfo["type"]) =>
      new Set(entries.filter((entry) => entry.info.type === type).map((entry) => entry.address));
    const counts = {
      jetton_wallets: await countRows(db.admin, "jetton_wallets"),
      jetton_masters: await countRows(db.admin, "jetton_masters"),
      nft_items: await countRows(db.admin, "nft_items"),
      nft_collections: await countRows(db.admin, "nft_collections"),
    };
    expect(counts).toEqual({
      jetton_wallets: addressesOf("jetton_wallets").size,
      jetton_masters: addressesOf("jetton_masters").size,
      nft_items: addressesOf("nft_items").size,
      nft_collections: addressesOf("nft_collections").size,
    });
    expect(Object.values(counts).every((n) => n > 0)).toBe(true);
    // Every recorded address is indexed, so each contract but a wallet has its metadata row.
    expect(entries.every((entry) => entry.isIndexed)).toBe(true);
    const described = new Set(
      entries.filter((entry) => entry.info.type !== "jetton_wallets").map((entry) => `${entry.address}|${entry.info.type}`),
    );
    expect(await countRows(db.admin, "address_metadata")).toBe(described.size);
  });

  it("writes a jetton wallet's balance, owner and jetton", async () => {
    // First recorded in traces_mainnet_bidask_tonSwapUsdt_mtw.json; a later capture shows another balance.
    const [wallet] = await db.admin`
      select balance, owner, jetton, last_transaction_lt, code_hash from jetton_wallets
      where address = '0:00B5EA43CD3F0A16C00B2EED3F604E2BB5B920F80DD3910D95901D8939851605'`;
    expect(wallet).toEqual({
      balance: "20226033047",
      owner: "0:004B79A4B38A062827C9ED56932C84DFA9A582E489C60B0D3483E6FE93BD08CC",
      jetton: "0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE",
      last_transaction_lt: null,
      code_hash: null,
    });
    const metadata = await db.admin`
      select type from address_metadata where address = '0:00B5EA43CD3F0A16C00B2EED3F604E2BB5B920F80DD3910D95901D8939851605'`;
    expect(metadata).toEqual([]);
  });

  it("writes a jetton master and its address_metadata, extra as recorded", async () => {
    const usdt = "0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE";
    const recorded = await readRecording<RecordedTracesResponse>("traces_mainnet_bidask_tonSwapUsdt_mtw.json");
    const [master] = await db.admin`select total_supply, admin_address, jetton_content from jetton_masters where address = ${usdt}`;
    expect(master).toEqual({ total_supply: null, admin_address: null, jetton_content: null });
    const rows = await db.admin`
      select type, valid, name, symbol, description, image, extra, updated_at, expires_at, reindex_allowed
      from address_metadata where address = ${usdt}`;
    expect(rows).toEqual([
      {
        type: "jetton_masters",
        valid: true,
        name: "Tether USD",
        symbol: "USD₮",
        description: "Tether Token for Tether USD",
        image: "https://tether.to/images/logoCircle.png",
        extra: recorded.metadata?.[usdt]?.token_info[0]?.extra,
        updated_at: null,
        expires_at: null,
        reindex_allowed: true,
      },
    ]);
    expect(rows[0]?.extra).toMatchObject({ decimals: "6", _image_small: expect.stringMatching(/^https:\/\/imgproxy\.toncenter\.com\//) });
  });

  it("writes an NFT item with its index and collections valid or not", async () => {
    // traces_mainnet_editDomainRecord_mtw.json: a .gram domain and its collection.
    const [item] = await db.admin`
      select index, collection_address, owner_address from nft_items
      where address = '0:ADD6BFB08D3523A2DC839EA3E3A21155EB92192DF1E15C04DAEF9E31D2912823'`;
    expect(item).toEqual({
      index: "62098834295120963927411126347242136284360673055441170963365674062424074453162",
      // The metadata names neither.
      collection_address: null,
      owner_address: null,
    });
    const described = await db.admin`
      select address, type, valid, name, image from address_metadata
      where address in ('0:ADD6BFB08D3523A2DC839EA3E3A21155EB92192DF1E15C04DAEF9E31D2912823',
                        '0:22737CCF71EE3DEAE9050E16DCA36F0556C28A9765945FF889C1A2FCEC20714A')
      order by address`;
    expect(described).toEqual([
      {
        address: "0:22737CCF71EE3DEAE9050E16DCA36F0556C28A9765945FF889C1A2FCEC20714A",
        type: "nft_collections",
        valid: true,
        name: "Gram DNS Domains",
        image: "https://gramcoin.org/img/icon.png",
      },
      {
        address: "0:ADD6BFB08D3523A2DC839EA3E3A21155EB92192DF1E15C04DAEF9E31D2912823",
        type: "nft_items",
        valid: true,
        name: "marsonkotovi4.gram",
        image: "https://dns-cdn.gramcoin.org/dnsimage/marsonkotovi4.png",
      },
    ]);
    // traces_mainnet_bidask_tonSwapUsdt_mtw.json: a collection the metadata fetcher could not read.
    const invalid = "0:00D2899C68C045DE01CF6E0FA941794AA3C919D64B48954042B556F703C8E43E";
    const [collection] = await db.admin`select address from nft_collections where address = ${invalid}`;
    expect(collection).toEqual({ address: invalid });
    const [metadata] = await db.admin`select type, valid, name, extra from address_metadata where address = ${invalid}`;
    expect(metadata).toEqual({ type: "nft_collections", valid: false, name: null, extra: null });
  });

  it("writes no flags, since no recording marks an address nsfw or scam", async () => {
    const flagged = recordings
      .flatMap((recording) => Object.values(metadataOf(recording)))
      .flatMap((metadata) => metadata.token_info)
      .filter((info) => info.is_nsfw !== undefined || info.is_scam !== undefined);
    expect(flagged).toEqual([]);
    expect(await countRows(db.admin, "address_metadata_flags")).toBe(0);
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

describe("IndexLoader on shapes no recording has", () => {
  let db: TestDatabase;
  let recorded: RecordedTrace;

  beforeAll(async () => {
    const recording = await readRecording<RecordedTracesResponse>("traces_mainnet_failedNftTransfer_mtw.json");
    const [trace] = recording.traces;
    if (trace === undefined) throw new Error("expected a trace");
    recorded = trace;
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const traceRow = (traceId: string) =>
    db.admin`select state, end_lt, nodes_, edges_, external_hash_norm from traces where trace_id = ${traceId}`;

  it("writes the row of a trace too large for the API to print its transactions", async () => {
    // As toncenter prints a trace past -max-trace-txs: its row's fields, no actions, tree or transactions.
    const { actions: _actions, transactions: _transactions, transactions_order: _order, ...row } = recorded;
    const incomplete: RecordedTrace = {
      ...row,
      trace_id: "dG9vIGxhcmdlIHRvIHByaW50LCB0ZXN0IG9ubHkgISE=",
      is_incomplete: true,
      warning: "trace is too large",
      trace_info: { ...recorded.trace_info, transactions: 4001, messages: 4000 },
    };
    await new IndexLoader().addTraces([incomplete]).write(db.admin);
    expect(await traceRow(incomplete.trace_id)).toEqual([
      // Without actions or a root transaction nothing tells the normalized hash.
      { state: "complete", end_lt: recorded.end_lt, nodes_: "4001", edges_: "4000", external_hash_norm: null },
    ]);
    expect(await db.admin`select hash from transactions where trace_id = ${incomplete.trace_id}`).toEqual([]);
  });

  it("moves a trace row only to a later end_lt, as the worker does", async () => {
    const { transactions: _transactions, ...row } = recorded;
    const pending: RecordedTrace = {
      ...row,
      trace_id: "cGVuZGluZyB0cmFjZSwgdGVzdCBvbmx5ICEhISEhISE=",
      end_lt: "60137208000003",
      trace_info: { ...recorded.trace_info, trace_state: "pending", pending_messages: 1, transactions: 2 },
    };
    const complete: RecordedTrace = { ...pending, end_lt: recorded.end_lt, trace_info: { ...recorded.trace_info } };
    await new IndexLoader().addTraces([pending]).write(db.admin);
    await new IndexLoader().addTraces([complete]).write(db.admin);
    await new IndexLoader().addTraces([pending]).write(db.admin);
    // In one loader too, whichever copy comes first.
    const inOneLoad = { ...complete, trace_id: "b25lIGxvYWQsIHRlc3Qgb25seSAhISEhISEhISEhISE=" };
    await new IndexLoader().addTraces([inOneLoad, { ...pending, trace_id: inOneLoad.trace_id }]).write(db.admin);
    const expected = {
      state: "complete",
      end_lt: recorded.end_lt,
      nodes_: "3",
      edges_: "3",
      external_hash_norm: "HqGE7DWcruB8ZA1M+4cqlJRx5XAbQ7Qj8Ez8z73uGFU=",
    };
    expect(await traceRow(complete.trace_id)).toEqual([expected]);
    expect(await traceRow(inOneLoad.trace_id)).toEqual([expected]);
  });

  it("writes nsfw and scam flags, and no address_metadata for an address not indexed", async () => {
    const nsfwItem = "0:1111111111111111111111111111111111111111111111111111111111111111";
    const scamMaster = "0:2222222222222222222222222222222222222222222222222222222222222222";
    const unindexedItem = "0:3333333333333333333333333333333333333333333333333333333333333333";
    await new IndexLoader()
      .addMetadata({
        [nsfwItem]: {
          is_indexed: true,
          token_info: [{ valid: true, type: "nft_items", name: "item", nft_index: "5", is_nsfw: true, extra: { _image_small: "" } }],
        },
        [scamMaster]: {
          is_indexed: true,
          token_info: [{ valid: true, type: "jetton_masters", name: "scam", symbol: "SCAM", is_scam: true }],
        },
        // As toncenter prints a contract the metadata fetcher has not seen yet.
        [unindexedItem]: { is_indexed: false, token_info: [{ type: "nft_items", nft_index: "7" }] },
      })
      .write(db.admin);
    const flags = await db.admin`select address, is_nsfw, is_scam from address_metadata_flags order by address`;
    expect(flags).toEqual([
      { address: nsfwItem, is_nsfw: true, is_scam: false },
      { address: scamMaster, is_nsfw: false, is_scam: true },
    ]);
    const items = await db.admin`select address, index from nft_items order by address`;
    expect(items).toEqual([
      { address: nsfwItem, index: "5" },
      { address: unindexedItem, index: "7" },
    ]);
    const described = await db.admin`select address, type from address_metadata order by address`;
    expect(described).toEqual([
      { address: nsfwItem, type: "nft_items" },
      { address: scamMaster, type: "jetton_masters" },
    ]);
  });
});
