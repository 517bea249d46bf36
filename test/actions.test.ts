import { readdir } from "node:fs/promises";
import { beginCell } from "@ton/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TraceAction } from "../gen/tonquery/v1/trace_pb.ts";
import { actionAddresses, presentAction } from "../src/actions/present.ts";
import { rawActionFields } from "../src/actions/raw.ts";
import { actionTypeShortcuts, expandActionTypes } from "../src/actions/types.ts";
import { traceActions } from "../src/actions/trace-action.ts";
import { selectTraceActionRows } from "../src/db/actions.ts";
import { readRecording, recordingsDir } from "../src/demo/dataset.ts";
import {
  type ActionRow,
  actionRowsFromRecording,
  type RecordedActionLike,
  type RecordedTraceLike,
  writeActionRows,
} from "../src/recordings/action-rows.ts";
import { conformAction } from "./support/conformance.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

type Json = Record<string, unknown>;

interface RecordedTraceWithActions extends RecordedTraceLike {
  actions?: (RecordedActionLike & Json)[];
}

interface Recording {
  file: string;
  traces: RecordedTraceWithActions[];
  addressBook: Json | undefined;
}

let db: TestDatabase;
let recordings: Recording[];
const signal = new AbortController().signal;
const latest = expandActionTypes([]);

async function readTraceRecordings(): Promise<Recording[]> {
  const names = (await readdir(recordingsDir)).filter((n) => n.startsWith("traces_") && n.endsWith(".json")).sort();
  const out: Recording[] = [];
  for (const file of names) {
    const recording = await readRecording<{ traces: RecordedTraceWithActions[]; address_book?: Json } | RecordedTraceWithActions[]>(file);
    out.push(
      Array.isArray(recording)
        ? { file, traces: recording, addressBook: undefined }
        : { file, traces: recording.traces, addressBook: recording.address_book },
    );
  }
  return out;
}

beforeAll(async () => {
  recordings = await readTraceRecordings();
  db = await createTestDatabase();
  await writeActionRows(db.admin, recordings.flatMap((r) => r.traces.flatMap(actionRowsFromRecording)));
});
afterAll(async () => {
  await db?.drop();
});

// ---- Synthetic actions ---------------------------------------------------------------------------------------

const A = (n: number) => `0:${n.toString(16).toUpperCase().padStart(64, "0")}`;
const hash = (label: string) => Buffer.from(label.padEnd(32, "_").slice(0, 32)).toString("base64");

/** A synthetic trace whose actions are given as toncenter would print them, turned into rows like the recordings. */
function syntheticRows(
  label: string,
  actions: (Partial<RecordedActionLike> & { type: string; details: Json })[],
): { traceId: string; rows: ActionRow[] } {
  const traceId = hash(`trace ${label}`);
  const rows = actionRowsFromRecording({
    trace_id: traceId,
    external_hash: hash(`ext ${label}`),
    end_lt: "1000",
    end_utime: 1700000000,
    mc_seqno_end: "42",
    actions: actions.map((a, i) => ({
      action_id: hash(`action ${label} ${i}`),
      start_lt: String(100 + i),
      end_lt: String(100 + i),
      start_utime: 1700000000,
      end_utime: 1700000000,
      transactions: [hash(`tx ${label} ${i}`)],
      success: true,
      ...a,
    })),
  });
  return { traceId, rows };
}

/** What the traces handler makes of the stored actions: their rows, as TraceActions. */
async function selectTraceActions(traceIds: readonly string[], types: readonly string[]): Promise<Map<string, TraceAction[]>> {
  return traceActions(await selectTraceActionRows(db.reader, signal, traceIds, types));
}

async function actionsOf(traceId: string, types: readonly string[] = latest): Promise<TraceAction[]> {
  return (await selectTraceActions([traceId], types)).get(traceId) ?? [];
}

// ---- Shortcut expansion --------------------------------------------------------------------------------------

describe("expandActionTypes", () => {
  const v1 = [...(actionTypeShortcuts.v1 ?? [])];

  it("always includes v1 and drops shortcut names", () => {
    expect(expandActionTypes(["v1"]).sort()).toEqual([...v1].sort());
    expect(expandActionTypes(["jettons"]).sort()).toEqual([...v1].sort());
    for (const name of expandActionTypes(["latest", "nft.v3", "dns.v2", "coffee", "tgbtc", "cocoon"])) {
      expect(Object.hasOwn(actionTypeShortcuts, name)).toBe(false);
    }
  });

  it("defaults to latest = v4, which holds unknown and cocoon but not tgbtc", () => {
    expect(expandActionTypes([])).toEqual(expandActionTypes(["latest"]));
    expect(new Set(expandActionTypes(["latest"]))).toEqual(new Set(expandActionTypes(["v4"])));
    expect(latest).toHaveLength(23 + 23 + 17 + 12);
    expect(latest).toContain("unknown");
    expect(latest).toContain("coffee_mev_protect_failed_swap");
    expect(latest).toContain("nft_purchase");
    expect(latest).toContain("cocoon_client_withdraw");
    expect(latest.filter((t) => t.startsWith("tgbtc"))).toEqual([]);
  });

  it("expands nested and topic shortcuts, keeps literal types, never repeats a type", () => {
    const tgbtc = expandActionTypes(["tgbtc"]);
    expect(tgbtc).toHaveLength(23 + 7);
    expect(tgbtc).toContain("tgbtc_mint_fallback");
    expect(expandActionTypes(["nft.v3"])).toEqual(expect.arrayContaining(["nft_transfer", "auction_bid", "nft_purchase", "dns_release"]));
    expect(expandActionTypes(["dns.v2"])).toEqual(expect.arrayContaining(["change_dns", "dns_purchase"]));
    expect(expandActionTypes(["v2"])).not.toContain("nft_purchase");
    expect(expandActionTypes(["some_future_type"]).sort()).toEqual([...v1, "some_future_type"].sort());
    const repeated = expandActionTypes(["v2", "v2", "jettons", "jetton_transfer"]);
    expect(new Set(repeated).size).toBe(repeated.length);
  });
});

// ---- Recorded actions ----------------------------------------------------------------------------------------

function ltKey(action: Json): [bigint, bigint] {
  return [BigInt(action.start_lt as string), BigInt(action.end_lt as string)];
}

describe("every recorded action", () => {
  it("comes back from the table through selectTraceActions + presentAction as recorded, within the exception list", async () => {
    const traces = recordings.flatMap(({ file, traces }) => traces.filter((t) => (t.actions ?? []).length > 0).map((trace) => ({ file, trace })));
    expect(traces.length).toBe(32);
    const all = await selectTraceActions(
      traces.map((t) => t.trace.trace_id),
      latest,
    );
    let compared = 0;
    const types = new Set<string>();
    for (const { file, trace } of traces) {
      const recorded = (trace.actions ?? []) as Json[];
      const ours = (all.get(trace.trace_id) ?? []).map(presentAction);
      expect({ file, count: ours.length }).toEqual({ file, count: recorded.length });
      // Ordered by (start_lt, end_lt) as toncenter; within equal keys toncenter's order is the database's.
      for (let i = 1; i < ours.length; i++) {
        const [a, b] = [ltKey(ours[i - 1] as Json), ltKey(ours[i] as Json)];
        expect(a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1])).toBe(true);
      }
      const byId = new Map(ours.map((a) => [a.action_id as string, a]));
      for (const want of recorded) {
        const got = byId.get(want.action_id as string);
        expect({ file, action: want.action_id, found: got !== undefined }).toEqual({ file, action: want.action_id, found: true });
        expect({ file, action: conformAction(got as Json, want) }).toEqual({ file, action: want });
        types.add(want.type as string);
        compared++;
      }
    }
    expect(compared).toBe(73);
    expect(types.size).toBe(14);
  });

  it("names only addresses the capture's address_book holds", async () => {
    let checked = 0;
    for (const { file, traces, addressBook } of recordings) {
      if (addressBook === undefined) continue;
      for (const trace of traces) {
        for (const action of await actionsOf(trace.trace_id)) {
          for (const address of actionAddresses(action)) {
            expect({ file, address, known: Object.hasOwn(addressBook, address) }).toEqual({ file, address, known: true });
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(200);
  });

  it("gives every requested trace a list, empty without actions", async () => {
    const unknownTrace = hash("no such trace");
    const map = await selectTraceActions([unknownTrace], latest);
    expect(map.get(unknownTrace)).toEqual([]);
    expect((await selectTraceActions([], latest)).size).toBe(0);
  });
});

// ---- Behaviour beyond the captures ---------------------------------------------------------------------------

describe("ancestor filtering", () => {
  it("drops an action whose ancestor's type is supported, returns it when the ancestor's type is not", async () => {
    const { traceId, rows } = syntheticRows("ancestors", [
      { type: "jvault_stake", details: { source: A(1), pool: A(2), amount: "5", period: 3 } },
      { type: "jetton_transfer", details: { sender: A(1), receiver: A(2), amount: "5" } },
      { type: "jetton_swap", details: { dex: "stonfi", sender: A(1) } },
      { type: "call_contract", details: { opcode: "0x00000001", source: A(1), destination: A(3), extra_currencies: {} } },
    ]);
    const [stake, transfer, swap, call] = rows as [ActionRow, ActionRow, ActionRow, ActionRow];
    transfer.parent_action_id = stake.action_id;
    transfer.ancestor_type = ["jvault_stake"];
    call.parent_action_id = swap.action_id;
    call.ancestor_type = ["jetton_swap"];
    await writeActionRows(db.admin, rows);

    // latest understands jvault_stake (v2) and jetton_swap (v1): only the parents.
    expect((await actionsOf(traceId)).map((a) => a.type)).toEqual(["jvault_stake", "jetton_swap"]);
    // v1 does not know jvault_stake, so its child comes instead; jetton_swap's child stays hidden.
    expect((await actionsOf(traceId, expandActionTypes(["v1"]))).map((a) => a.type)).toEqual(["jetton_transfer", "jetton_swap"]);
  });
});

describe("types without a renderer", () => {
  it("print the unsupported form with raw_action keyed by toncenter's Go field names", async () => {
    const { traceId, rows } = syntheticRows("unsupported", [
      { type: "unknown", details: {} },
      { type: "coffee_mev_protect_failed_swap", details: {} },
      { type: "some_future_type", details: {} },
    ]);
    const [unknown] = rows as [ActionRow];
    Object.assign(unknown, { source: A(7), opcode: "4294967295", value: "123456789012345678901234567890", ancestor_type: [] });
    await writeActionRows(db.admin, rows);

    const shown = (await actionsOf(traceId)).map(presentAction);
    // some_future_type is not in latest: not returned at all.
    expect(shown.map((a) => a.type)).toEqual(["unknown", "coffee_mev_protect_failed_swap"]);
    const [first, second] = shown as [Json, Json];
    expect(first.details).toEqual({ error: "unsupported action type: 'unknown'" });
    expect(second.details).toEqual({ error: "unsupported action type: 'coffee_mev_protect_failed_swap'" });
    const raw = first.raw_action as Json;
    expect(Object.keys(raw)).toEqual(rawActionFields.map(([goName]) => goName));
    expect(raw).toMatchObject({
      TraceId: traceId,
      ActionId: unknown.action_id,
      StartLt: 100,
      TraceEndLt: 1000,
      TraceMcSeqnoEnd: 42,
      Source: A(7),
      Opcode: "0xffffffff",
      TxHashes: unknown.tx_hashes,
      Type: "unknown",
      Value: "123456789012345678901234567890",
      Success: true,
      Finality: "finalized",
      ExtraCurrencies: {},
      JettonSwapPeerSwaps: null,
      AncestorType: [],
      Accounts: [],
    });
    expect(Object.keys(first)).toEqual([
      "trace_id",
      "action_id",
      "start_lt",
      "end_lt",
      "start_utime",
      "end_utime",
      "trace_end_lt",
      "trace_end_utime",
      "trace_mc_seqno_end",
      "transactions",
      "success",
      "type",
      "details",
      "raw_action",
      "trace_external_hash",
      "finality",
    ]);

    // Asked for by name, a type outside every shortcut is returned, in the unsupported form.
    const literal = (await actionsOf(traceId, expandActionTypes(["some_future_type"]))).map(presentAction);
    expect(literal.map((a) => [a.type, a.details])).toEqual([["some_future_type", { error: "unsupported action type: 'some_future_type'" }]]);
    expect(actionAddresses((await actionsOf(traceId))[0] as TraceAction)).toEqual([A(7)]);
  });
});

describe("rendering", () => {
  it("shows call_contract and ton_transfer with extra currencies as extra_currency_transfer, amounts exact", async () => {
    const { traceId, rows } = syntheticRows("extra currencies", [
      { type: "call_contract", details: { opcode: "0x0f8a7ea5", source: A(1), destination: A(2), value: "1", extra_currencies: { "239": "1000" } } },
      { type: "ton_transfer", details: { source: A(1), destination: A(2), value: "2", value_extra_currencies: { "-17": "5" }, comment: "hi", encrypted: false } },
      { type: "call_contract", details: { opcode: "0x0f8a7ea5", source: A(1), destination: A(2), value: "3", extra_currencies: {} } },
    ]);
    await writeActionRows(db.admin, rows);
    // An amount stored as a JSON number past 2^53 still comes out digit for digit.
    await db.admin`
      update actions set value_extra_currencies = '{"239": 123456789012345678901234567890}'::jsonb
      where action_id = ${(rows[0] as ActionRow).action_id}`;
    const shown = (await actionsOf(traceId)).map(presentAction);
    expect(shown.map((a) => [a.type, a.details])).toEqual([
      [
        "extra_currency_transfer",
        { opcode: "0x0f8a7ea5", source: A(1), destination: A(2), value: "1", extra_currencies: { "239": "123456789012345678901234567890" } },
      ],
      [
        "extra_currency_transfer",
        { source: A(1), destination: A(2), value: "2", value_extra_currencies: { "-17": "5" }, comment: "hi", encrypted: false },
      ],
      ["call_contract", { opcode: "0x0f8a7ea5", source: A(1), destination: A(2), value: "3", extra_currencies: {} }],
    ]);
  });

  it("keeps 30-digit amounts exact through composites, composite arrays and plain columns", async () => {
    const big = "123456789012345678901234567890";
    const { traceId, rows } = syntheticRows("precision", [
      {
        type: "jetton_transfer",
        details: { asset: A(1), sender: A(2), receiver: A(3), amount: big, query_id: "18446744073709551615", forward_amount: `9${big}` },
      },
      {
        type: "jetton_swap",
        details: {
          dex: "tonco",
          sender: A(2),
          asset_in: A(1),
          asset_out: null,
          dex_incoming_transfer: { asset: A(1), source: A(2), destination: A(4), amount: big },
          dex_outgoing_transfer: { asset: null, source: A(4), destination: A(2), amount: `8${big}` },
          peer_swaps: [{ asset_in: A(1), amount_in: `7${big}`, asset_out: A(5), amount_out: `6${big}` }],
          min_out_amount: `5${big}`,
        },
      },
      { type: "dex_deposit_liquidity", details: { dex: "dedust", source: A(2), pool: A(6), destination_liquidity: A(7), vault_excesses: [{ asset: null, amount: `4${big}` }] } },
    ]);
    await writeActionRows(db.admin, rows);
    const [transfer, swap, deposit] = (await actionsOf(traceId)).map(presentAction).map((a) => a.details as Json) as [Json, Json, Json];
    expect(transfer).toMatchObject({ amount: big, query_id: "18446744073709551615", forward_amount: `9${big}`, comment: null });
    expect(swap).toEqual({
      dex: "tonco",
      sender: A(2),
      asset_in: A(1),
      asset_out: null,
      dex_incoming_transfer: { asset: A(1), source: A(2), destination: A(4), source_jetton_wallet: null, destination_jetton_wallet: null, amount: big },
      dex_outgoing_transfer: { asset: null, source: A(4), destination: A(2), source_jetton_wallet: null, destination_jetton_wallet: null, amount: `8${big}` },
      peer_swaps: [{ asset_in: A(1), amount_in: `7${big}`, asset_out: A(5), amount_out: `6${big}` }],
      // Shown for tonco only.
      min_out_amount: `5${big}`,
    });
    expect(deposit).toMatchObject({ pool: A(6), destination_liquidity: A(7), vault_excesses: [{ asset: null, amount: `4${big}` }] });
  });

  it("decodes nft_transfer comments from the forward payload", async () => {
    const boc = (cell: ReturnType<typeof beginCell>) => cell.endCell().toBoc().toString("base64");
    const text = boc(beginCell().storeUint(0, 32).storeStringTail("thanks!"));
    const encrypted = boc(beginCell().storeUint(0x2167da4b, 32).storeBuffer(Buffer.from([1, 2, 3, 250])));
    const other = boc(beginCell().storeUint(0x12345678, 32));
    const nft = (forward_payload: string | null) => ({
      type: "nft_transfer",
      details: { nft_collection: A(1), nft_item: A(2), nft_item_index: "7", old_owner: A(3), new_owner: A(4), is_purchase: false, forward_payload },
    });
    const { traceId, rows } = syntheticRows("comments", [nft(text), nft(encrypted), nft(other), nft("not base64!"), nft(""), nft(null)]);
    await writeActionRows(db.admin, rows);
    const shown = (await actionsOf(traceId)).map(presentAction).map((a) => a.details as Json);
    expect(shown.map((d) => [d.comment, d.is_encrypted_comment])).toEqual([
      ["thanks!", false],
      [Buffer.from([1, 2, 3, 250]).toString("base64"), true],
      [null, false],
      [null, null],
      [null, false],
      [null, null],
    ]);
  });

  it("looks marketplace names up by marketplace address, else by collection, for purchases only", async () => {
    const { traceId, rows } = syntheticRows("marketplace", [
      { type: "nft_transfer", details: { nft_collection: A(11), nft_item: A(2), new_owner: A(4), is_purchase: true, marketplace_address: A(12) } },
      { type: "nft_transfer", details: { nft_collection: A(11), nft_item: A(2), new_owner: A(4), is_purchase: true } },
      { type: "nft_transfer", details: { nft_collection: A(11), nft_item: A(2), new_owner: A(4), is_purchase: false } },
      { type: "nft_purchase", details: { nft_collection: A(13), nft_item: A(2), new_owner: A(4), real_old_owner: A(5), payout_address: A(5) } },
    ]);
    await writeActionRows(db.admin, rows);
    await db.admin`insert into marketplace_names (address, name) values (${A(11)}, 'by collection'), (${A(13)}, 'purchase market')`;
    const shown = (await actionsOf(traceId)).map(presentAction).map((a) => a.details as Json);
    expect(shown.map((d) => d.marketplace)).toEqual([null, "by collection", null, "purchase market"]);
    expect(shown[3]).toMatchObject({ real_old_owner: A(5), payout_address: A(5), royalty_address: null });
  });

  it("renames tonstakers to liquid_staking and keeps its burnt tokens", async () => {
    const { traceId, rows } = syntheticRows("staking", [
      { type: "stake_withdrawal_request", details: { provider: "tonstakers", stake_holder: A(1), pool: A(2), payout_nft: A(3), asset: A(4), tokens_burnt: "77" } },
      { type: "stake_deposit", details: { provider: "ethena", stake_holder: A(1), pool: A(2), amount: "1", tokens_minted: "2", asset: A(4), source_asset: A(5) } },
      { type: "stake_deposit", details: { provider: "other", stake_holder: A(1), pool: A(2), amount: "1", tokens_minted: "2", asset: A(4) } },
    ]);
    await writeActionRows(db.admin, rows);
    const shown = (await actionsOf(traceId)).map(presentAction).map((a) => a.details as Json);
    expect(shown).toEqual([
      { provider: "liquid_staking", stake_holder: A(1), pool: A(2), payout_nft: A(3), asset: A(4), tokens_burnt: "77" },
      { provider: "ethena", stake_holder: A(1), pool: A(2), amount: "1", tokens_minted: "2", asset: A(4), source_asset: A(5) },
      { provider: "other", stake_holder: A(1), pool: A(2), amount: "1", tokens_minted: "2", asset: A(4) },
    ]);
  });

  it("maps EVAA asset ids and collects the mapped asset", async () => {
    const { traceId, rows } = syntheticRows("evaa", [
      {
        type: "evaa_liquidate",
        details: { source: A(1), borrower: A(2), asset_id: "0xca9006bd3fb03d355daeeff93b24be90afaa6e3ca0073ff5720f8a852c933278", amount: "1" },
      },
      { type: "evaa_liquidate", details: { source: A(1), asset_id: "0x1a4219fe5e60d63af2a3cc7dce6fec69b45c6b5718497a6148e7c232ac87bd8a" } },
      { type: "evaa_liquidate", details: { source: A(1), asset_id: "0xdead" } },
    ]);
    await writeActionRows(db.admin, rows);
    const actions = await actionsOf(traceId);
    const shown = actions.map(presentAction).map((a) => a.details as Json);
    const usdt = "0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE";
    expect(shown.map((d) => [d.asset, d.is_known_asset])).toEqual([
      [usdt, true],
      [null, true],
      [null, false],
    ]);
    expect(actionAddresses(actions[0] as TraceAction)).toEqual([A(1), A(2), usdt]);
  });
});
