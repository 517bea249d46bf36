import net from "node:net";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runQuery } from "../src/db/client.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// The driver itself, as the service configures it: a statement that fails after some of its rows have arrived
// (statement timeout, cancellation, an error in a later row) must leave its connection fit for the next one.
// postgres.js 3.4.9 kept counting rows from where the failed statement stopped (porsager/postgres#1119, #1181);
// patches/postgres+3.4.9.patch resets the count when the statement ends, whatever its outcome. A reserved connection
// whose server went away (a replica killed, a backend terminated) must not come back into the pool when released:
// 3.4.9 put it back with no socket, and the next statement on it threw from a timer and took the process down
// (porsager/postgres#1199, #1208), or never answered; the patch leaves it closed, to be reconnected on demand, and
// fails what a lost connection still owed. A reserve waiting in the queue when a connection closed was handed to the
// reconnect and dropped there, never settled (porsager/postgres#1195): on a pool opening its connections, the
// service's statement then waited for ever, holding its connection permit; the patch keeps it queued.

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});

describe("postgres driver", () => {
  // runQuery has each row's values named by a shaper of its own as the driver reads them (src/db/statement.ts,
  // shaperFor; the patch's rowShaper): the rows must be what the driver's own objects would have been, key for key
  // and value for value, whatever the column types.
  it("names the rows runQuery reads as the driver would: same keys in the same order, same values", async () => {
    const statement = (sql: typeof database.admin) => sql`
      select 7 as small, 9007199254740993::int8 as big, null::text as nothing, 'déjà "vu"'::text as word,
        true as yes, '{"a": 1}'::jsonb as doc, 1 as twice, 2 as twice, i as position
      from generate_series(1, 3) as i order by i`;
    const expected = [...(await statement(database.admin))];
    const read = [...(await runQuery(AbortSignal.timeout(10_000), database.reader, "driver_test_shape", (tx) => statement(tx)))];
    expect(read).toEqual(expected);
    expect(read.map((row) => Object.keys(row))).toEqual(expected.map((row) => Object.keys(row)));
    expect(read[1]).toEqual({ small: 7, big: "9007199254740993", nothing: null, word: 'déjà "vu"', yes: true, doc: { a: 1 }, twice: 2, position: 2 });
    // Another column list is another shape: nothing of the first one's leaks into it.
    const [other] = await runQuery(AbortSignal.timeout(10_000), database.reader, "driver_test_shape_other", (tx) => tx`select 1 as small`);
    expect(other).toEqual({ small: 1 });
  });

  // The patch writes an array parameter's literal in a loop (src/types.js, arraySerializer): every element must reach
  // PostgreSQL as it was, quotes, backslashes, commas, braces, NULLs and non-ASCII text included, and nested arrays too.
  // Checked on PostgreSQL's side: the driver's array parser reads a NULL element back as the text "NULL".
  it("sends array parameters element for element", async () => {
    const texts = ["plain", 'a "quoted" one', "back\\slash", "a,b", "{braces}", "", "NULL", null, "déjà vu", "x".repeat(500)];
    const elements = await database.admin<{ v: string | null; missing: boolean }[]>`
      select u.v, u.v is null as missing from unnest(${texts}::text[]) with ordinality as u(v, n) order by u.n`;
    expect(elements.map((e) => e.v)).toEqual(texts);
    expect(elements.map((e) => e.missing)).toEqual(texts.map((t) => t === null));
    const [row] = await database.admin<{ numbers: boolean; nested: boolean; empty: boolean }[]>`
      select ${[3, -1, 0]}::int4[] = array[3, -1, 0] as numbers, ${[[1, 2], [3, 4]]}::int4[] = array[[1, 2], [3, 4]] as nested,
        cardinality(${[] as string[]}::text[]) = 0 as empty`;
    expect(row).toEqual({ numbers: true, nested: true, empty: true });
  });

  // The patch cuts a row's short ASCII values out of one latin1 string of the row (src/connection.js, DataRow): any
  // other value, wherever it sits in the row, must still read as the UTF-8 text PostgreSQL sent; so must long values,
  // short non-ASCII ones, the values of rows too long to be copied whole, and arrays (whose parser gets the text
  // after its brace).
  it("reads every value as the UTF-8 text PostgreSQL sent, next to short ASCII values cut from the row's text", async () => {
    const accented = "déjà vu";
    const shortUnicode = "€1";
    const emoji = "wallet 💎 ₮ 漢字";
    const longAscii = "A".repeat(511) + "Z";
    const longUnicode = "é".repeat(300);
    const huge = `${"B".repeat(20_000)}ü`;
    const statement = (sql: typeof database.admin) => sql`
      select 'EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N'::text as address, ${accented}::text as accented, ${shortUnicode}::text as short_unicode,
        12345678901234::int8 as lt, ${emoji}::varchar as emoji, ''::text as empty, null::text as nothing,
        ${longAscii}::text as long_ascii, ${longUnicode}::text as long_unicode, 'pad'::char(5) as padded,
        array[${accented}::text, 'plain', ${emoji}::text] as words, '{1,2,3}'::int4[] as numbers, ${sql.json({ name: emoji })}::jsonb as doc,
        '\\x00ff'::bytea as raw, 42 as answer`;
    const expectedRow = {
      address: "EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N",
      accented,
      short_unicode: shortUnicode,
      lt: "12345678901234",
      emoji,
      empty: "",
      nothing: null,
      long_ascii: longAscii,
      long_unicode: longUnicode,
      padded: "pad  ",
      words: [accented, "plain", emoji],
      numbers: [1, 2, 3],
      doc: { name: emoji },
      raw: Buffer.from([0, 255]),
      answer: 42,
    };
    const [direct] = await statement(database.admin);
    expect(direct).toEqual(expectedRow);
    const [read] = await runQuery(AbortSignal.timeout(10_000), database.reader, "driver_test_text", (tx) => statement(tx));
    expect(read).toEqual(expectedRow);
    // A row over the size the patch copies whole: its values are decoded one by one.
    const [long] = await database.admin`select ${huge}::text as huge, ${accented}::text as accented, 'ascii' as ascii`;
    expect(long).toEqual({ huge, accented, ascii: "ascii" });
  });

  // The patch reads bools and integers (int2, int4, oid) from the row's bytes instead of parsing a string cut for
  // each (src/connection.js, columnKinds): the values must be what the driver's parsers give, at the types' extremes,
  // between text values and NULLs; other numbers (float8, int8, numeric) keep their parsers, and so does a type the
  // application parses itself.
  it("reads bools and integers from the row's bytes as the driver's parsers would", async () => {
    const statement = (sql: typeof database.admin) => sql`
      select true as yes, false as no, null::bool as unknown, 0::int2 as zero, (-32768)::int2 as int2_min, 32767::int2 as int2_max,
        'déjà vu'::text as between, (-2147483648)::int4 as int4_min, 2147483647 as int4_max, -7 as negative, null::int4 as missing,
        4294967295::oid as oid_max, 1.5::float8 as half, (-9007199254740993)::int8 as big, 12.50::numeric as price, 'short' as word,
        i as position, i % 2 = 0 as even
      from generate_series(1, 2) as i order by i`;
    const expected = [
      { yes: true, no: false, unknown: null, zero: 0, int2_min: -32768, int2_max: 32767, between: "déjà vu", int4_min: -2147483648,
        int4_max: 2147483647, negative: -7, missing: null, oid_max: 4294967295, half: 1.5, big: "-9007199254740993", price: "12.50",
        word: "short", position: 1, even: false },
    ];
    expected.push({ ...(expected[0] as (typeof expected)[0]), position: 2, even: true });
    expect([...(await statement(database.admin))]).toEqual(expected);
    expect([...(await runQuery(AbortSignal.timeout(10_000), database.reader, "driver_test_kinds", (tx) => statement(tx)))]).toEqual(expected);
    const ownParsers = postgres(database.url, {
      max: 1,
      types: { yesNo: { to: 16, from: [16], serialize: (x: boolean) => (x ? "t" : "f"), parse: (x: string) => (x === "t" ? "yes" : "no") } },
    });
    try {
      expect([...(await ownParsers`select true as yes, false as no, 5 as five`)]).toEqual([{ yes: "yes", no: "no", five: 5 }]);
    } finally {
      await ownParsers.end();
    }
  });

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

  it("hands a connection to a reserve that was waiting when the connection it waited for closed", async (context) => {
    if (database.engine === "pglite") context.skip(); // one backend: no pg_terminate_backend
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const first = await sql.reserve();
      const [session] = await first<{ pid: number }[]>`select pg_backend_pid() as pid`;
      // The pool's one connection is taken: this reserve waits in the queue.
      const waiting = sql.reserve();
      await database.admin`select pg_terminate_backend(${session?.pid ?? 0})`;
      // 3.4.9 gave the waiting reserve to the reconnect as its first query and dropped it there: never settled.
      const second = await Promise.race([waiting, new Promise<"stranded">((resolve) => setTimeout(() => resolve("stranded"), 5000))]);
      expect(second).not.toBe("stranded");
      if (second === "stranded") return;
      // The lease of the closed connection is over: releasing it now must not hand out the connection `second` holds.
      first.release();
      const [mine] = await second<{ pid: number }[]>`select pg_backend_pid() as pid`;
      expect(mine?.pid).not.toBe(session?.pid);
      // The pool's one connection is still `second`'s: a statement of the pool waits for its release.
      const other = sql<{ pid: number }[]>`select pg_backend_pid() as pid`.execute();
      second.release();
      const [after] = await other;
      expect(after?.pid).toBe(mine?.pid);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it("fails a query sent on a lease whose connection closed and went to another reserve, never running it in that session", async (context) => {
    if (database.engine === "pglite") context.skip(); // one backend: no pg_terminate_backend
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const first = await sql.reserve();
      const [session] = await first<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const waiting = sql.reserve();
      await database.admin`select pg_terminate_backend(${session?.pid ?? 0})`;
      const second = await waiting;
      const [theirs] = await second<{ pid: number }[]>`select pg_backend_pid() as pid`;
      // The stale lease's query: without the patch it ran on the reconnected connection, inside second's session.
      const stale = await first<{ pid: number }[]>`select pg_backend_pid() as pid`.then(
        (rows) => `answered by ${rows[0]?.pid === theirs?.pid ? "the other holder's session" : "another session"}`,
        (err: { code?: string }) => err.code,
      );
      expect(stale).toBe("CONNECTION_CLOSED");
      second.release();
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it.runIf(process.env.TEST_DATABASE !== "pglite")("cuts a reserved connection that stopped answering: what it owes fails at once, the pool reconnects", async () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const reserved = await sql.reserve();
      const silent = reserved`select pg_sleep(30)`.then(
        () => "answered",
        (err: { code?: string }) => err.code,
      );
      const queued = reserved`select 1 as one`.then(
        () => "answered",
        (err: { code?: string }) => err.code,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      reserved.destroy();
      expect(await silent).toBe("CONNECTION_DESTROYED");
      expect(await queued).toBe("CONNECTION_DESTROYED");
      // Released after being cut, the connection is not handed out before it has reconnected.
      reserved.release();
      const [{ answer }] = (await sql`select 42 as answer`) as unknown as [{ answer: number }];
      expect(answer).toBe(42);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  it.runIf(process.env.TEST_DATABASE !== "pglite")("reconnects a reserved connection released after its server went away", async () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      for (let round = 0; round < 5; round++) {
        const reserved = await sql.reserve();
        const [session] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`;
        await database.admin`select pg_terminate_backend(${session?.pid ?? 0})`;
        const lost = await reserved`select 1 as one`.then(
          () => "answered",
          (err: { code?: string }) => err.code,
        );
        expect(["CONNECTION_CLOSED", "ECONNRESET", "57P01"]).toContain(lost);
        reserved.release();
        // Released between the socket's error and its close event, the connection may be handed out once more: that
        // statement fails at once (3.4.9 left it unanswered). Then the pool reconnects.
        const next = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`.then(
          (rows) => rows,
          (err: { code?: string }) => err.code ?? "no code",
        );
        const [fresh] = typeof next === "string" ? await sql<{ pid: number }[]>`select pg_backend_pid() as pid` : next;
        if (typeof next === "string") expect(next).toBe("CONNECTION_CLOSED");
        expect(fresh?.pid).not.toBe(session?.pid);
      }
    } finally {
      await sql.end();
    }
  });

  // The driver's first statement on a new connection is its own lookup of the array types. 3.4.9 dropped that
  // statement's promise (porsager/postgres#1192, #1205, #1223): when the lookup failed (the connection destroyed by
  // end's timeout, a cancellation, a terminated backend) the rejection reached no one, and Node ends a process on an
  // unhandled rejection. The patch lets the connection's own error handling speak for it.
  // A statement not yet prepared on its connection (every statement of the custom-plan pool, and a prepared one's
  // first run) was sent as Parse, Describe and Flush, and its Bind only once the server had described its
  // parameters: a round trip and a write more per statement (five of each on a 100-trace page), and the commit
  // queued behind it in another write. The patch sends it whole when its values need no server type (strings,
  // numbers, flat arrays of them), and writes its arrays as the array literals the server's types would have given.
  it("sends a statement whose values need no server type in one go, without waiting for its description", async () => {
    const relay = await startRecordingRelay(database.url);
    const words = ["plain", 'quo"te', "back\\slash", "com,ma", "{brace}", "", "NULL", "déjà 💎"];
    const statement = (sql: postgres.Sql) => sql<{ words: string[]; numbers: number[]; n: string; word: string; empty: number; hole: boolean }[]>`
      select ${words}::text[] as words, ${[3, 1, 2]}::int4[] as numbers, (${41} + 1)::int8::text as n, ${"mot"}::text as word,
        cardinality(${[] as string[]}::text[]) as empty, (${["a", null]}::text[])[2] is null as hole`;
    const expected = { words, numbers: [3, 1, 2], n: "42", word: "mot", empty: 0, hole: true };
    try {
      for (const prepare of [false, true]) {
        const sql = postgres(relay.url, { max: 1, prepare, onnotice: () => {} });
        try {
          relay.sent.length = 0;
          // Twice: the second run of a prepared statement binds with the types its first run was described with.
          for (let run = 0; run < 2; run++) expect([...(await statement(sql))]).toEqual([expected]);
          const messages = relay.sent.join(" ");
          expect(messages).not.toContain("H");
          expect(messages).toMatch(prepare ? /^P D B E S B E S$/ : /^P D B E S P D B E S$/);
        } finally {
          await sql.end();
        }
      }
    } finally {
      await relay.close();
    }
  });

  // The patched driver reads a data row where it lies in the socket's read and carries an unfinished message over to
  // the next read: every cut of the server's bytes must give the same rows.
  it("reads the same rows whatever way the server's bytes are cut into reads", async () => {
    const relay = await startRelay(database.url, (client, upstream) => {
      client.pipe(upstream);
      client.setNoDelay(true);
      let queue = Promise.resolve();
      let cut = 0;
      upstream.on("data", (chunk: Buffer) => {
        queue = queue.then(async () => {
          for (let at = 0; at < chunk.length; ) {
            // 1 to 23 bytes: inside a message's type, its length, a value's length, a value; every fifth read
            // 700 to 2,200 bytes: the end of a cut message, whole messages, and the start of the next one.
            const size = cut % 5 === 4 ? 700 + ((cut * 131) % 1500) : 1 + ((cut * 7) % 23);
            cut++;
            client.write(chunk.subarray(at, at + size));
            at += size;
            await new Promise((resolve) => setImmediate(resolve));
          }
        });
      });
    });
    const statement = (sql: postgres.Sql) => sql`
      select i, repeat(chr(65 + i % 26), i * 7) as long, case when i % 3 = 0 then null else 'é' || i end as short, i % 2 = 0 as even
      from generate_series(1, 60) as i order by i`;
    const expected = [...(await statement(database.admin))];
    const sql = postgres(relay.url, { max: 1, onnotice: () => {} });
    try {
      expect([...(await statement(sql))]).toEqual(expected);
      // A second time prepared, its rows read by the service's shapers' path (values()).
      expect([...(await statement(sql).values())]).toEqual(expected.map((row) => Object.values(row)));
    } finally {
      await sql.end();
      await relay.close();
    }
  });

  it("ends a pool whose new connection's type lookup never answers without an unhandled rejection", async () => {
    const relay = await startRelayDeafAfterStartUp(database.url);
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      const sql = postgres(relay.url, { max: 1, onnotice: () => {} });
      const query = sql`select 1 as one`.then(() => "answered", (err: { code?: string }) => err.code ?? "no code");
      await relay.deaf;
      await sql.end({ timeout: 0.2 });
      expect(await query).toBe("CONNECTION_DESTROYED");
      // An unhandled rejection is reported after the microtasks of the turn it happened in.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
      await relay.close();
    }
  });
});

/** A relay to the database on a port of its own: `wire` joins each client's socket to its own connection upstream. */
async function startRelay(databaseUrl: string, wire: (client: net.Socket, upstream: net.Socket) => void) {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.once("close", () => (client.destroy(), upstream.destroy()));
    }
    wire(client, upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A relay to the database that passes the start-up through (up to the server's first ReadyForQuery) and then lets
 * nothing more come back, as a server that stops answering right after accepting a connection.
 */
async function startRelayDeafAfterStartUp(databaseUrl: string) {
  let becameDeaf: () => void = () => {};
  const deaf = new Promise<void>((resolve) => (becameDeaf = resolve));
  const relay = await startRelay(databaseUrl, (client, upstream) => {
    client.pipe(upstream);
    let pending = Buffer.alloc(0);
    let listening = true;
    upstream.on("data", (chunk: Buffer) => {
      if (!listening) return;
      pending = Buffer.concat([pending, chunk]);
      // Backend messages: a type byte, then a length that counts itself and the body.
      let end = 0;
      while (pending.length >= end + 5) {
        const size = 1 + pending.readUInt32BE(end + 1);
        if (pending.length < end + size) break;
        const type = String.fromCharCode(pending[end] as number);
        end += size;
        if (type === "Z") {
          listening = false;
          break;
        }
      }
      client.write(pending.subarray(0, end));
      pending = pending.subarray(end);
      if (!listening) becameDeaf();
    });
  });
  return { ...relay, deaf };
}

/**
 * A relay to the database that records, in `sent`, the type of each frontend message its connections send after
 * their start-up: the start-up message, password answers and the driver's type lookup (its first simple query) are
 * left out, and so is the goodbye.
 */
async function startRecordingRelay(databaseUrl: string) {
  const sent: string[] = [];
  const relay = await startRelay(databaseUrl, (client, upstream) => {
    upstream.pipe(client);
    // The start-up message has no type byte; every message after it has one, then a length that counts itself.
    let pending = Buffer.alloc(0);
    let startedUp = false;
    let typeLookupSeen = false;
    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      if (!startedUp) {
        if (pending.length < 4) return;
        const size = pending.readUInt32BE(0);
        if (pending.length < size) return;
        pending = pending.subarray(size);
        startedUp = true;
      }
      while (pending.length >= 5) {
        const size = 1 + pending.readUInt32BE(1);
        if (pending.length < size) break;
        const type = String.fromCharCode(pending[0] as number);
        pending = pending.subarray(size);
        if (type === "p") continue;
        if (type === "Q" && !typeLookupSeen) {
          typeLookupSeen = true;
          continue;
        }
        if (type !== "X") sent.push(type);
      }
    });
  });
  return { ...relay, sent };
}
