import { readFile } from "node:fs/promises";
import { Cell } from "@ton/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkTables, schemaObjects } from "../bench/generate/copy.ts";
import { generateData, type LoadReport, RefusedError, schemaFile } from "../bench/generate/load.ts";
import { tableNames } from "../bench/generate/tables.ts";
import { decodeTextComment } from "../src/ton/comment.ts";
import { createTestDatabase, type TestDatabase, testEngine } from "./support/database.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// The synthetic chain generator (npm run generate-data) on a few thousand transactions: counts, determinism,
// referential integrity, the shape of the data, and the API reading it. The generator loads with COPY FROM
// STDIN, which PGlite's socket server does not support (the COPY never completes), so this runs on a real
// PostgreSQL server only.

const transactions = 3000;
const seed = 7;
const engine = await testEngine();

describe.runIf(engine === "postgresql")("generate-data (synthetic chain)", () => {
  let db: TestDatabase;
  let report: LoadReport;
  let server: TestServer | undefined;

  const digests = async () => {
    const sql = db.admin;
    const order: Record<string, string> = {
      blocks: "workchain, shard, seqno",
      shard_state: "mc_seqno, workchain, shard, seqno",
      transactions: "hash, lt",
      messages: "tx_hash, tx_lt, msg_hash, direction",
      message_contents: "hash",
      account_states: "hash",
      latest_account_states: "account",
      traces: "trace_id",
      actions: "trace_id, action_id",
      jetton_wallets: "address",
    };
    const out: Record<string, string> = {};
    for (const [table, by] of Object.entries(order)) {
      const [row] = await sql.unsafe<{ digest: string }[]>(`select md5(string_agg(t::text, '|' order by ${by})) as digest from ${table} t`);
      out[table] = row?.digest ?? "";
    }
    return out;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    report = await generateData({ url: db.url, transactions, seed });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it("writes exactly the transactions asked for, and every table the API reads", async () => {
    const sql = db.admin;
    for (const table of tableNames) {
      const [row] = await sql.unsafe<{ n: string }[]>(`select count(*)::text as n from ${table}`);
      expect(Number(row?.n), table).toBe(report.rows[table]);
      expect(Number(row?.n), table).toBeGreaterThan(0);
    }
    expect(report.rows.transactions).toBe(transactions);
    // An internal message has two rows, an external one (or a pending one) one row.
    expect(report.rows.messages).toBeGreaterThan(transactions * 1.4);
    // About one action per two to three transactions, one trace per few transactions.
    expect(report.rows.actions).toBeGreaterThan(transactions / 4);
    expect(report.rows.actions).toBeLessThan(transactions / 1.5);
    expect(report.rows.traces).toBeGreaterThan(transactions / 10);
    const [blocks] = await sql<{ master: string; shards: string; shard_ids: string }[]>`
      select count(*) filter (where workchain = -1)::text as master, count(*) filter (where workchain = 0)::text as shards,
        count(distinct shard) filter (where workchain = 0)::text as shard_ids
      from blocks`;
    expect(Number(blocks?.master)).toBe(report.chain.masterchainBlocks);
    expect(Number(blocks?.shards)).toBe(report.chain.shardBlocks);
    expect(Number(blocks?.shard_ids)).toBeGreaterThan(1);
  });

  it("restores every key, index and foreign key of the schema after the load", async () => {
    const schema = await readFile(schemaFile, "utf8");
    const wanted = schemaObjects(schema, bulkTables);
    expect(wanted.filter((o) => o.kind === "foreign key")).toHaveLength(3);
    const rows = await db.admin<{ name: string }[]>`
      select conname as name from pg_constraint where connamespace = 'public'::regnamespace
      union select indexname from pg_indexes where schemaname = 'public'`;
    const present = new Set(rows.map((r) => r.name));
    expect(wanted.filter((o) => !present.has(o.name)).map((o) => o.name)).toEqual([]);
  });

  it("refuses a database that already has rows unless forced", async () => {
    await expect(generateData({ url: db.url, transactions: 10, seed })).rejects.toBeInstanceOf(RefusedError);
  });

  it("is deterministic: the same seed gives the same rows, another seed other rows", async () => {
    const first = await digests();
    await generateData({ url: db.url, transactions, seed: seed + 1, force: true });
    const other = await digests();
    await generateData({ url: db.url, transactions, seed, force: true });
    const again = await digests();
    expect(again).toEqual(first);
    expect(other.transactions).not.toBe(first.transactions);
  }, 60_000);

  it("keeps the references the worker's data has", async () => {
    const sql = db.admin;
    const count = async (query: string) => Number((await sql.unsafe<{ n: string }[]>(`select count(*)::text as n from (${query}) q`))[0]?.n);
    // Every message's transaction exists; every transaction's trace exists and is rooted at a transaction.
    expect(await count(`select 1 from messages m where not exists (select 1 from transactions t where t.hash = m.tx_hash and t.lt = m.tx_lt)`)).toBe(0);
    expect(await count(`select 1 from transactions t where not exists (select 1 from traces e where e.trace_id = t.trace_id)`)).toBe(0);
    expect(await count(`select 1 from traces e where not exists (select 1 from transactions t where t.hash = e.trace_id)`)).toBe(0);
    // A non-root transaction's in-message is the 'out' message of a transaction of the same trace, sent earlier.
    expect(
      await count(`
        select 1 from messages i
        where i.direction = 'in' and i.source is not null
          and not exists (select 1 from messages o where o.msg_hash = i.msg_hash and o.direction = 'out' and o.trace_id = i.trace_id and o.tx_lt < i.tx_lt)`),
    ).toBe(0);
    // Complete traces count their transactions and edges; pending ones their undelivered messages.
    expect(await count(`select 1 from traces e where e.state = 'complete' and e.nodes_ <> (select count(*) from transactions t where t.trace_id = e.trace_id)`)).toBe(0);
    expect(await count(`select 1 from traces e where e.state = 'complete' and e.pending_edges_ <> 0`)).toBe(0);
    expect(
      await count(`
        select 1 from traces e
        where e.edges_ <> (select count(*) from messages m where m.trace_id = e.trace_id and (m.direction = 'in' or m.destination is null))`),
    ).toBe(0);
    expect(
      await count(`
        select 1 from traces e
        where e.state = 'pending' and e.pending_edges_ <> (select count(*) from messages o where o.trace_id = e.trace_id and o.direction = 'out'
          and o.destination is not null and not exists (select 1 from messages i where i.msg_hash = o.msg_hash and i.direction = 'in'))`),
    ).toBe(0);
    // Each account's transactions chain: prev_trans_hash and the state hashes follow from one to the next.
    expect(
      await count(`
        select 1 from (select prev_trans_hash, account_state_hash_before,
            lag(hash) over w as prev_hash, lag(account_state_hash_after) over w as prev_state
          from transactions window w as (partition by account order by lt)) x
        where prev_hash is not null and (prev_hash <> prev_trans_hash or prev_state <> account_state_hash_before)`),
    ).toBe(0);
    expect(await count(`select 1 from transactions t where t.end_status <> 'nonexist' and not exists (select 1 from account_states s where s.hash = t.account_state_hash_after)`)).toBe(0);
    expect(await count(`select 1 from messages m where not exists (select 1 from message_contents c where c.hash = m.body_hash)`)).toBe(0);
    // Blocks: counts and lt ranges hold their transactions; shard blocks belong to the masterchain block of their round.
    expect(
      await count(`
        select 1 from blocks b
        where b.tx_count <> (select count(*) from transactions t where t.block_workchain = b.workchain and t.block_shard = b.shard and t.block_seqno = b.seqno)`),
    ).toBe(0);
    expect(
      await count(`
        select 1 from transactions t join blocks b on (b.workchain, b.shard, b.seqno) = (t.block_workchain, t.block_shard, t.block_seqno)
        where t.lt not between b.start_lt and b.end_lt or t.mc_block_seqno <> b.mc_block_seqno or t.now <> b.gen_utime`),
    ).toBe(0);
    expect(await count(`select 1 from shard_state s where not exists (select 1 from blocks b where (b.workchain, b.shard, b.seqno) = (s.workchain, s.shard, s.seqno))`)).toBe(0);
  });

  it("has the shapes of the recorded data", async () => {
    const sql = db.admin;
    // Pending traces, tick-tocks, aborted and bounced transactions, deploys.
    const [shape] = await sql<Record<string, string>[]>`
      select
        (select count(*) from traces where state = 'pending')::text as pending,
        (select count(*) from transactions where descr = 'tick_tock')::text as tick_tock,
        (select count(*) from transactions where aborted)::text as aborted,
        (select count(*) from messages where bounced)::text as bounced,
        (select count(*) from transactions where orig_status = 'nonexist' and end_status = 'active')::text as deployed,
        (select count(*) from messages where opcode = ${0x0f8a7ea5 | 0})::text as jetton_transfers,
        (select count(*) from messages where opcode = ${0xd53276db | 0})::text as excesses,
        (select count(*) from messages where opcode = 0)::text as comments,
        (select count(*) from messages where msg_hash_norm is not null)::text as normalized`;
    for (const [key, value] of Object.entries(shape ?? {})) expect(Number(value), key).toBeGreaterThan(0);
    expect(Number(shape?.pending) / report.rows.traces).toBeLessThan(0.06);
    const types = await sql<{ type: string }[]>`select distinct type from actions order by type`;
    expect(types.map((t) => t.type)).toEqual(
      expect.arrayContaining(["call_contract", "contract_deploy", "jetton_swap", "jetton_transfer", "ton_transfer"]),
    );

    // Bodies are real bags of cells whose hash is body_hash; comments decode.
    const bodies = await sql<{ hash: string; body: string; opcode: number | null }[]>`
      select c.hash, c.body, (select m.opcode from messages m where m.body_hash = c.hash limit 1) as opcode
      from message_contents c order by c.hash limit 300`;
    for (const b of bodies) expect(Cell.fromBase64(b.body).hash().toString("base64")).toBe(b.hash);
    const [comment] = await sql<{ body: string }[]>`
      select c.body from messages m join message_contents c on c.hash = m.body_hash where m.opcode = 0 limit 1`;
    expect(decodeTextComment(comment?.body ?? "")).toMatch(/\S/);

    // Heavy tail: a few accounts take a large share, most have a handful of transactions.
    const [tail] = await sql<{ top: string; median: string }[]>`
      with c as (select account, count(*) as n from transactions group by account)
      select max(n)::text as top, percentile_disc(0.5) within group (order by n)::text as median from c`;
    expect(Number(tail?.top) / transactions).toBeGreaterThan(0.04);
    expect(Number(tail?.median)).toBeLessThanOrEqual(3);
    // Hashes and addresses in the index's forms.
    const [forms] = await sql<{ bad: string }[]>`
      select count(*)::text as bad from transactions
      where account !~ '^-?[0-9]:[0-9A-F]{64}$' or hash !~ '^[A-Za-z0-9+/]{43}=$' or trace_id !~ '^[A-Za-z0-9+/]{43}=$'`;
    expect(Number(forms?.bad)).toBe(0);
  });

  it("serves the API: traces of a busy account, masterchainInfo, a block's transactions", async () => {
    const sql = db.admin;
    server = await startTestServer(db.url);
    const [hot] = await sql<{ account: string }[]>`
      select account from transactions where block_workchain = 0 group by account order by count(distinct trace_id) desc, account limit 1`;
    const traces = await server.rest(`/api/v3/traces?account=${hot?.account}&limit=10`);
    expect(traces.status).toBe(200);
    const list = (traces.body as { traces: { transactions: Record<string, { account: string }> }[] }).traces;
    expect(list).toHaveLength(10);
    for (const trace of list) expect(Object.values(trace.transactions).some((tx) => tx.account === hot?.account)).toBe(true);

    const info = await server.rest("/api/v3/masterchainInfo");
    expect(info.status).toBe(200);
    const [mc] = await sql<{ last: number; first: number }[]>`select max(seqno) as last, min(seqno) as first from blocks where workchain = -1`;
    expect((info.body as { last: { seqno: number }; first: { seqno: number } }).last.seqno).toBe(mc?.last);
    expect((info.body as { last: { seqno: number }; first: { seqno: number } }).first.seqno).toBe(mc?.first);

    const [block] = await sql<{ shard: string; seqno: number; tx_count: number }[]>`
      select shard::text, seqno, tx_count from blocks where workchain = 0 and tx_count > 0 order by tx_count desc, seqno limit 1`;
    const txs = await server.rest(`/api/v2/getBlockTransactionsExt?workchain=0&shard=${block?.shard}&seqno=${block?.seqno}&count=20`);
    expect(txs.status).toBe(200);
    const result = (txs.body as { ok: boolean; result: { transactions: unknown[]; incomplete: boolean } }).result;
    expect(result.transactions).toHaveLength(Math.min(20, block?.tx_count ?? 0));
    expect(result.incomplete).toBe((block?.tx_count ?? 0) > 20);
  });
});
