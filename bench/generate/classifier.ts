import type postgres from "postgres";
import type { LiveInserts } from "./batch-insert.ts";

// The classifier of follow mode, after indexer/event_classifier.py: it classifies complete traces some time after
// the batch that completed them committed, in commits of its own: their actions and action_accounts rows, the
// traces' classification_state, and blocks_classified (where the database has that table; the schema tonquery
// ships leaves it out, as the API never reads it).

type Sql = postgres.Sql;

export interface CompletedTrace {
  traceId: string;
  /** The masterchain block of the batch that completed the trace. */
  mcSeqno: number;
  actions: string[];
  actionAccounts: string[];
}

interface Waiting extends CompletedTrace {
  readyAt: number;
}

export interface ClassifierStats {
  commits: number;
  traces: number;
  actions: number;
}

export class Classifier {
  private readonly sql: Sql;
  private readonly inserts: LiveInserts;
  private readonly lagMs: number;
  private readonly recordsBlocks: boolean;
  private readonly waiting: Waiting[] = [];
  readonly stats: ClassifierStats = { commits: 0, traces: 0, actions: 0 };

  constructor(sql: Sql, inserts: LiveInserts, options: { lagMs: number; recordsBlocks: boolean }) {
    this.sql = sql;
    this.inserts = inserts;
    this.lagMs = options.lagMs;
    this.recordsBlocks = options.recordsBlocks;
  }

  /** Traces a batch completed, once that batch has committed: classified once `lagMs` has passed. */
  committed(traces: readonly CompletedTrace[], now: number): void {
    for (const trace of traces) this.waiting.push({ ...trace, readyAt: now + this.lagMs });
  }

  get backlog(): number {
    return this.waiting.length;
  }

  /** Classifies every trace whose time has come, in one commit; resolves to how many. */
  async classifyReady(now: number): Promise<number> {
    let count = 0;
    while (count < this.waiting.length && (this.waiting[count] as Waiting).readyAt <= now) count++;
    if (count === 0) return 0;
    const batch = this.waiting.slice(0, count);
    const actions = batch.flatMap((t) => t.actions);
    const actionAccounts = batch.flatMap((t) => t.actionAccounts);
    const blocks = [...new Set(batch.map((t) => t.mcSeqno))];
    await this.sql.begin("read write", async (tx) => {
      if (actions.length > 0) await this.inserts.write(tx, "actions", actions);
      if (actionAccounts.length > 0) await this.inserts.write(tx, "action_accounts", actionAccounts);
      // Compared as tonhash, not text: the primary key serves it, where text would scan every trace.
      await tx`update traces set classification_state = 'ok' where trace_id = any(${batch.map((t) => t.traceId)}::text[]::tonhash[])`;
      if (this.recordsBlocks) await tx`insert into blocks_classified (mc_seqno) select unnest(${blocks}::int[]) on conflict do nothing`;
    });
    // Taken off only once committed: a failed commit leaves them for the next try.
    this.waiting.splice(0, count);
    this.stats.commits++;
    this.stats.traces += count;
    this.stats.actions += actions.length;
    return count;
  }
}
