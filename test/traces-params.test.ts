import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

// Every parameter of /api/v3/traces and every way to get one wrong. The data is irrelevant here: an empty index.

const hash = "ab".repeat(32);
let db: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

const decodeError = (what: string) => `failed to decode: schema: error converting value for ${what}`;

describe("GET /api/v3/traces rejects bad input with 422", () => {
  it.each([
    ["account=nope", decodeError('"account"')],
    ["account=0:1234", decodeError('"account"')],
    [`trace_id=${hash}&trace_id=bad`, decodeError('index 1 of "trace_id"')],
    ["tx_hash=bad", decodeError('index 0 of "tx_hash"')],
    [`msg_hash=${hash},bad`, decodeError('index 0 of "msg_hash"')],
    ["mc_seqno=abc", decodeError('"mc_seqno"')],
    ["mc_seqno=99999999999", decodeError('"mc_seqno"')],
    ["start_utime=-1", decodeError('"start_utime"')],
    ["end_utime=soon", decodeError('"end_utime"')],
    ["start_lt=-5", decodeError('"start_lt"')],
    ["end_lt=1e5", decodeError('"end_lt"')],
    ["include_actions=yes", decodeError('"include_actions"')],
    ["limit=ten", decodeError('"limit"')],
    ["limit=0", "limit is not allowed: 0 < 1"],
    ["limit=-3", "limit is not allowed: -3 < 1"],
    ["limit=1001", "limit is not allowed: 1001 > 1000"],
    ["offset=-1", "offset is not allowed: -1 < 0"],
    ["sort=sideways", "wrong value for sort parameter"],
    [`account=${encodeURIComponent("0:" + "AB".repeat(32))}&tx_hash=${hash}`, "only one of account, trace_id, tx_hash, msg_hash should be specified"],
    [`trace_id=${hash}&msg_hash=${hash}`, "only one of account, trace_id, tx_hash, msg_hash should be specified"],
  ])("?%s", async (query, error) => {
    expect(await server.rest(`/api/v3/traces?${query}`)).toMatchObject({ status: 422, body: { error } });
  });

  it("answers 404 for an unknown masterchain block", async () => {
    expect(await server.rest("/api/v3/traces?mc_seqno=123")).toMatchObject({ status: 404, body: { error: "masterchain block 123 not found" } });
  });
});

describe("GET /api/v3/traces accepts toncenter's forms", () => {
  it.each([
    "",
    `trace_id=${hash}&trace_id=0x${hash}`,
    `tx_hash=${hash},${hash}`,
    `msg_hash=${Buffer.from(hash, "hex").toString("base64url")}`,
    `account=${encodeURIComponent("0:" + "ab".repeat(32))}`,
    "start_utime=1700000000.75&end_utime=1800000000",
    "start_lt=1&end_lt=18446744073709551615",
    "include_actions=true&supported_action_types=v2&supported_action_types=jettons",
    "limit=1000&offset=20&sort=ASC",
    "sort=d",
    "limit=&offset=&sort=",
    "unknown_parameter=1",
  ])("?%s → 200 with an empty page", async (query) => {
    expect(await server.rest(`/api/v3/traces?${query}`)).toMatchObject({ status: 200, body: { traces: [], address_book: {}, metadata: {} } });
  });
});

describe("the typed API validates the same way", () => {
  it.each(rpcProtocols)("over %s", async (protocol) => {
    const client = server.client(protocol);
    const cases: [Parameters<typeof client.getTraces>[0], Code, string][] = [
      [{ txHash: ["bad"] }, Code.InvalidArgument, decodeError('index 0 of "tx_hash"')],
      [{ account: "x" }, Code.InvalidArgument, decodeError('"account"')],
      [{ limit: 5000 }, Code.InvalidArgument, "limit is not allowed: 5000 > 1000"],
      [{ traceId: [hash], txHash: [hash] }, Code.InvalidArgument, "only one of account, trace_id, tx_hash, msg_hash should be specified"],
      [{ mcSeqno: 7 }, Code.NotFound, "masterchain block 7 not found"],
    ];
    for (const [request, code, message] of cases) {
      const failure = await client.getTraces(request).catch((err: unknown) => err);
      expect(failure, JSON.stringify(request)).toBeInstanceOf(ConnectError);
      expect([(failure as ConnectError).code, (failure as ConnectError).rawMessage]).toEqual([code, message]);
    }
    expect((await client.getTraces({})).traces).toEqual([]);
  });
});
