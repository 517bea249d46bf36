import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectMessageRows } from "../src/db/transactions.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { readTransactionRecordings } from "./support/recordings.ts";

// Messages read by trace pair their counterparts without the correlated subquery the statement had; the answer
// must be the one that subquery gave, which this file keeps as the reference.

let db: TestDatabase;
const signal = new AbortController().signal;

beforeAll(async () => {
  const recordings = await readTransactionRecordings();
  db = await createTestDatabase();
  await recordings.load(new IndexLoader()).write(db.admin);
});
afterAll(async () => {
  await db?.drop();
});

type Pairing = { tx_hash: string; msg_hash: string; direction: string; counterpart_tx_hash: string | null };

/** Each message of the traces with its counterpart as the correlated subquery finds it. */
async function referencePairings(traceIds: readonly string[]): Promise<Pairing[]> {
  const rows = await db.admin<Pairing[]>`
    select M.tx_hash, M.msg_hash, M.direction,
      (select C.tx_hash from messages C where C.msg_hash = M.msg_hash and C.direction <> M.direction limit 1) as counterpart_tx_hash
    from messages M
    where M.trace_id = any(${traceIds as string[]}::text[]::tonhash[])
    order by M.tx_hash, M.created_lt nulls first, M.msg_hash`;
  return rows.map((r) => ({ ...r }));
}

async function pairings(traceIds: readonly string[]): Promise<Pairing[]> {
  const rows = await selectMessageRows(db.reader, signal, { traceIds });
  return rows.map(({ tx_hash, msg_hash, direction, counterpart_tx_hash }) => ({ tx_hash, msg_hash, direction, counterpart_tx_hash }));
}

async function allTraceIds(): Promise<string[]> {
  const rows = await db.admin<{ trace_id: string }[]>`select distinct trace_id from messages where trace_id is not null order by trace_id`;
  return rows.map((r) => r.trace_id);
}

describe("messages read by trace", () => {
  it("carry the counterparts the correlated subquery finds, for every recorded trace, alone and all together", async () => {
    const traceIds = await allTraceIds();
    expect(traceIds.length).toBeGreaterThan(10);
    const all = await pairings(traceIds);
    expect(all.some((p) => p.counterpart_tx_hash !== null)).toBe(true);
    expect(all).toEqual(await referencePairings(traceIds));
    for (const traceId of traceIds) expect(await pairings([traceId]), traceId).toEqual(await referencePairings([traceId]));
  });

  it("find a counterpart outside the rows read, as a trace still pending has one", async () => {
    // An internal message whose receiving side belongs to another trace than the one read.
    const [moved] = await db.admin<{ tx_hash: string; trace_id: string }[]>`
      select R.tx_hash, R.trace_id from messages R
      where R.direction = 'in' and R.source is not null
        and exists (select 1 from messages S where S.msg_hash = R.msg_hash and S.direction = 'out')
      order by R.tx_hash limit 1`;
    expect(moved).toBeDefined();
    const { tx_hash: txHash, trace_id: traceId } = moved as { tx_hash: string; trace_id: string };
    const elsewhere = "A".repeat(43) + "=";
    await db.admin`update messages set trace_id = ${elsewhere} where tx_hash = ${txHash} and direction = 'in'`;
    try {
      const rows = await pairings([traceId]);
      expect(rows).toEqual(await referencePairings([traceId]));
      const out = rows.find((r) => r.direction === "out" && r.counterpart_tx_hash === txHash);
      expect(out).toBeDefined();
      expect(await pairings([elsewhere])).toEqual(await referencePairings([elsewhere]));
    } finally {
      await db.admin`update messages set trace_id = ${traceId} where tx_hash = ${txHash} and direction = 'in'`;
    }
  });
});
