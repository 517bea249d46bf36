import type postgres from "postgres";
import { type ChainStart, type KnownAccount, walletCodeHashes } from "./chain.ts";

// Where a chain already in a database ends, read before follow mode continues it: the newest masterchain and shard
// seqnos, an lt above every lt written, the last block's time, and the accounts to take over (the elector and config,
// the busiest wallets of the last transactions), so that new blocks, lts and account histories go on from there.

/** Run inside a transaction: on PGlite's shared session a statement outside one could interleave with another connection's. */
type Sql = postgres.TransactionSql;

/** Wallets taken over: the busiest of the last `recentTransactions` transactions, at most this many. */
const adoptedWallets = 200;
const recentTransactions = 20_000;

export async function readChainStart(sql: Sql): Promise<ChainStart | undefined> {
  const [master] = await sql<{ seqno: number | null; utime: number | null }[]>`
    select seqno, gen_utime::int as utime from blocks where workchain = -1 order by seqno desc limit 1`;
  if (master?.seqno === undefined || master.seqno === null) return undefined;
  const [lts] = await sql<{ lt: string | null }[]>`
    select greatest((select max(lt) from transactions), (select max(end_lt) from blocks where workchain = -1 and seqno = ${master.seqno}))::text as lt`;
  const shards = await sql<{ shard: string; seqno: number }[]>`
    select shard::text, max(seqno) as seqno from blocks where workchain = 0 group by shard`;
  const accounts = await sql<
    { account: string; hash: string; balance: number; status: KnownAccount["status"]; timestamp: number; last_trans_hash: string; last_trans_lt: string; data_hash: string | null; code_hash: string | null }[]
  >`
    with recent as (
      select account, count(*) as n from (select account from transactions order by lt desc limit ${recentTransactions}) t group by account
    )
    select l.account, l.hash, l.balance::float8 as balance, l.account_status::text as status, l.timestamp, l.last_trans_hash,
      l.last_trans_lt::text, l.data_hash, l.code_hash
    from recent r join latest_account_states l on l.account = r.account
    where l.account_status = 'active' and l.last_trans_hash is not null
      and (l.code_hash = any(${walletCodeHashes as string[]}::text[]::tonhash[]) or l.account like '-1:%')
    order by (l.account like '-1:%') desc, r.n desc, l.account
    limit ${adoptedWallets + 2}`;
  // Every lt the chain writes is above the newest one, with room for the messages a transaction creates after it.
  const lt = (Math.floor(Number(lts?.lt ?? 0) / 1_000_000) + 2) * 1_000_000;
  return {
    mcSeqno: master.seqno + 1,
    lt,
    utime: (master.utime ?? 0) + 3,
    shardSeqnos: new Map(shards.map((s) => [s.shard, s.seqno + 1])),
    accounts: accounts.map((row) => ({
      address: row.account,
      stateHash: row.hash,
      balance: row.balance,
      status: row.status,
      timestamp: row.timestamp,
      lastTransHash: row.last_trans_hash,
      lastTransLt: Number(row.last_trans_lt),
      dataHash: row.data_hash,
      codeHash: row.code_hash,
    })),
  };
}

/**
 * The seed of a continuing chain: derived from where the database ends, so each run of follow mode hashes (its
 * transactions, messages, states, addresses) from its own seed, never the generation's or an earlier run's.
 */
export function continuationSeed(start: ChainStart): number {
  return (Math.imul(start.mcSeqno, 0x9e3779b1) ^ Math.floor(start.lt / 1_000_000)) >>> 0;
}
