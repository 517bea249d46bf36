import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// The driver itself, as the service configures it: a statement that fails after some of its rows have arrived
// (statement timeout, cancellation, an error in a later row) must leave its connection fit for the next one.
// postgres.js 3.4.9 kept counting rows from where the failed statement stopped (porsager/postgres#1119, #1181);
// patches/postgres+3.4.9.patch resets the count when the statement ends, whatever its outcome.

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

describe("postgres driver", () => {
  it("answers the next statement on a connection whose last statement failed mid-result", async () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      // Three rows arrive, then the fourth divides by zero.
      const failed = await sql`select i, 1 / (4 - i) as x from generate_series(1, 10) as i`.catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(Error);
      const next = await sql`select x from generate_series(1, 5) as x`;
      expect(next.length).toBe(5);
      expect([...next].map((row) => row.x)).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await sql.end();
    }
  });

  it("answers a statement pipelined behind one that fails mid-result", async () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const failing = sql`select i, 1 / (4 - i) as x from generate_series(1, 10) as i`.catch((err: unknown) => err);
      const behind = sql`select x from generate_series(1, 5) as x`;
      expect(await failing).toBeInstanceOf(Error);
      const rows = await behind;
      expect(rows.length).toBe(5);
      expect(Object.keys([...rows])).toEqual(["0", "1", "2", "3", "4"]);
    } finally {
      await sql.end();
    }
  });
});
