import postgres from "postgres";
import { BatchSink, LiveInserts, type LiveTable } from "./batch-insert.ts";
import { ChainGenerator, type ChainStart } from "./chain.ts";
import { Classifier, type CompletedTrace } from "./classifier.ts";
import { continuationSeed, readChainStart } from "./follow-start.ts";
import type { TableName } from "./tables.ts";

// Follow mode (npm run generate-data -- --follow): the synthetic chain goes on in a database, written the way
// ton-index-worker writes a live index. Each round of the generator (a masterchain block with its shard blocks) is
// one batch, one PostgreSQL transaction: blocks, shard_state, transactions, messages, bodies, states, then the rows
// of the traces that grew in it and the latest states of the accounts it touched, upserted. Up to `inFlight`
// batches are written at once (the worker's --max-insert-actors), so a later block can become visible before an
// earlier one. The classifier classifies complete traces later, in commits of its own.

/** Order of a batch's statements: foreign keys first (blocks, then transactions, then messages), upserts last. */
const batchTables: TableName[] = [
  "blocks", "shard_state", "transactions", "messages", "message_contents", "account_states", "traces", "latest_account_states",
];

export interface LiveWriterOptions {
  url: string;
  /** Batches (masterchain blocks) per second; Infinity writes as fast as the database takes them. */
  rate: number;
  /** Batches written at the same time (default 3, the worker's --max-insert-actors default). */
  inFlight?: number;
  /** Mean transactions a masterchain block starts (default 20). */
  transactionsPerBlock?: number;
  /** How long after its completing batch committed a trace is classified (default 200 ms). */
  classifierLagMs?: number;
  /** Accounts of the writer's own population, beside those taken over from the database (default 2000). */
  accounts?: number;
  /** Seed for an empty database; a database with a chain gives the seed (see continuationSeed). */
  seed?: number;
  /**
   * Connections (default inFlight + 1: one per batch in flight, one for the classifier). With fewer, batches wait for
   * a connection. 1 suits PGlite, whose socket runs one transaction at a time anyway and whose shared session fares
   * better with fewer connections interleaving their messages.
   */
  connections?: number;
  /** Stops by itself after this many batches (default: until stop()). */
  maxBatches?: number;
  /** Told of each batch once committed (tests look at the index right then). */
  onCommit?: (batch: CommittedBatch) => void;
  log?: (line: string) => void;
}

export interface CommittedBatch {
  /** Position in writing order, from 0. */
  index: number;
  mcSeqno: number;
  transactions: number;
  /** An earlier batch was still uncommitted when this one committed. */
  outOfOrder: boolean;
}

export interface LiveWriterStats {
  /** Masterchain seqnos written: first .. last (undefined before the first batch). */
  firstMcSeqno: number | undefined;
  lastMcSeqno: number | undefined;
  batches: number;
  /** Batches that committed while an earlier batch was still uncommitted. */
  outOfOrderCommits: number;
  transactions: number;
  tracesStarted: number;
  tracesCompleted: number;
  tracesClassified: number;
  classifierCommits: number;
  /** Rows written per table. */
  rows: Partial<Record<LiveTable, number>>;
  seconds: number;
}

export interface LiveWriter {
  /** Where the chain in the database ended when the writer started (undefined: it was empty). */
  readonly start: ChainStart | undefined;
  /** The figures so far. */
  stats(): LiveWriterStats;
  /** Resolves once `count` more batches have committed (counting from the call). */
  batches(count: number): Promise<void>;
  /**
   * Stops writing: no new batch is started, those in flight commit, the classifier stops (traces still waiting stay
   * unclassified, as behind a lagging classifier), the connections close. Rejects with the writer's failure, if any.
   */
  stop(): Promise<LiveWriterStats>;
  /** Settles when the writer stops, by itself (maxBatches, a failure) or by stop(). */
  readonly done: Promise<LiveWriterStats>;
}

interface Batch {
  index: number;
  mcSeqno: number;
  transactions: number;
  completed: CompletedTrace[];
  committed: boolean;
  settled: Promise<void>;
}

const quiet = { onnotice: () => {} };

export async function startLiveWriter(options: LiveWriterOptions): Promise<LiveWriter> {
  const inFlight = options.inFlight ?? 3;
  if (!(options.rate > 0)) throw new Error(`rate must be positive, got ${options.rate}`);
  if (!Number.isInteger(inFlight) || inFlight < 1) throw new Error(`inFlight must be a positive integer, got ${inFlight}`);
  const log = options.log ?? (() => {});
  // One connection per batch in flight, one for the classifier. Each transaction says `read write`: the embedded
  // demo database makes its one shared session read-only by default. Every statement runs in a transaction, reads
  // included: PGlite's socket gives a connection the session to itself only inside a transaction, and outside one
  // a statement's messages would interleave with another connection's and destroy its unnamed statement or portal.
  const sql = postgres(options.url, { max: (options.connections ?? inFlight + 1), ...quiet, connection: { application_name: "tonquery-follow" } });
  let inserts!: LiveInserts;
  let start: ChainStart | undefined;
  let recordsBlocks = false;
  try {
    await sql.begin("read only", async (tx) => {
      inserts = await LiveInserts.prepare(tx);
      start = await readChainStart(tx);
      const [present] = await tx<{ present: boolean }[]>`select to_regclass('blocks_classified') is not null as present`;
      recordsBlocks = present?.present === true;
    });
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }

  const sink = new BatchSink();
  let completing: CompletedTrace[] = [];
  const generator = new ChainGenerator({
    transactions: 0,
    seed: start === undefined ? (options.seed ?? 1) : continuationSeed(start),
    sink,
    live: {
      start,
      transactionsPerRound: options.transactionsPerBlock ?? 20,
      accounts: options.accounts ?? 2000,
      deliverySpacing: inFlight,
      classifiable: (traceId, mcSeqno, rows) => completing.push({ traceId, mcSeqno, ...rows }),
    },
  });
  const classifier = new Classifier(sql, inserts, { lagMs: options.classifierLagMs ?? 200, recordsBlocks });

  const started = performance.now();
  const stats: LiveWriterStats = {
    firstMcSeqno: undefined,
    lastMcSeqno: undefined,
    batches: 0,
    outOfOrderCommits: 0,
    transactions: 0,
    tracesStarted: 0,
    tracesCompleted: 0,
    tracesClassified: 0,
    classifierCommits: 0,
    rows: {},
    seconds: 0,
  };
  const snapshot = (): LiveWriterStats => ({
    ...stats,
    tracesClassified: classifier.stats.traces,
    classifierCommits: classifier.stats.commits,
    rows: { ...stats.rows, actions: classifier.stats.actions },
    seconds: (performance.now() - started) / 1000,
  });

  let stopping = false;
  let failure: unknown;
  const writing: Batch[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });
  const fail = (error: unknown) => {
    failure ??= error;
    stopping = true;
    wake?.();
  };

  const write = async (batch: Batch, lines: Map<TableName, string[]>) => {
    await sql.begin("read write", async (tx) => {
      for (const table of batchTables) {
        const rows = lines.get(table);
        if (rows !== undefined && rows.length > 0) await inserts.write(tx, table, rows);
      }
    });
    batch.committed = true;
    const outOfOrder = writing.some((other) => other.index < batch.index && !other.committed);
    stats.batches++;
    if (outOfOrder) stats.outOfOrderCommits++;
    stats.transactions += batch.transactions;
    stats.tracesCompleted += batch.completed.length;
    for (const [table, rows] of lines) stats.rows[table] = (stats.rows[table] ?? 0) + rows.length;
    classifier.committed(batch.completed, performance.now());
    options.onCommit?.({ index: batch.index, mcSeqno: batch.mcSeqno, transactions: batch.transactions, outOfOrder });
    for (const waiter of waiters) waiter.count--;
    for (const waiter of waiters.filter((w) => w.count <= 0)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };

  const writeLoop = async () => {
    const interval = Number.isFinite(options.rate) ? 1000 / options.rate : 0;
    for (let index = 0; !stopping && index < (options.maxBatches ?? Number.POSITIVE_INFINITY); index++) {
      const due = started + index * interval - performance.now();
      if (due > 0) await sleep(due);
      // A batch starts once the one `inFlight` batches before it has committed: at most `inFlight` at once, and
      // batches in flight together are fewer than deliverySpacing rounds apart, so they never share a trace.
      const blocking = writing.find((b) => b.index === index - inFlight);
      if (blocking !== undefined) await blocking.settled;
      if (stopping) break;
      const round = generator.step();
      const batch: Batch = {
        index,
        mcSeqno: round.mcSeqno,
        transactions: round.transactions,
        completed: completing,
        committed: false,
        settled: Promise.resolve(),
      };
      completing = [];
      stats.firstMcSeqno ??= round.mcSeqno;
      stats.lastMcSeqno = round.mcSeqno;
      stats.tracesStarted += round.tracesStarted;
      batch.settled = write(batch, sink.take()).catch(fail);
      writing.push(batch);
      // Settled batches older than the window are no longer needed.
      while (writing.length > inFlight * 2 && (writing[0] as Batch).committed) writing.shift();
    }
    await Promise.all(writing.map((b) => b.settled));
    stopping = true;
  };

  const classifyLoop = async () => {
    const every = Math.max(20, Math.min(200, (options.classifierLagMs ?? 200) / 2));
    while (!stopping) {
      await new Promise((resolve) => setTimeout(resolve, every));
      if (stopping) break;
      await classifier.classifyReady(performance.now()).catch(fail);
    }
  };

  let lastLog = performance.now();
  const progress = setInterval(() => {
    const s = snapshot();
    const seconds = (performance.now() - lastLog) / 1000;
    lastLog = performance.now();
    log(
      `  mc ${s.lastMcSeqno ?? "-"}: ${s.batches} batches (${s.outOfOrderCommits} out of order), ${s.transactions} transactions, ` +
        `${s.tracesCompleted}/${s.tracesStarted} traces complete, ${s.tracesClassified} classified (${classifier.backlog} waiting), ` +
        `${(s.batches / s.seconds).toFixed(1)} batches/s over ${seconds.toFixed(0)} s`,
    );
  }, 5000);
  progress.unref();

  const done = (async () => {
    try {
      await Promise.all([writeLoop(), classifyLoop()]);
    } finally {
      clearInterval(progress);
      for (const waiter of waiters.splice(0)) waiter.resolve();
      await sql.end({ timeout: 5 });
    }
    if (failure !== undefined) throw failure;
    return snapshot();
  })();
  // The failure is reported by stop() and done; unobserved, it must not end the process.
  done.catch(() => {});

  return {
    start,
    stats: snapshot,
    batches: (count) => new Promise<void>((resolve) => (stopping ? resolve() : waiters.push({ count, resolve }))),
    stop: () => {
      stopping = true;
      wake?.();
      return done;
    },
    done,
  };
}
