import { readFile } from "node:fs/promises";
import postgres from "postgres";
import { ChainGenerator, type Summary } from "./chain.ts";
import { analyze, CopySink, dropIndexes, rebuildIndexes, type RebuildTiming } from "./copy.ts";
import { tableNames, type TableName } from "./tables.ts";

// Generation into a database: checks, index handling around the COPY load, and the figures of the run.

export const schemaFile = new URL("../../src/db/schema.sql", import.meta.url);

export interface LoadOptions {
  url: string;
  transactions: number;
  seed: number;
  /** Create the database when missing and apply src/db/schema.sql when it has no index tables. */
  create?: boolean;
  /** Empty the generator's tables first when they hold rows (else a non-empty database is refused). */
  force?: boolean;
  /** Connections building indexes at the same time. */
  indexParallelism?: number;
  log?: (line: string) => void;
}

export interface LoadReport {
  chain: Summary;
  rows: Record<string, number>;
  seconds: { generateAndCopy: number; indexes: number; analyze: number; total: number };
  indexTimings: RebuildTiming[];
  /** Bytes of COPY text sent. */
  copyBytes: number;
  peakRssBytes: number;
}

export class RefusedError extends Error {}

const quiet = { onnotice: () => {} };
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);

async function ensureDatabase(url: string, log: (line: string) => void): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ""));
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`refusing to create a database named ${JSON.stringify(name)}`);
  const maintenance = new URL(url);
  maintenance.pathname = "/postgres";
  const server = postgres(maintenance.toString(), { max: 1, ...quiet });
  try {
    const [row] = await server<{ exists: boolean }[]>`select exists(select 1 from pg_database where datname = ${name}) as exists`;
    if (row?.exists !== true) {
      await server.unsafe(`create database ${name}`);
      log(`created database ${name}`);
    }
  } finally {
    await server.end({ timeout: 5 });
  }
}

/** Fills the database at `url` with a synthetic chain of exactly `transactions` transactions. */
export async function generateData(options: LoadOptions): Promise<LoadReport> {
  const log = options.log ?? (() => {});
  const started = performance.now();
  if (!Number.isSafeInteger(options.transactions) || options.transactions < 1) throw new Error("--transactions must be a positive integer");
  if (options.create) await ensureDatabase(options.url, log);
  const schema = await readFile(schemaFile, "utf8");
  const sql = postgres(options.url, {
    max: tableNames.length + 4,
    ...quiet,
    connection: { application_name: "tonquery-generate", synchronous_commit: "off" },
  });
  try {
    const [probe] = await sql<{ present: boolean }[]>`select to_regclass('transactions') is not null as present`;
    if (probe?.present !== true) {
      if (!options.create) throw new RefusedError("the database has no index tables: run with --create to apply src/db/schema.sql");
      await sql.unsafe(schema);
      log("applied src/db/schema.sql");
    }
    const filled: string[] = [];
    for (const table of tableNames) {
      const [row] = await sql.unsafe<{ any: boolean }[]>(`select exists(select 1 from ${table}) as any`);
      if (row?.any === true) filled.push(table);
    }
    if (filled.length > 0) {
      if (!options.force) {
        throw new RefusedError(`the database already has rows (in ${filled.join(", ")}): use --force to empty the generator's tables first`);
      }
      await sql.unsafe(`truncate ${tableNames.join(", ")} restart identity`);
      log(`emptied ${tableNames.length} tables (--force)`);
    }

    await dropIndexes(sql, schema);
    log("dropped the primary keys, indexes and foreign keys of the bulk tables for the load");

    const sink = new CopySink(sql);
    let lastLog = performance.now();
    const generator = new ChainGenerator({
      transactions: options.transactions,
      seed: options.seed,
      sink,
      afterRound: async (progress) => {
        await sink.settle();
        const now = performance.now();
        if (now - lastLog > 5000) {
          lastLog = now;
          const seconds = (now - started) / 1000;
          log(
            `  ${progress.transactions.toLocaleString("en")} / ${options.transactions.toLocaleString("en")} transactions, ` +
              `${progress.rounds} blocks, ${(progress.transactions / seconds).toFixed(0)} tx/s, ` +
              `${mib(sink.bytes)} MiB sent, rss ${mib(process.memoryUsage.rss())} MiB (heap ${mib(process.memoryUsage().heapTotal)}, external ${mib(process.memoryUsage().external)})`,
          );
        }
      },
    });
    let chain: Summary;
    try {
      chain = await generator.run();
      await sink.finish();
    } catch (error) {
      await sink.abort(error);
      log(`load failed (${error instanceof Error ? error.message : String(error)}): restoring the dropped indexes`);
      await rebuildIndexes(sql, schema, { parallel: options.indexParallelism ?? 2 }).catch(() => {});
      throw error;
    }
    const loaded = performance.now();
    log(`loaded in ${((loaded - started) / 1000).toFixed(1)} s; building keys and indexes`);

    const indexTimings = await rebuildIndexes(sql, schema, {
      parallel: options.indexParallelism ?? 2,
      onDone: (t) => log(`  ${t.name} ${t.seconds.toFixed(1)} s`),
    });
    const indexed = performance.now();
    await analyze(sql, tableNames);
    const analyzed = performance.now();

    const rows: Record<string, number> = {};
    for (const table of tableNames) rows[table] = sink.rows.get(table as TableName) ?? 0;
    return {
      chain,
      rows,
      seconds: {
        generateAndCopy: (loaded - started) / 1000,
        indexes: (indexed - loaded) / 1000,
        analyze: (analyzed - indexed) / 1000,
        total: (analyzed - started) / 1000,
      },
      indexTimings,
      copyBytes: sink.bytes,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}
