import { parseArgs } from "node:util";
import { startLiveWriter } from "./follow.ts";
import { generateData, RefusedError } from "./load.ts";

// npm run generate-data -- --transactions N [--seed S] [--database-url URL] [--create] [--force]
// npm run generate-data -- --follow --rate N [--in-flight K] [--database-url URL]

const usage = `Fills a ton-index-worker (schema 1.2.10) database with a synthetic, deterministic chain.

Usage: npm run generate-data -- --transactions N [options]
       npm run generate-data -- --follow --rate N [follow options]

  --transactions N     transactions to generate (exactly N), required
  --seed S             seed (default 1); the same seed and N give identical rows
  --database-url URL   target database (default: $DATABASE_URL, else postgres://postgres@127.0.0.1:5432/tonquery_bench)
  --create             create the database if missing and apply src/db/schema.sql if it has no index tables
  --force              empty the generator's tables (truncate) when they already hold rows; without it a
                       database with rows is refused
  --index-parallelism K  connections building indexes at the same time (default 2)
  --help               this text

Follow mode (--follow) keeps appending to the database as ton-index-worker writes a live index, from where its
chain ends (or from scratch in an empty database with the schema), until interrupted (Ctrl-C), then prints what
it wrote. See bench/generate/README.md.
  --rate N             masterchain blocks (one batch, one transaction each) per second; 0 for as fast as it goes
  --in-flight K        batches written at the same time (default 3, like the worker's --max-insert-actors)
  --transactions-per-block N   mean transactions a masterchain block starts (default 20)
  --classifier-lag-ms N        time from a trace's completing commit to its classification (default 200)
  --batches N          stop after N batches (default: until interrupted)

The big tables (blocks, shard_state, transactions, messages, message_contents, account_states,
latest_account_states, traces, actions) are loaded without their primary keys, indexes and foreign keys, which
are rebuilt afterwards exactly as src/db/schema.sql declares them (then everything is analyzed). If the run is
interrupted, run it again with --force: it restores whatever is missing.`;

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}\n`);
  process.exit(2);
}

function integer(name: string, value: string | undefined, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) fail(`--${name} is required`);
    return fallback;
  }
  const n = Number(value.replace(/_/g, ""));
  if (!Number.isSafeInteger(n) || n < 0) fail(`--${name} must be a non-negative integer, got ${value}`);
  return n;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        transactions: { type: "string" },
        seed: { type: "string" },
        "database-url": { type: "string" },
        create: { type: "boolean", default: false },
        force: { type: "boolean", default: false },
        "index-parallelism": { type: "string" },
        follow: { type: "boolean", default: false },
        rate: { type: "string" },
        "in-flight": { type: "string" },
        "transactions-per-block": { type: "string" },
        "classifier-lag-ms": { type: "string" },
        batches: { type: "string" },
        help: { type: "boolean", default: false },
      },
      strict: true,
    }).values;
  } catch (error) {
    fail((error as Error).message);
  }
  if (parsed.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (parsed.follow) {
    await follow(parsed);
    return;
  }
  const transactions = integer("transactions", parsed.transactions);
  if (transactions < 1) fail("--transactions must be at least 1");
  const seed = integer("seed", parsed.seed, 1);
  const url = parsed["database-url"] ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/tonquery_bench";
  const redacted = new URL(url);
  if (redacted.password) redacted.password = "***";
  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(`generating ${transactions.toLocaleString("en")} transactions (seed ${seed}) into ${redacted.toString()}`);

  try {
    const report = await generateData({
      url,
      transactions,
      seed,
      create: parsed.create,
      force: parsed.force,
      indexParallelism: integer("index-parallelism", parsed["index-parallelism"], 2),
      log,
    });
    const { chain, rows, seconds } = report;
    const total = Object.values(rows).reduce((a, b) => a + b, 0);
    log("");
    log("rows per table:");
    for (const [table, count] of Object.entries(rows)) log(`  ${table.padEnd(22)} ${count.toLocaleString("en").padStart(12)}`);
    log(`  ${"total".padEnd(22)} ${total.toLocaleString("en").padStart(12)}`);
    log("");
    log(
      `chain: ${chain.masterchainBlocks.toLocaleString("en")} masterchain + ${chain.shardBlocks.toLocaleString("en")} shard blocks, ` +
        `${chain.traces.toLocaleString("en")} traces (${chain.pendingTraces.toLocaleString("en")} pending, ${chain.giantTraces} over 4000 transactions, ` +
        `largest ${chain.largestTrace.toLocaleString("en")}), ${chain.accounts.toLocaleString("en")} accounts, ` +
        `${new Date(chain.firstUtime * 1000).toISOString()} .. ${new Date(chain.lastUtime * 1000).toISOString()}`,
    );
    log(`busiest accounts: ${chain.topAccounts.map((t) => `${t.account} (${t.transactions.toLocaleString("en")})`).join(", ")}`);
    log(
      `time: generate+COPY ${seconds.generateAndCopy.toFixed(1)} s, indexes ${seconds.indexes.toFixed(1)} s, analyze ${seconds.analyze.toFixed(1)} s, ` +
        `total ${seconds.total.toFixed(1)} s; ${(total / seconds.total).toFixed(0)} rows/s overall, ` +
        `${(total / seconds.generateAndCopy).toFixed(0)} rows/s loading (${(report.copyBytes / 2 ** 20).toFixed(0)} MiB of COPY text); ` +
        `peak RSS ${(report.peakRssBytes / 2 ** 20).toFixed(0)} MiB`,
    );
  } catch (error) {
    if (error instanceof RefusedError) {
      process.stderr.write(`refused: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

function databaseUrl(given: string | undefined): { url: string; redacted: string } {
  const url = given ?? process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/tonquery_bench";
  const redacted = new URL(url);
  if (redacted.password) redacted.password = "***";
  return { url, redacted: redacted.toString() };
}

async function follow(parsed: Record<string, string | boolean | undefined>): Promise<void> {
  const rate = integer("rate", parsed.rate as string | undefined);
  const { url, redacted } = databaseUrl(parsed["database-url"] as string | undefined);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const writer = await startLiveWriter({
    url,
    rate: rate === 0 ? Number.POSITIVE_INFINITY : rate,
    inFlight: integer("in-flight", parsed["in-flight"] as string | undefined, 3),
    transactionsPerBlock: integer("transactions-per-block", parsed["transactions-per-block"] as string | undefined, 20),
    classifierLagMs: integer("classifier-lag-ms", parsed["classifier-lag-ms"] as string | undefined, 200),
    maxBatches: parsed.batches === undefined ? undefined : integer("batches", parsed.batches as string),
    log,
  });
  const start = writer.start;
  log(
    start === undefined
      ? `following ${redacted}: the database has no chain, starting one`
      : `following ${redacted} from masterchain block ${start.mcSeqno} (lt ${start.lt}), ${start.accounts.length} accounts taken over`,
  );
  const stop = () => void writer.stop();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const stats = await writer.done;
  process.off("SIGINT", stop);
  process.off("SIGTERM", stop);
  log("");
  log(
    `wrote masterchain blocks ${stats.firstMcSeqno ?? "-"}..${stats.lastMcSeqno ?? "-"}: ${stats.batches} batches in ${stats.seconds.toFixed(1)} s ` +
      `(${(stats.batches / stats.seconds).toFixed(1)}/s, ${stats.outOfOrderCommits} committed before an earlier one), ${stats.transactions} transactions, ` +
      `${stats.tracesStarted} traces started, ${stats.tracesCompleted} completed, ${stats.tracesClassified} classified in ${stats.classifierCommits} commits`,
  );
  log("rows per table:");
  for (const [table, count] of Object.entries(stats.rows)) log(`  ${table.padEnd(22)} ${count.toLocaleString("en").padStart(12)}`);
}

await main();
