import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkSchemaVersion } from "../src/db/version.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

describe("schema version check", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("accepts the schema the project ships (1.2.10)", async () => {
    expect(await checkSchemaVersion(db.admin)).toEqual({ major: 1, minor: 2, patch: 10 });
  });

  it("accepts any 1.2 patch level", async () => {
    await db.admin`update ton_db_version set patch = 3`;
    expect(await checkSchemaVersion(db.admin)).toEqual({ major: 1, minor: 2, patch: 3 });
  });

  it("refuses another major.minor with a clear message", async () => {
    await db.admin`update ton_db_version set minor = 3, patch = 0`;
    await expect(checkSchemaVersion(db.admin)).rejects.toThrow(
      "unsupported ton-index-worker schema 1.3.0: tonquery reads schema 1.2.x",
    );
  });

  it("refuses a database the migration never ran on", async () => {
    await db.admin`delete from ton_db_version`;
    await expect(checkSchemaVersion(db.admin)).rejects.toThrow("ton_db_version is empty");
    await db.admin`drop table ton_db_version`;
    await expect(checkSchemaVersion(db.admin)).rejects.toThrow("has no ton_db_version table");
  });
});
