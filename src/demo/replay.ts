import { runQuery, type Database } from "../db/client.ts";
import { log } from "../runtime/log.ts";

// The demo's live index: `npm start` without a database replays the recorded mainnet traces as new masterchain
// blocks, one block every few seconds, so that the live streams (/api/streaming/v2/sse, /ws, StreamTraces) have
// real activity to show. Each new block copies one or two recorded traces (their transactions, messages and actions)
// under new ids: the trace id and transaction hashes are derived from the originals and the new seqno, the
// messages keep their hashes (the trace tree is built from them). Nothing else of the demo changes.
//
// The embedded database runs every connection in one session, and runs the service's statements one at a time
// (see startDemoDatabase): each block is one simple-protocol statement list (BEGIN READ WRITE ... COMMIT) sent
// through the service's own pool, so it never interleaves with a read.

export interface DemoReplay {
  stop(): void;
}

const base64Id = /^[A-Za-z0-9+/=]{44}$/;

export async function startDemoReplay(db: Database, intervalMs: number, tracesPerBlock = 2): Promise<DemoReplay> {
  const signal = AbortSignal.timeout(30_000);
  const traces = await runQuery(
    signal,
    db.sql,
    "demo_replay_traces",
    (tx) => tx<{ trace_id: string }[]>`
      select T.trace_id from traces T
      where T.state = 'complete' and exists (select 1 from transactions X where X.trace_id = T.trace_id)
      order by T.end_lt, T.trace_id`,
  );
  const [last] = await runQuery(signal, db.sql, "demo_replay_last", (tx) => tx<{ seqno: number }[]>`select max(seqno) as seqno from blocks where workchain = -1`);
  const ids = traces.map((row) => row.trace_id).filter((id) => base64Id.test(id));
  let seqno = last?.seqno ?? 0;
  let turn = 0;
  let running = false;
  const timer = setInterval(() => {
    if (running || ids.length === 0) return;
    running = true;
    seqno++;
    const picked = Array.from({ length: Math.min(tracesPerBlock, ids.length) }, () => ids[turn++ % ids.length] as string);
    const text = replayBlock(seqno, Math.floor(Date.now() / 1000), picked);
    runQuery(AbortSignal.timeout(10_000), db.sql, "demo_replay_block", (tx) => tx.unsafe(text).simple())
      .catch((err: unknown) => {
        seqno--;
        log.warn("demo replay: a block could not be written", { error: err });
      })
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** The statements that add masterchain block `seqno` holding copies of `traceIds` (validated base64, inlined). */
function replayBlock(seqno: number, utime: number, traceIds: readonly string[]): string {
  const mcShard = "-9223372036854775808";
  const derived = (expr: string) => `encode(sha256(convert_to(${expr} || ':${seqno}', 'UTF8')), 'base64')`;
  const list = traceIds.map((id) => `'${id}'`).join(", ");
  return `
    begin read write;
    insert into blocks (workchain, shard, seqno, root_hash, file_hash, mc_block_workchain, mc_block_shard, mc_block_seqno, gen_utime, start_lt, end_lt, tx_count)
      values (-1, ${mcShard}, ${seqno}, ${derived("'root'")}, ${derived("'file'")}, -1, ${mcShard}, ${seqno}, ${utime}, 0, 0, 0);
    insert into transactions
      select (jsonb_populate_record(null::transactions, to_jsonb(X) || jsonb_build_object(
        'hash', ${derived("X.hash")}, 'trace_id', ${derived("X.trace_id")}, 'mc_block_seqno', ${seqno},
        'block_workchain', -1, 'block_shard', ${mcShard}, 'block_seqno', ${seqno}))).*
      from transactions X where X.trace_id in (${list});
    insert into messages
      select (jsonb_populate_record(null::messages, to_jsonb(M) || jsonb_build_object(
        'tx_hash', ${derived("M.tx_hash")}, 'trace_id', ${derived("M.trace_id")}, 'mc_seqno', ${seqno}))).*
      from messages M where M.trace_id in (${list});
    insert into traces
      select (jsonb_populate_record(null::traces, to_jsonb(T) || jsonb_build_object(
        'trace_id', ${derived("T.trace_id")}, 'mc_seqno_start', ${seqno}, 'mc_seqno_end', ${seqno}))).*
      from traces T where T.trace_id in (${list});
    insert into actions
      select (jsonb_populate_record(null::actions, to_jsonb(A) || jsonb_build_object(
        'trace_id', ${derived("A.trace_id")}, 'trace_mc_seqno_end', ${seqno}, 'mc_seqno_end', ${seqno},
        'tx_hashes', (select coalesce(jsonb_agg(${derived("h")}), '[]'::jsonb) from unnest(A.tx_hashes::text[]) h)))).*
      from actions A where A.trace_id in (${list});
    commit;`;
}
