import { createHash } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SortOrder } from "../gen/tonquery/v1/service_pb.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// Keyset paging of /traces (REST `cursor`, RPC `page_token`) on traces built to stress the page order: end_lt and
// end_utime values shared by several traces (ties broken by trace_id), pending traces whose keys are null (first in
// descending order, last in ascending), and accounts shared between traces.

type Json = Record<string, unknown>;

const hashOf = (text: string) => createHash("sha256").update(text).digest("base64");
const accounts = Array.from({ length: 3 }, (_, i) => `0:${createHash("sha256").update(`cursor account ${i}`).digest("hex").toUpperCase()}`);
const traceCount = 90;

async function insertTraces(db: TestDatabase) {
  const traces: Json[] = [];
  const transactions: Json[] = [];
  for (let t = 0; t < traceCount; t++) {
    const id = hashOf(`cursor trace ${t}`);
    // Few distinct keys, so that many traces tie; every ninth trace is still pending, without end times.
    const pending = t % 9 === 4;
    const endLt = pending ? null : String(1_000 + (t % 23) * 10);
    const endUtime = pending ? null : 1_700_000_000 + (t % 17);
    const size = 1 + (t % 3);
    for (let i = 0; i < size; i++) {
      transactions.push({ account: accounts[(t + i) % accounts.length], hash: hashOf(`cursor trace ${t} tx ${i}`), lt: String(1_000 + t * 10 + i), trace_id: id, now: 1_700_000_000 });
    }
    traces.push({
      trace_id: id,
      start_lt: String(1_000 + t * 10),
      end_lt: endLt,
      start_utime: 1_700_000_000,
      end_utime: endUtime,
      state: pending ? "pending" : "complete",
      nodes_: size,
      edges_: size - 1,
      pending_edges_: 0,
    });
  }
  await db.admin`insert into transactions ${db.admin(transactions)}`;
  await db.admin`insert into traces ${db.admin(traces)}`;
}

let db: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  await insertTraces(db);
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

async function tracesPage(query: string): Promise<{ traces: Json[]; next_cursor: string | null }> {
  const { status, body } = await server.rest(`/api/v3/traces?${query}`);
  expect(status, query).toBe(200);
  return body as { traces: Json[]; next_cursor: string | null };
}

/** Every page of `query` by cursor, `limit` at a time. */
async function walkByCursor(query: string, limit: number): Promise<Json[][]> {
  const pages: Json[][] = [];
  let cursor: string | null = null;
  do {
    const page = await tracesPage(`${query}&limit=${limit}${cursor === null ? "" : `&cursor=${cursor}`}`);
    pages.push(page.traces);
    cursor = page.next_cursor;
    expect(pages.length).toBeLessThanOrEqual(traceCount + 1);
  } while (cursor !== null);
  return pages;
}

const selections = [
  "",
  `account=${encodeURIComponent(accounts[0] as string)}`,
  `account=${encodeURIComponent(accounts[2] as string)}&end_lt=1150`,
  "start_utime=1700000003",
  "start_utime=1700000000&end_utime=1700000010",
  "start_lt=1050",
];

describe("traces by cursor", () => {
  it("walk every selection in both orders: each trace exactly once, in the order of one whole page", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...selections), fc.constantFrom("asc", "desc"), fc.integer({ min: 1, max: 13 }), async (selection, sort, limit) => {
        const query = `${selection}&sort=${sort}`;
        const whole = (await tracesPage(`${query}&limit=1000`)).traces.map((t) => t.trace_id);
        const pages = await walkByCursor(query, limit);
        const walked = pages.flat().map((t) => t.trace_id);
        expect(walked).toEqual(whole);
        expect(new Set(walked).size).toBe(walked.length);
        // Every page but the last is full; the last is short, or empty after a full one.
        for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
        expect((pages.at(-1) as Json[]).length).toBeLessThan(limit);
      }),
      { numRuns: 16 },
    );
  }, 120_000);

  it("reach the pending traces, whose keys are null: first in descending order, last in ascending", async () => {
    const pending = new Set(Array.from({ length: traceCount }, (_, t) => t).filter((t) => t % 9 === 4).map((t) => hashOf(`cursor trace ${t}`)));
    const desc = (await walkByCursor("sort=desc", 4)).flat().map((t) => t.trace_id as string);
    const asc = (await walkByCursor("sort=asc", 4)).flat().map((t) => t.trace_id as string);
    expect(desc).toHaveLength(traceCount);
    expect(new Set(desc.slice(0, pending.size))).toEqual(pending);
    expect(new Set(asc.slice(-pending.size))).toEqual(pending);
    const byTime = (await walkByCursor("start_utime=0&sort=asc", 5)).flat().map((t) => t.end_utime as number);
    expect(byTime).toEqual([...byTime].sort((a, b) => a - b));
  });

  it("give the same pages over the typed API, whose token is the REST cursor", async () => {
    const client = server.client("grpc");
    const ids: string[] = [];
    let pageToken: string | undefined;
    for (;;) {
      const response = await client.getTraces({ account: accounts[1], limit: 7, sort: SortOrder.ASC, pageToken });
      ids.push(...response.traces.map((t) => t.traceId ?? ""));
      if (response.nextPageToken === "") break;
      pageToken = response.nextPageToken;
    }
    const rest = (await walkByCursor(`account=${encodeURIComponent(accounts[1] as string)}&sort=asc`, 7)).flat().map((t) => t.trace_id);
    expect(ids).toEqual(rest);
    expect(ids.length).toBeGreaterThan(7);
  });

  it("refuse a cursor used with other filters, another sort, an offset, or altered, with a 422", async () => {
    const first = await tracesPage("sort=desc&limit=5");
    const cursor = first.next_cursor as string;
    expect(typeof cursor).toBe("string");
    const refused = async (query: string, message: string) => {
      const { status, body } = await server.rest(`/api/v3/traces?${query}`);
      expect({ query, status, body }).toEqual({ query, status: 422, body: { error: message } });
    };
    await refused(`sort=asc&limit=5&cursor=${cursor}`, "invalid cursor: it belongs to other filters or another sort order");
    await refused(`account=${encodeURIComponent(accounts[0] as string)}&limit=5&cursor=${cursor}`, "invalid cursor: it belongs to other filters or another sort order");
    await refused(`limit=5&offset=5&cursor=${cursor}`, "offset cannot be combined with a cursor");
    // One bit changed anywhere in the position or the scope: the tag no longer matches.
    const bytes = Buffer.from(cursor, "base64url");
    for (const at of [2, 9, 20, 45]) {
      const altered = Buffer.from(bytes);
      altered[at] = (altered[at] as number) ^ 1;
      await refused(`limit=5&cursor=${altered.toString("base64url")}`, "invalid cursor: it was altered or issued by another deployment");
    }
    await refused("limit=5&cursor=not-a-cursor", "invalid cursor: not a cursor of this service");
    await refused("limit=5&cursor=%2B%2F%3D", "invalid cursor: not a cursor of this service");
    // A page size change is allowed: the position is the same.
    expect((await tracesPage(`limit=3&cursor=${cursor}`)).traces).toHaveLength(3);
  });

  it("refuse another deployment's cursor when CURSOR_SECRET differs", async () => {
    const other = await startTestServer(db.url, { CURSOR_SECRET: "another deployment" });
    try {
      const response = await other.rest("/api/v3/traces?limit=5");
      const cursor = (response.body as { next_cursor: string }).next_cursor;
      expect((await other.rest(`/api/v3/traces?limit=5&cursor=${cursor}`)).status).toBe(200);
      expect(await server.rest(`/api/v3/traces?limit=5&cursor=${cursor}`)).toMatchObject({
        status: 422,
        body: { error: "invalid cursor: it was altered or issued by another deployment" },
      });
    } finally {
      await other.close();
    }
  });
});
