import { toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetTracesResponseSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { readRecording } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedTrace } from "../src/recordings/recorded.ts";
import { conformAddressBookRow, conformMetadata, conformTrace } from "./support/conformance.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { readTransactionRecordings, type TransactionRecordings } from "./support/recordings.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

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

/** The hash a client finds a recorded trace by: the normalised external message hash, as the wallets did. */
function externalMessageHash(trace: RecordedTrace): string {
  const root = Object.values(trace.transactions ?? {}).find((tx) => tx.in_msg?.hash === trace.external_hash);
  return root?.in_msg?.hash_norm ?? trace.external_hash ?? "";
}

function conformResponse(ours: Json, recorded: { traces: Json[]; address_book: Record<string, Json>; metadata: Record<string, Json> }) {
  const traces = (ours.traces as Json[]).map((trace, i) => conformTrace(trace, recorded.traces[i] ?? {}));
  const book = Object.fromEntries(
    Object.entries(ours.address_book as Record<string, Json>).map(([a, row]) => [
      a,
      conformAddressBookRow(row, recorded.address_book[a] ?? {}, recordings.accountsWithState.has(a)),
    ]),
  );
  const metadata = Object.fromEntries(
    Object.entries(ours.metadata as Record<string, Json>).map(([a, entry]) => [a, conformMetadata(entry, recorded.metadata[a] ?? {})]),
  );
  return { traces, address_book: book, metadata };
}

describe("each recorded /api/v3/traces response", () => {
  const responses = () => recordings.traces.filter(({ file }) => !file.startsWith("traces_array_"));

  it("is reproduced by asking for its trace by message hash", async () => {
    expect(responses().length).toBe(30);
    for (const { file, trace, addressBook, metadata } of responses()) {
      const includeActions = "actions" in trace;
      const query = `msg_hash=${encodeURIComponent(externalMessageHash(trace))}&include_actions=${includeActions}`;
      const { status, body } = await server.rest(`/api/v3/traces?${query}`);
      expect(status, file).toBe(200);
      const recorded = { traces: [trace as unknown as Json], address_book: addressBook, metadata };
      expect({ file, ...conformResponse(body as Json, recorded) }).toEqual({ file, ...recorded });
    }
  });

  it("is found by trace id, by transaction hash and by account too", async () => {
    for (const { file, trace } of responses()) {
      const byId = await server.rest(`/api/v3/traces?trace_id=${encodeURIComponent(trace.trace_id)}`);
      const [anyTx] = Object.keys(trace.transactions ?? {});
      const byTx = await server.rest(`/api/v3/traces?tx_hash=${encodeURIComponent(anyTx ?? "")}`);
      const account = trace.transactions?.[anyTx ?? ""]?.account ?? "";
      const byAccount = await server.rest(`/api/v3/traces?account=${encodeURIComponent(account)}&limit=1000`);
      const ids = (r: { body: unknown }) => ((r.body as { traces: Json[] }).traces ?? []).map((t) => t.trace_id);
      expect({ file, byId: ids(byId), byTx: ids(byTx) }).toEqual({ file, byId: [trace.trace_id], byTx: [trace.trace_id] });
      expect(ids(byAccount), file).toContain(trace.trace_id);
    }
  });
});

describe("actions", () => {
  it("are limited to the supported types the client names, shortcuts expanded", async () => {
    const { trace } = recordings.traces.find(({ trace }) => (trace.actions ?? []).some((a) => a.type === "jetton_transfer")) as {
      trace: RecordedTrace;
    };
    const query = (types: string) => `/api/v3/traces?trace_id=${encodeURIComponent(trace.trace_id)}&include_actions=true${types}`;
    const typesOf = async (types: string) =>
      (((await server.rest(query(types))).body as { traces: Json[] }).traces[0]?.actions as Json[]).map((a) => a.type);
    expect((await typesOf("")).sort()).toEqual((trace.actions ?? []).map((a) => a.type).sort());
    // v1 is always added, so a literal type alone still gets the v1 set; a v2-only type is dropped unless asked for.
    expect(await typesOf("&supported_action_types=jetton_transfer")).toEqual(expect.arrayContaining(["jetton_transfer"]));
    expect(await typesOf("&supported_action_types=v1")).not.toContain("coffee_mev_protect_hold_funds");
  });

  it("are left out without include_actions", async () => {
    const { trace } = recordings.traces[0] as { trace: RecordedTrace };
    const { body } = await server.rest(`/api/v3/traces?trace_id=${encodeURIComponent(trace.trace_id)}`);
    expect((body as { traces: Json[] }).traces[0]).not.toHaveProperty("actions");
  });
});

describe("the recorded traces of masterchain block 35120456", () => {
  it("are reproduced by mc_seqno, oldest first", async () => {
    const recorded = await readRecording<Json[]>("traces_array_mainnet_mc35120456_blockcacher_sortedkeys.json");
    const { status, body } = await server.rest("/api/v3/traces?mc_seqno=35120456&include_actions=true&sort=asc&limit=100");
    expect(status).toBe(200);
    const ours = (body as { traces: Json[] }).traces;
    expect(ours.map((t) => t.trace_id)).toEqual(recorded.map((t) => t.trace_id));
    expect(ours.map((t, i) => conformTrace(t, recorded[i] ?? {}))).toEqual(recorded);
  });
});

describe("the typed API", () => {
  it("answers a whole page identically over every protocol and codec, binary ones encoded trace by trace", async () => {
    const request = { traceId: recordings.traces.map(({ trace }) => trace.trace_id), includeActions: true, limit: 50 };
    const binaryConnect = createClient(TonQueryService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: true }));
    const answers = [
      ...(await Promise.all(rpcProtocols.map((protocol) => server.client(protocol).getTraces(request)))),
      await binaryConnect.getTraces(request),
    ].map((response) => toJson(GetTracesResponseSchema, response));
    expect(((answers[0] as { traces: unknown[] }).traces).length).toBe(Math.min(50, recordings.traces.length));
    for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
  });

  it.each(rpcProtocols)("returns the same traces over %s, with the tree as a flat node list", async (protocol) => {
    const { trace } = recordings.traces[0] as { trace: RecordedTrace };
    const response = await server.client(protocol).getTraces({ traceId: [trace.trace_id], includeActions: true });
    const [ours] = response.traces;
    expect(ours?.traceId).toBe(trace.trace_id);
    expect(ours?.transactions.map((tx) => tx.hash)).toEqual(trace.transactions_order);
    expect(ours?.nodes[0]?.transactionHash).toBe(trace.trace_id);
    expect(ours?.nodes.length).toBe(trace.transactions_order?.length);
    expect(ours?.actions.length).toBe(trace.actions?.length);
  });
});
