import { generateData } from "../../bench/generate/load.ts";
import { type Database, databaseOptions, openDatabase } from "../../src/db/client.ts";
import { prepareBodyDecoding } from "../../src/decoding/page-bodies.ts";
import { readRecording, recordingsDir } from "../../src/demo/dataset.ts";
import { IndexLoader } from "../../src/recordings/loader.ts";
import type { RecordedBlockTransactionsExt } from "../../src/recordings/recorded.ts";
import { type Config, loadConfig } from "../../src/runtime/config.ts";
import { readdir } from "node:fs/promises";
import { createTestDatabase, type TestDatabase } from "./database.ts";
import { readTransactionRecordings } from "./recordings.ts";

// The indexes the wire encoders' differential tests (test/*-encoder*.test.ts) compare the encoders on: every
// recording loaded as the worker would have written it, and a generated chain.

/** An index of every recording that carries transactions: traces, v3 transaction lists and v2 block pages. */
export async function recordedIndex(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  const loader = (await readTransactionRecordings()).load(new IndexLoader());
  const blockPages = (await readdir(recordingsDir)).filter((name) => name.startsWith("getBlockTransactionsExt_")).sort();
  for (const name of blockPages) loader.addBlockTransactionsExt((await readRecording<{ result: RecordedBlockTransactionsExt }>(name)).result);
  await loader.write(db.admin);
  return db;
}

/** An index of a chain made by the bench's generator (PostgreSQL only: it loads with COPY FROM STDIN). */
export async function generatedIndex(transactions: number, seed: number): Promise<TestDatabase> {
  const db = await createTestDatabase();
  await generateData({ url: db.url, transactions, seed });
  return db;
}

/** The service's data access on `db` with the settings `env` changes, as the handlers take it. */
export function serviceDeps(db: TestDatabase, env: Record<string, string | undefined> = {}): { db: Database; config: Config } {
  // These tests compare bytes, not availability: under a loaded machine their synchronous work (encoding and
  // comparing whole pages) held the event loop past the 1 s connection bound, and the lease's timer, run before the
  // connection's I/O is read, failed a page with "no connection within 1000 ms" (CI, 1 run in 3 with two busy cores).
  const config = loadConfig({ DB_POOL_SIZE: "3", DB_CONNECT_TIMEOUT_MS: "10000", ...env });
  // As the service does before its first request: compiling the body schema blocks for a second or more, long
  // enough under load for the reader's availability probe to time out and take the database for down.
  prepareBodyDecoding(config);
  return { db: openDatabase(databaseOptions(config, db.url, { sharedSession: db.engine === "pglite" })), config };
}
