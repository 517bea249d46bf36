import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Direction } from "../gen/tonquery/v1/service_pb.ts";
import { readRecording } from "../src/demo/dataset.ts";
import { selectTransactionsByHash } from "../src/db/transactions.ts";
import { pageBodyDecoding } from "../src/decoding/page-bodies.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedTransactionsResponse } from "../src/recordings/recorded.ts";
import { presentTransaction } from "../src/present/v3/transaction.ts";
import { conformAddressBookRow, conformTransaction } from "./support/conformance.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { readTransactionRecordings, type TransactionRecordings } from "./support/recordings.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

/** A presented transaction as a client reads it: pre-printed parts (decoded bodies) as their JSON values. */
const presentedJson = (tx: Parameters<typeof presentTransaction>[0]) => JSON.parse(JSON.stringify(presentTransaction(tx))) as Json;

type Json = Record<string, unknown>;

let db: TestDatabase;
let recordings: TransactionRecordings;
let server: TestServer;

beforeAll(async () => {
  recordings = await readTransactionRecordings();
  db = await createTestDatabase();
  await recordings.load(new IndexLoader()).write(db.admin);
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

describe("every recorded Transaction object", () => {
  it("comes out of the presenter as recorded, within the exception list", async () => {
    const hashes = [...recordings.transactions.keys()];
    const loaded = await selectTransactionsByHash(db.reader, new AbortController().signal, hashes, pageBodyDecoding({ decodeBodies: true, decodedBodyCache: 0 }));
    expect(loaded).toHaveLength(hashes.length);
    for (const tx of loaded) {
      const { file, tx: recorded } = recordings.transactions.get(tx.hash) as unknown as { file: string; tx: Json };
      const ours = conformTransaction(presentedJson(tx), recorded as unknown as Json);
      expect({ file, tx: ours }).toEqual({ file, tx: recorded });
    }
  });
});

/** Recorded parent → child pairs of the traces: each child's in_msg is one of the parent's out_msgs. */
function recordedFamilies() {
  const families: { parent: string; children: Json[]; addressBook: Record<string, Json>; file: string }[] = [];
  for (const { file, trace, addressBook } of recordings.traces) {
    const txs = Object.values(trace.transactions ?? {}) as unknown as Json[];
    for (const parent of txs) {
      const outHashes = new Set((parent.out_msgs as Json[]).map((m) => m.hash));
      const children = txs.filter((tx) => tx.in_msg !== null && outHashes.has((tx.in_msg as Json).hash));
      if (children.length > 0) families.push({ parent: parent.hash as string, children, addressBook, file });
    }
  }
  return families;
}

describe("GET /api/v3/adjacentTransactions on the recorded traces", () => {
  it("returns each recorded parent's children, ordered by lt, with their address_book", async () => {
    const families = recordedFamilies();
    expect(families.length).toBeGreaterThan(100);
    for (const { parent, children, addressBook, file } of families) {
      const { status, body } = await server.rest(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(parent)}&direction=out`);
      expect(status).toBe(200);
      const response = body as { transactions: Json[]; address_book: Record<string, Json> };
      const expected = [...children].sort((a, b) => (BigInt(a.lt as string) < BigInt(b.lt as string) ? -1 : 1));
      const ours = response.transactions.map((tx, i) => conformTransaction(tx, expected[i] ?? {}));
      expect({ file, parent, transactions: ours }).toEqual({ file, parent, transactions: expected });
      for (const [address, row] of Object.entries(response.address_book)) {
        const recorded = addressBook[address];
        if (recorded !== undefined) {
          const conformed = conformAddressBookRow(row, recorded, recordings.accountsWithState.has(address));
          expect({ file, address, row: conformed }).toEqual({ file, address, row: recorded });
        }
      }
    }
  });

  it("decodes message bodies, in REST and in the typed API's DecodedContent, unless DECODE_BODIES=false", async () => {
    const usdtTransfer = "3a75b3b25f5ee2741977a8820b2e87a058fe82b5f645c1faf0ca0d5b80efe49c";
    const path = `/api/v3/adjacentTransactions?hash=${usdtTransfer}&direction=out`;
    type Decoded = { transactions: { in_msg: { decoded_opcode: string | null; message_content: { decoded: Json | null } } }[] };
    const decoded = (await server.rest(path)).body as Decoded;
    const inMsg = decoded.transactions[0]?.in_msg;
    expect(inMsg?.decoded_opcode).toBe("jetton_transfer");
    expect(inMsg?.message_content.decoded).toMatchObject({ "@type": "jetton_transfer", forward_payload: { "@type": "first_from_either" } });

    const typed = await server.client("grpc").getAdjacentTransactions({ hash: usdtTransfer, direction: Direction.OUT });
    const content = typed.transactions[0]?.inMsg?.messageContent?.decoded;
    expect(content?.type).toBe("jetton_transfer");
    expect(content?.data).toEqual(inMsg?.message_content.decoded);
    expect(typed.transactions[0]?.inMsg?.decodedOpcode).toBe("jetton_transfer");

    const plain = await startTestServer(db.url, { DECODE_BODIES: "false" });
    try {
      const undecoded = (await plain.rest(path)).body as Decoded;
      for (const tx of undecoded.transactions) {
        expect(tx.in_msg.decoded_opcode).toBeNull();
        expect(tx.in_msg.message_content.decoded).toBeNull();
      }
    } finally {
      await plain.close();
    }
  });

  it("returns the parent of a child with direction=in, and both with no direction", async () => {
    const [family] = recordedFamilies();
    const child = family?.children[0] as Json;
    const parentOnly = await server.rest(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(child.hash as string)}&direction=in`);
    expect((parentOnly.body as { transactions: Json[] }).transactions.map((t) => t.hash)).toEqual([family?.parent]);
    const hashesOf = async (query: string) => {
      const { body } = await server.rest(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(child.hash as string)}${query}`);
      return ((body as { transactions?: Json[] }).transactions ?? []).map((t) => t.hash as string);
    };
    const both = await hashesOf("");
    expect(await hashesOf("&direction=both")).toEqual(both);
    expect(new Set(both)).toEqual(new Set([...(await hashesOf("&direction=in")), ...(await hashesOf("&direction=out"))]));
  });
});

describe("the typed API", () => {
  it.each(rpcProtocols)("returns the same transactions and address_book over %s", async (protocol) => {
    const [family] = recordedFamilies();
    const parent = family?.parent as string;
    const rest = (await server.rest(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(parent)}&direction=out`)).body as {
      transactions: Json[];
      address_book: Record<string, Json>;
    };
    const response = await server.client(protocol).getAdjacentTransactions({ hash: parent, direction: Direction.OUT });
    expect(response.transactions.map(presentedJson)).toEqual(rest.transactions);
    expect(Object.keys(response.addressBook).sort()).toEqual(Object.keys(rest.address_book).sort());
    for (const [address, row] of Object.entries(response.addressBook)) expect(row.userFriendly).toBe(rest.address_book[address]?.user_friendly);
  });

  it("accepts the hash in hex and base64url too", async () => {
    const [family] = recordedFamilies();
    const parent = family?.parent as string;
    const hex = Buffer.from(parent, "base64").toString("hex");
    const url = parent.replace(/\+/g, "-").replace(/\//g, "_");
    for (const hash of [hex, `0x${hex}`, url]) {
      const response = await server.client("grpc").getAdjacentTransactions({ hash, direction: Direction.OUT });
      expect(response.transactions.length).toBe(family?.children.length);
    }
  });
});

describe("bad input and misses", () => {
  it.each([
    ["?hash=nothex", 'failed to decode: schema: error converting value for "hash"'],
    ["?hash=", "hash is required: a transaction hash in hex, base64 or base64url"],
    ["", "hash is required: a transaction hash in hex, base64 or base64url"],
    [`?hash=${"ab".repeat(32)}&direction=sideways`, 'wrong value for direction parameter: "sideways"; use in, out or both'],
  ])("GET %s → 422", async (query, error) => {
    expect(await server.rest(`/api/v3/adjacentTransactions${query}`)).toMatchObject({ status: 422, body: { error } });
  });

  it("answers an unknown transaction with toncenter's 404", async () => {
    expect(await server.rest(`/api/v3/adjacentTransactions?hash=${"ab".repeat(32)}`)).toMatchObject({
      status: 404,
      body: { error: "adjacent transactions not found" },
    });
  });

  it.each(rpcProtocols)("maps the same cases to InvalidArgument and NotFound over %s", async (protocol) => {
    const client = server.client(protocol);
    const bad = await client.getAdjacentTransactions({ hash: "nothex" }).catch((err: unknown) => err);
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    expect((bad as ConnectError).rawMessage).toBe('failed to decode: schema: error converting value for "hash"');
    const missing = await client.getAdjacentTransactions({ hash: "ab".repeat(32) }).catch((err: unknown) => err);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
  });
});

describe("the recorded adjacentTransactions response (testnet)", () => {
  const file = "adjacentTransactions_testnet_wallet_comment_1.json";
  let testnet: TestServer;
  beforeAll(async () => {
    testnet = await startTestServer(db.url, { TESTNET: "true" });
  });
  afterAll(async () => {
    await testnet?.close();
  });

  it("is reproduced by asking for the parent of the transaction that received its message", async () => {
    const recording = await readRecording<RecordedTransactionsResponse>(file);
    const [recordedTx] = recording.transactions;
    const sent = recordedTx?.out_msgs[0];
    if (recordedTx === undefined || sent === undefined) throw new Error(`${file} changed`);
    // The request was made for the receiving transaction, which the recording does not contain: index a
    // stand-in that received the recorded out message, as the worker would have indexed the real one.
    const standIn = "c3RhbmQtaW4gZm9yIHRoZSByZWNlaXZpbmcgdHgrKys=";
    await db.admin`insert into transactions (account, hash, lt, now) values (${sent.destination}, ${standIn}, 24264044000002, ${recordedTx.now})`;
    await db.admin`
      insert into messages (tx_hash, tx_lt, msg_hash, direction, source, destination)
      values (${standIn}, 24264044000002, ${sent.hash}, 'in', ${sent.source}, ${sent.destination})`;

    const { status, body } = await testnet.rest(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(standIn)}&direction=in`);
    expect(status).toBe(200);
    const response = body as { transactions: Json[]; address_book: Record<string, Json> };
    const recorded = recording as unknown as { transactions: Json[]; address_book: Record<string, Json> };
    expect(response.transactions.map((tx, i) => conformTransaction(tx, recorded.transactions[i] ?? {}))).toEqual(recorded.transactions);
    const book = Object.fromEntries(
      Object.entries(response.address_book).map(([a, row]) => [
        a,
        conformAddressBookRow(row, recorded.address_book[a] ?? {}, recordings.accountsWithState.has(a)),
      ]),
    );
    expect(book).toEqual(recorded.address_book);
  });
});
