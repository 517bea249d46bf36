import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChainStart } from "../bench/generate/chain.ts";
import { readChainStart } from "../bench/generate/follow-start.ts";
import { type LiveWriterStats, startLiveWriter } from "../bench/generate/follow.ts";
import { generateData } from "../bench/generate/load.ts";
import { createTestDatabase, type TestDatabase, testEngine } from "./support/database.ts";
import { DoorClient, type Door, Tally, tracesProblems } from "./support/live-answers.ts";
import { startTestServer } from "./support/server.ts";

// The live writer (npm run generate-data -- --follow): it continues a generated index as ton-index-worker writes one
// (a batch per masterchain block, several in flight, traces upserted as they grow, a classifier later), and every
// state it commits is whole. On PostgreSQL it continues a generated index; on PGlite, where the generator's COPY
// does not complete, a first run lays the chain down and the tests continue that one.

const engine = await testEngine();
const onPostgres = engine === "postgresql";
/** PGlite runs one transaction at a time: one connection, so batches never wait on each other's statements. */
const connections = onPostgres ? undefined : 1;

let db: TestDatabase;
let sql: postgres.Sql;
let before: ChainStart;

/** What one snapshot of the index says about the rows the writer wrote from `start` on. */
async function snapshot(from: ChainStart) {
  return sql.begin("isolation level repeatable read read only", async (tx) => {
    const [row] = await tx<{ broken: number; pending_off: string[]; ok_without_actions: number; unclassified_with_actions: number; gaps: number; blocks: number }[]>`
      with traces_since as (select * from traces where start_lt >= ${from.lt}),
      counted as (
        select t.*, (select count(*) from transactions x where x.trace_id = t.trace_id) as visible,
          (select max(lt) from transactions x where x.trace_id = t.trace_id) as last_lt,
          exists (select 1 from actions a where a.trace_id = t.trace_id) as has_actions,
          -- Messages on their way, as an answer shows them (test/support/live-answers.ts, traceProblems): sent by a
          -- transaction of the trace to an account (not ext-out), received by none. A message's rows commit with
          -- their transaction, so a visible row is a visible transaction's.
          (select count(*) from messages o where o.trace_id = t.trace_id and o.direction = 'out' and o.destination is not null
            and not exists (select 1 from messages i where i.msg_hash = o.msg_hash and i.direction = 'in' and i.trace_id = t.trace_id)) as on_their_way
        from traces_since t),
      masters as (select seqno from blocks where workchain = -1 and seqno >= ${from.mcSeqno})
      select
        (select count(*) from counted where nodes_ <> visible or end_lt <> last_lt)::int as broken,
        (select coalesce(array_agg(format('%s (%s): pending_edges_ %s, %s on their way', trace_id, state, pending_edges_, on_their_way)), '{}')
          from counted where pending_edges_ <> on_their_way or (state = 'pending') <> (on_their_way > 0)) as pending_off,
        (select count(*) from counted where classification_state = 'ok' and not has_actions and nodes_ > 1)::int as ok_without_actions,
        (select count(*) from counted where classification_state = 'unclassified' and has_actions)::int as unclassified_with_actions,
        (select coalesce(max(seqno) - min(seqno) + 1 - count(*), 0) from masters)::int as gaps,
        (select count(*) from masters)::int as blocks`;
    const traces = await tx<{ trace_id: string; state: string; nodes: number; classification_state: string }[]>`
      select trace_id, state::text, nodes_::int as nodes, classification_state::text from traces where start_lt >= ${from.lt}`;
    return { ...(row as NonNullable<typeof row>), traces };
  });
}

beforeAll(async () => {
  db = await createTestDatabase();
  if (onPostgres) await generateData({ url: db.url, transactions: 3000, seed: 5 });
  else await (await startLiveWriter({ url: db.url, rate: Number.POSITIVE_INFINITY, maxBatches: 60, seed: 5, classifierLagMs: 0, connections })).done;
  sql = postgres(db.url, { max: 1, onnotice: () => {} });
  before = (await sql.begin("read only", (tx) => readChainStart(tx))) as ChainStart;
}, 120_000);
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await db?.drop();
});

describe("the live writer", () => {
  let stats: LiveWriterStats;
  const seen = new Map<string, string[]>();
  const states: Awaited<ReturnType<typeof snapshot>>[] = [];

  beforeAll(async () => {
    const writer = await startLiveWriter({ url: db.url, rate: onPostgres ? 150 : 60, transactionsPerBlock: 12, classifierLagMs: 40, connections });
    const deadline = performance.now() + 3000;
    // Look at the index as a reader would while it moves: snapshot after snapshot.
    while (performance.now() < deadline) {
      const state = await snapshot(before);
      states.push(state);
      for (const t of state.traces) {
        const history = seen.get(t.trace_id) ?? [];
        const label = `${t.state}/${t.nodes}/${t.classification_state}`;
        if (history[history.length - 1] !== label) history.push(label);
        seen.set(t.trace_id, history);
      }
    }
    stats = await writer.stop();
  }, 60_000);

  it("continues the chain in the database: next seqnos, higher lts, the accounts' histories linked", async () => {
    expect(stats.batches).toBeGreaterThan(20);
    expect(stats.firstMcSeqno).toBe(before.mcSeqno);
    const [newest] = await sql<{ min_lt: string; linked: number; adopted: number }[]>`
      select min(lt)::text as min_lt,
        count(*) filter (where prev_trans_hash = any(${before.accounts.map((a) => a.lastTransHash)}::text[]))::int as linked,
        count(distinct account) filter (where account = any(${before.accounts.map((a) => a.address)}::text[]))::int as adopted
      from transactions where mc_block_seqno >= ${before.mcSeqno}`;
    expect(BigInt(newest?.min_lt ?? "0")).toBeGreaterThanOrEqual(BigInt(before.lt));
    // The busiest wallets go on: their first new transaction names their last old one.
    expect(newest?.adopted).toBeGreaterThan(0);
    expect(newest?.linked).toBeGreaterThan(0);
    const [blocks] = await sql<{ n: number }[]>`select count(*)::int as n from blocks where mc_block_seqno >= ${before.mcSeqno}`;
    expect(blocks?.n).toBe(stats.rows.blocks);
  });

  it("commits every batch whole: each trace counts exactly the transactions and pending messages visible with it, in every snapshot", () => {
    expect(states.length).toBeGreaterThan(5);
    expect(states.map((s) => s.broken).filter((n) => n > 0)).toEqual([]);
    // pending_edges_ counts the messages sent and not yet received, no more: not one its sender has yet to send.
    expect(states.flatMap((s) => s.pending_off).slice(0, 5)).toEqual([]);
    expect(states.map((s) => s.unclassified_with_actions + s.ok_without_actions).filter((n) => n > 0)).toEqual([]);
  });

  it.runIf(onPostgres)("commits batches out of order: a masterchain block is visible before an earlier one", () => {
    expect(stats.outOfOrderCommits).toBeGreaterThan(0);
    expect(states.some((s) => s.gaps > 0)).toBe(true);
  });

  it("grows traces over later batches, pending to complete, and classifies them later", () => {
    const histories = [...seen.values()];
    const grew = histories.filter((h) => h.length >= 2 && h[0]?.startsWith("pending/") && h.some((l) => l.startsWith("complete/")));
    expect(grew.length).toBeGreaterThan(0);
    const nodes = (label: string) => Number(label.split("/")[1]);
    for (const h of grew) expect(nodes(h[h.length - 1] as string)).toBeGreaterThan(nodes(h[0] as string));
    const classifiedLater = histories.filter((h) => h.some((l) => l.endsWith("/unclassified") && l.startsWith("complete/")) && h[h.length - 1]?.endsWith("/ok"));
    expect(classifiedLater.length).toBeGreaterThan(0);
    expect(stats.tracesClassified).toBeGreaterThan(0);
    expect(stats.classifierCommits).toBeGreaterThan(0);
  });

  it("moves latest_account_states with each account's newest transaction", async () => {
    const [moved] = await sql<{ moved: number; behind: number }[]>`
      with newest as (
        select distinct on (account) account, lt, hash, end_status from transactions where mc_block_seqno >= ${before.mcSeqno} order by account, lt desc)
      select count(*) filter (where l.last_trans_lt = n.lt and l.last_trans_hash = n.hash)::int as moved,
        count(*) filter (where l.last_trans_lt is distinct from n.lt)::int as behind
      from newest n left join latest_account_states l on l.account = n.account
      where n.end_status <> 'nonexist'`;
    expect(moved?.moved).toBeGreaterThan(10);
    // Accounts the writer deleted (a bounce to nowhere) have no row; every other one is at its newest transaction.
    expect(moved?.behind).toBe(0);
  });

  it("stops cleanly: every batch it started is committed, nothing is left open", async () => {
    const [open] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where application_name = 'tonquery-follow' and datname = current_database()`;
    if (onPostgres) expect(open?.n).toBe(0);
    const [rows] = await sql<{ transactions: number; masters: number }[]>`
      select (select count(*) from transactions where mc_block_seqno >= ${before.mcSeqno})::int as transactions,
        (select count(*) from blocks where workchain = -1 and seqno >= ${before.mcSeqno})::int as masters`;
    expect(rows).toEqual({ transactions: stats.transactions, masters: stats.batches });
    // A writer after it takes the database at once (no lock left behind) and goes on where it stopped.
    const next = await startLiveWriter({ url: db.url, rate: Number.POSITIVE_INFINITY, maxBatches: 3, connections });
    expect(next.start?.mcSeqno).toBe((stats.lastMcSeqno ?? 0) + 1);
    expect((await next.done).batches).toBe(3);
  });

  it("leaves an index whose every answer holds together, through every door", async () => {
    const server = await startTestServer(db.url);
    try {
      const tally = new Tally();
      // The newest traces: those the writer grew and classified last.
      const ids = [...seen.keys()].slice(-120);
      for (const door of ["rest", "connect", "grpc", "grpc-web"] as Door[]) {
        const client = new DoorClient(server, door);
        for (let i = 0; i < ids.length; i += 20) {
          tally.record(door, tracesProblems(await client.traces({ traceIds: ids.slice(i, i + 20), limit: 20, includeActions: true })));
        }
      }
      expect(tally.answerTotal).toBeGreaterThan(4);
      expect(tally.tornTotal, tally.summary()).toBe(0);
    } finally {
      await server.close();
    }
  });
});
