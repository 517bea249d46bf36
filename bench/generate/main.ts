import { parseArgs } from "node:util";
import { generateData, RefusedError } from "./load.ts";

// npm run generate-data -- --transactions N [--seed S] [--database-url URL] [--create] [--force]

const usage = `Fills a ton-index-worker (schema 1.2.10) database with a synthetic, deterministic chain.

Usage: npm run generate-data -- --transactions N [options]

  --transactions N     transactions to generate (exactly N), required
  --seed S             seed (default 1); the same seed and N give identical rows
  --database-url URL   target database (default: $DATABASE_URL, else postgres://postgres@127.0.0.1:5432/tonquery_bench)
  --create             create the database if missing and apply src/db/schema.sql if it has no index tables
  --force              empty the generator's tables (truncate) when they already hold rows; without it a
                       database with rows is refused
  --index-parallelism K  connections building indexes at the same time (default 2)
  --help               this text

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

await main();
