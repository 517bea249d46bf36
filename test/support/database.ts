import postgres from "postgres";
import { randomBytes } from "node:crypto";
import { readSchema, startEmbeddedDatabase } from "../../src/embedded/pglite.ts";
import { loadConfig } from "../../src/runtime/config.ts";
import { databaseOptions, openDatabase, redactUrl, type Database, type Sql } from "../../src/db/client.ts";

/**
 * A fresh index database for one test file: a new database on the real PostgreSQL server when one is
 * reachable (always in CI), else an in-process PGlite. Either way it starts with the schema and no rows,
 * and `drop()` removes it.
 */
export interface TestDatabase {
  engine: "postgresql" | "pglite";
  url: string;
  /** A writable connection for loading rows; the service under test connects read-only. */
  admin: Sql;
  /** The service's own prepared-statement pool on this database, for calling data access directly. */
  reader: Sql;
  drop(): Promise<void>;
}

const serverUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const quiet = { onnotice: () => {} };

async function realServerReachable(): Promise<boolean> {
  const probe = postgres(serverUrl, { max: 1, connect_timeout: 2, ...quiet });
  try {
    await probe`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await probe.end({ timeout: 1 });
  }
}

let engine: Promise<TestDatabase["engine"]> | undefined;

/** TEST_DATABASE=pglite forces PGlite; CI must reach the real server. */
export function testEngine(): Promise<TestDatabase["engine"]> {
  engine ??= (async () => {
    if (process.env.TEST_DATABASE === "pglite") return "pglite";
    if (await realServerReachable()) return "postgresql";
    if (process.env.CI) throw new Error(`CI must test against PostgreSQL, but ${redactUrl(serverUrl)} is not reachable`);
    return "pglite";
  })();
  return engine;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const engine = await testEngine();
  const database = engine === "postgresql" ? await createOnServer() : await createOnPglite();
  // Opened on first use, small: an embedded database has few connections to spare beside the server under test.
  let service: Database | undefined;
  return {
    ...database,
    get reader() {
      service ??= openDatabase(databaseOptions(loadConfig({ DB_POOL_SIZE: "2" }), database.url, { sharedSession: engine === "pglite" }));
      return service.sql;
    },
    async drop() {
      await service?.end();
      await database.drop();
    },
  };
}

async function createOnServer(): Promise<Omit<TestDatabase, "reader">> {
  const name = `tonquery_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  const server = postgres(serverUrl, { max: 1, ...quiet });
  await server.unsafe(`create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const admin = postgres(url.toString(), { max: 2, ...quiet });
  await admin.unsafe(await readSchema());
  return {
    engine: "postgresql",
    url: url.toString(),
    admin,
    async drop() {
      await admin.end({ timeout: 5 });
      await server.unsafe(`drop database if exists ${name} with (force)`);
      await server.end({ timeout: 5 });
    },
  };
}

async function createOnPglite(): Promise<Omit<TestDatabase, "reader">> {
  const embedded = await startEmbeddedDatabase(16);
  const admin = postgres(embedded.url, { max: 1, ...quiet });
  return {
    engine: "pglite",
    url: embedded.url,
    admin,
    async drop() {
      await admin.end({ timeout: 5 });
      await embedded.close();
    },
  };
}

