import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase, runQuery, type Database, type Sql } from "../src/db/client.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// What every session the service opens is set to, whichever pool it belongs to.

let db: TestDatabase;
let database: Database;
beforeAll(async () => {
  db = await createTestDatabase();
  database = openDatabase(databaseOptions(loadConfig({}), db.url, { sharedSession: db.engine === "pglite" }));
});
afterAll(async () => {
  await database?.end();
  await db?.drop();
});

const setting = (sql: Sql, name: string) =>
  runQuery(new AbortController().signal, sql, "test_setting", (tx) => tx<{ value: string }[]>`select current_setting(${name}) as value`).then(([row]) => row?.value);

describe("the service's database sessions", () => {
  it("start no parallel workers, in either pool", async () => {
    expect(await setting(database.sql, "max_parallel_workers_per_gather")).toBe("0");
    expect(await setting(database.sqlCustomPlan, "max_parallel_workers_per_gather")).toBe("0");
  });
});
