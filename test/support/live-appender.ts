import { beginCell } from "@ton/core";
import postgres from "postgres";
import { createHash } from "node:crypto";

// A small live writer for the stream tests, standing in for `npm run generate-data -- --follow` (issue 22) until it
// lands: it appends masterchain blocks to a test index the way ton-index-worker does, as far as streams can tell:
// - each batch (one masterchain block, its transactions, messages, bodies and traces) is one transaction, and
//   `inFlight` batches are open at once and commit out of order (the last of each group first);
// - some traces grow across two batches: pending in block N with one transaction, complete in block N+1 with the
//   second (upserted the worker's way: only a later end_lt overwrites), across groups of batches;
// - the classifier runs later: `classifyDelayMs` after a block commits, its complete traces get a ton_transfer
//   action each and classification_state ok, in one commit.
// Every block completes at least one trace; which traces, with which accounts, is kept in `blocks`, so a test knows
// what each block must deliver.

export interface AppendedTrace {
  traceId: string;
  externalHashNorm: string;
  accounts: string[];
  transactions: number;
}

export interface AppendedBlock {
  seqno: number;
  /** performance.now() when its batch committed. */
  committedAt: number;
  /** Traces the block completed. */
  traces: AppendedTrace[];
}

export interface LiveAppenderOptions {
  firstSeqno: number;
  /** Accounts the traces run between (raw form). */
  accounts: readonly string[];
  /** Batches open at once; each group of this many commits in reverse order. */
  inFlight?: number;
  /** Pause between groups of batches. */
  intervalMs?: number;
  classifyDelayMs?: number;
  /** Traces of these accounts are never classified: the classifier fails to keep up with them for ever. */
  neverClassified?: readonly string[];
  /** Bytes of comment in each message body (to make events large). */
  bodyBytes?: number;
  /** Traces each block completes. */
  tracesPerBlock?: number;
}

export interface LiveAppender {
  readonly blocks: Map<number, AppendedBlock>;
  /** The next seqno to be written. */
  readonly next: number;
  /** Writes `groups` groups of blocks now (for set-up), then returns. */
  append(groups: number): Promise<void>;
  /** Appends groups until stop(). */
  start(): void;
  /** Seqnos never written (skip()): permanent gaps. */
  readonly skipped: Set<number>;
  /** Leaves `count` seqnos out for good: a gap the index never fills. */
  skip(count: number): void;
  /** Stops appending and waits for the classifier's commits. */
  stop(): Promise<void>;
  /** stop(), and closes the writer's connections. */
  close(): Promise<void>;
}

const mcShard = "-9223372036854775808";

function hash(...parts: (string | number)[]): string {
  return createHash("sha256").update(parts.join("/")).digest("base64");
}

export function testAccounts(count: number, workchain = 0): string[] {
  return Array.from({ length: count }, (_, i) => `${workchain}:${createHash("sha256").update(`account ${i}`).digest("hex").toUpperCase()}`);
}

export function startLiveAppender(url: string, options: LiveAppenderOptions): LiveAppender {
  const sql = postgres(url, { max: (options.inFlight ?? 3) + 1, onnotice: () => {} });
  const inFlight = options.inFlight ?? 3;
  const tracesPerBlock = options.tracesPerBlock ?? 2;
  const body = beginCell()
    .storeUint(0, 32)
    .storeStringTail("x".repeat(options.bodyBytes ?? 16))
    .endCell()
    .toBoc()
    .toString("base64");
  const blocks = new Map<number, AppendedBlock>();
  const skipped = new Set<number>();
  let next = options.firstSeqno;
  let counter = 0;
  /** A trace begun in the previous block, completed in the next one. */
  let carried: { traceId: string; norm: string; accounts: string[]; startLt: bigint; startUtime: number; firstTx: string } | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const classifications: Promise<void>[] = [];

  const writeBlock = async (tx: postgres.TransactionSql, seqno: number, mayCarry: boolean): Promise<AppendedTrace[]> => {
    const utime = 1_700_000_000 + seqno;
    const baseLt = BigInt(seqno) * 1_000_000n;
    await tx`insert into blocks (workchain, shard, seqno, root_hash, file_hash, mc_block_workchain, mc_block_shard, mc_block_seqno, gen_utime, start_lt, end_lt, tx_count)
      values (-1, ${mcShard}, ${seqno}, ${hash("root", seqno)}, ${hash("file", seqno)}, -1, ${mcShard}, ${seqno}, ${utime}, ${String(baseLt)}, ${String(baseLt + 999_999n)}, 0)`;
    const completed: AppendedTrace[] = [];
    let lt = baseLt + 10n;
    const insertTx = async (traceId: string, account: string, txHash: string, inMsg: { hash: string; source: string | null; norm: string | null }, outTo: string | undefined) => {
      lt += 10n;
      const txLt = lt;
      await tx`insert into transactions (account, hash, lt, block_workchain, block_shard, block_seqno, mc_block_seqno, trace_id, now, orig_status, end_status, total_fees, descr, aborted, compute_success, account_state_hash_before, account_state_hash_after)
        values (${account}, ${txHash}, ${String(txLt)}, -1, ${mcShard}, ${seqno}, ${seqno}, ${traceId}, ${utime}, 'active', 'active', 1000, 'ord', false, true, ${hash("state", txHash, 0)}, ${hash("state", txHash, 1)})`;
      await tx`insert into account_states (hash, account, balance, account_status) values (${hash("state", txHash, 0)}, ${account}, 1000000000, 'active'), (${hash("state", txHash, 1)}, ${account}, 999000000, 'active') on conflict do nothing`;
      const bodyHash = hash("body", inMsg.hash);
      await tx`insert into message_contents (hash, body) values (${bodyHash}, ${body}) on conflict do nothing`;
      await tx`insert into messages (tx_hash, tx_lt, mc_seqno, msg_hash, msg_hash_norm, direction, trace_id, source, destination, value, fwd_fee, created_lt, created_at, opcode, bounce, bounced, body_hash)
        values (${txHash}, ${String(txLt)}, ${seqno}, ${inMsg.hash}, ${inMsg.norm}, 'in', ${traceId}, ${inMsg.source}, ${account}, ${inMsg.source === null ? null : 1_000_000}, 0, ${String(txLt - 1n)}, ${utime}, 0, false, false, ${bodyHash})`;
      if (outTo !== undefined) {
        const out = hash("out", txHash);
        await tx`insert into messages (tx_hash, tx_lt, mc_seqno, msg_hash, direction, trace_id, source, destination, value, fwd_fee, created_lt, created_at, opcode, bounce, bounced, body_hash)
          values (${txHash}, ${String(txLt)}, ${seqno}, ${out}, 'out', ${traceId}, ${account}, ${outTo}, 1000000, 0, ${String(txLt + 1n)}, ${utime}, 0, false, false, ${bodyHash})`;
        return { lt: txLt, out };
      }
      return { lt: txLt, out: undefined };
    };
    const upsertTrace = (t: { traceId: string; norm: string; startLt: bigint; startUtime: number; endLt: bigint; state: string; nodes: number; startSeqno: number }) =>
      tx`insert into traces (trace_id, external_hash, external_hash_norm, mc_seqno_start, mc_seqno_end, start_lt, start_utime, end_lt, end_utime, state, pending_edges_, edges_, nodes_, classification_state)
        values (${t.traceId}, ${t.traceId}, ${t.norm}, ${t.startSeqno}, ${seqno}, ${String(t.startLt)}, ${t.startUtime}, ${String(t.endLt)}, ${utime}, ${t.state}, ${t.state === "pending" ? 1 : 0}, ${t.nodes}, ${t.nodes}, 'unclassified')
        on conflict (trace_id) do update set mc_seqno_end = excluded.mc_seqno_end, end_lt = excluded.end_lt, end_utime = excluded.end_utime, state = excluded.state,
          pending_edges_ = excluded.pending_edges_, edges_ = excluded.edges_, nodes_ = excluded.nodes_
        where traces.end_lt < excluded.end_lt`;

    // The trace carried over from the block before: its second transaction, and it completes here.
    if (carried !== undefined) {
      const c = carried;
      carried = undefined;
      const second = hash("tx", c.traceId, 1);
      const { lt: endLt } = await insertTx(c.traceId, c.accounts[1] as string, second, { hash: hash("out", c.firstTx), source: c.accounts[0] as string, norm: null }, undefined);
      await upsertTrace({ traceId: c.traceId, norm: c.norm, startLt: c.startLt, startUtime: c.startUtime, endLt, state: "complete", nodes: 2, startSeqno: seqno - 1 });
      completed.push({ traceId: c.traceId, externalHashNorm: c.norm, accounts: [...new Set(c.accounts)], transactions: 2 });
    }
    for (let i = 0; i < tracesPerBlock; i++) {
      const n = counter++;
      const from = options.accounts[n % options.accounts.length] as string;
      const to = options.accounts[(n * 7 + 3) % options.accounts.length] as string;
      const traceId = hash("trace", n);
      const norm = hash("norm", n);
      const first = hash("tx", traceId, 0);
      const { lt: startLt } = await insertTx(traceId, from, first, { hash: traceId, source: null, norm }, to);
      // Some traces stay pending until the next block: in the last block of a group only, so that the next batch's
      // upsert of the trace (which waits for this one's commit, as the worker's would) never holds a group back.
      if (mayCarry && i === tracesPerBlock - 1 && n % 2 === 1) {
        await upsertTrace({ traceId, norm, startLt, startUtime: utime, endLt: startLt, state: "pending", nodes: 1, startSeqno: seqno });
        carried = { traceId, norm, accounts: [from, to], startLt, startUtime: utime, firstTx: first };
        continue;
      }
      const { lt: endLt } = await insertTx(traceId, to, hash("tx", traceId, 1), { hash: hash("out", first), source: from, norm: null }, undefined);
      await upsertTrace({ traceId, norm, startLt, startUtime: utime, endLt, state: "complete", nodes: 2, startSeqno: seqno });
      completed.push({ traceId, externalHashNorm: norm, accounts: [...new Set([from, to])], transactions: 2 });
    }
    return completed;
  };

  const classify = async (block: AppendedBlock) => {
    const never = new Set(options.neverClassified ?? []);
    const traces = block.traces.filter((trace) => !trace.accounts.some((account) => never.has(account)));
    if (traces.length === 0) return;
    await sql.begin(async (tx) => {
      for (const trace of traces) {
        const [from, to] = [trace.accounts[0] as string, (trace.accounts[1] ?? trace.accounts[0]) as string];
        await tx`insert into actions (trace_id, action_id, start_lt, end_lt, start_utime, end_utime, source, destination, tx_hashes, type, ton_transfer_data, value, success, trace_end_lt, trace_end_utime, trace_mc_seqno_end, trace_external_hash, trace_external_hash_norm)
          select ${trace.traceId}, ${hash("action", trace.traceId)}, T.start_lt, T.end_lt, T.start_utime, T.end_utime, ${from}, ${to}, array[]::tonhash[], 'ton_transfer', row('hello', false)::ton_transfer_details, 1000000, true, T.end_lt, T.end_utime, T.mc_seqno_end, T.external_hash, T.external_hash_norm
          from traces T where T.trace_id = ${trace.traceId}
          on conflict do nothing`;
      }
      await tx`update traces set classification_state = 'ok' where trace_id = any(${traces.map((t) => t.traceId)}::text[]::tonhash[])`;
    });
  };

  /** One group: `inFlight` batches written at once on their own connections, committed last to first. */
  const group = async () => {
    const seqnos = Array.from({ length: inFlight }, (_, i) => next + i);
    next += inFlight;
    // Written in seqno order (the carried trace links block N to N+1), held open, then committed in reverse.
    const opened: { seqno: number; traces: AppendedTrace[]; commit: () => void; done: Promise<void> }[] = [];
    for (const seqno of seqnos) {
      let traces: AppendedTrace[] = [];
      let release!: () => void;
      let written!: () => void;
      const wasWritten = new Promise<void>((resolve) => (written = resolve));
      const held = new Promise<void>((resolve) => (release = resolve));
      const done = sql
        .begin(async (tx) => {
          traces = await writeBlock(tx, seqno, seqno === seqnos[seqnos.length - 1]);
          written();
          await held;
        })
        .then(() => {
          const block = { seqno, committedAt: performance.now(), traces };
          blocks.set(seqno, block);
          if (traces.length > 0) {
            const later = new Promise<void>((resolve) => setTimeout(resolve, options.classifyDelayMs ?? 0)).then(() => classify(block));
            classifications.push(later);
          }
        });
      await wasWritten;
      opened.push({ seqno, traces, commit: release, done });
    }
    for (const batch of [...opened].reverse()) {
      batch.commit();
      await batch.done;
    }
  };

  return {
    blocks,
    skipped,
    skip(count) {
      for (let i = 0; i < count; i++) skipped.add(next++);
    },
    get next() {
      return next;
    },
    async append(groups) {
      for (let i = 0; i < groups; i++) await group();
      await Promise.all(classifications);
    },
    start() {
      stopped = false;
      running = (async () => {
        while (!stopped) {
          await group();
          await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
        }
      })();
    },
    async stop() {
      stopped = true;
      await running;
      await Promise.all(classifications);
    },
    async close() {
      stopped = true;
      await running;
      await Promise.all(classifications);
      await sql.end({ timeout: 5 });
    },
  };
}
