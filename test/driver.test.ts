import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// The driver itself, as the service configures it: a statement that fails after some of its rows have arrived
// (statement timeout, cancellation, an error in a later row) must leave its connection fit for the next one.
// postgres.js 3.4.9 kept counting rows from where the failed statement stopped (porsager/postgres#1119, #1181);
// patches/postgres+3.4.9.patch resets the count when the statement ends, whatever its outcome.
// A reserved connection that closes while it is reserved (the database restarts, a proxy drops it) was handed back
// to the pool by its release() all the same, and the next statement on it was written to a socket that no longer
// existed: a TypeError thrown from a timer, which ends the process. The patch makes such a release a no-op.

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

  it("never hands out again a reserved connection that closed while reserved", async (context) => {
    if (database.engine === "pglite") context.skip(); // one backend: no pg_terminate_backend
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const reserved = await sql.reserve();
      const [{ pid }] = (await reserved`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      await database.admin`select pg_terminate_backend(${pid})`;
      // The driver sees the socket close a turn or two later; nothing waits for it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      reserved.release();
      const [{ answer }] = (await sql`select 42 as answer`) as unknown as [{ answer: number }];
      expect(answer).toBe(42);
    } finally {
      await sql.end();
    }
  });
});
