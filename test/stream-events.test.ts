import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Transaction } from "../gen/tonquery/v1/transaction_pb.ts";
import { actionAddresses, presentAction } from "../src/actions/present.ts";
import { transactionRowAddresses } from "../src/db/transactions.ts";
import { presentMetadata, presentTrace } from "../src/present/v3/trace.ts";
import { presentAccountState, presentAddressBook, presentTransaction } from "../src/present/v3/transaction.ts";
import type { ServiceDeps } from "../src/service/deps.ts";
import { type StreamItem, streamTrace } from "../src/streams/hub.ts";
import { type BlockTraceRef, type LoadedTraces, loadTraces } from "../src/streams/reads.ts";
import { blockEvents, parseSubscription, type Subscription, withEventId } from "../src/streams/toncenter.ts";
import type { TestDatabase } from "./support/database.ts";
import { recordedIndex, serviceDeps } from "./support/encoder-indexes.ts";

// The REST streams' events, written from the rows (blockEvents, src/encode/v3-json/), against what they were before:
// JSON.stringify of objects the v3 presenters built from the typed Traces (referenceEvents below, the old builder,
// kept here only). Every recorded trace in one block, with actions, decoded bodies, traces over
// MAX_TRACE_TRANSACTIONS and traces loaded without transactions, for subscriptions of every type and option.

type Block = Extract<StreamItem, { kind: "block" }>;
type Json = Record<string, unknown>;

function transactionAddresses(transactions: readonly Transaction[]): string[] {
  return transactions.flatMap((tx) => [
    tx.account,
    ...(tx.inMsg?.source === undefined ? [] : [tx.inMsg.source]),
    ...tx.outMsgs.flatMap((out) => (out.destination === undefined ? [] : [out.destination])),
  ]);
}

function referenceBookAndMetadata(subscription: Subscription, item: Block, addresses: Iterable<string>): Json {
  const out: Json = {};
  if (!subscription.includeAddressBook && !subscription.includeMetadata) return out;
  const book: Block["addressBook"] = {};
  const metadata: Block["metadata"] = {};
  for (const address of addresses) {
    const row = item.addressBook[address];
    if (row !== undefined) book[address] = row;
    const meta = item.metadata[address];
    if (meta !== undefined) metadata[address] = meta;
  }
  if (subscription.includeAddressBook) out.address_book = presentAddressBook(book);
  if (subscription.includeMetadata) out.metadata = presentMetadata(metadata);
  return out;
}

/** blockEvents as it was, from the typed Traces through the presenters. */
function referenceEvents(subscription: Subscription, item: Block): { id: string; json: Json }[] {
  const events: Json[] = [];
  const { types, addresses } = subscription;
  const mine = (account: string) => addresses.size === 0 || addresses.has(account);
  for (const { trace, externalHashNorm } of item.traces) {
    const norm = externalHashNorm ?? null;
    const base = { finality: "finalized", trace_external_hash_norm: norm };
    if (types.has("transactions")) {
      const transactions = trace.transactions.filter((tx) => mine(tx.account));
      if (transactions.length > 0) {
        events.push({ type: "transactions", ...base, transactions: transactions.map(presentTransaction), ...referenceBookAndMetadata(subscription, item, transactionAddresses(transactions)) });
      }
    }
    if (types.has("actions")) {
      const actions = trace.actions.filter(
        (action) =>
          (subscription.actionTypes === undefined || subscription.actionTypes.has(action.type)) &&
          (addresses.size === 0 || actionAddresses(action).some((account) => addresses.has(account))),
      );
      if (actions.length > 0) {
        events.push({ type: "actions", ...base, actions: actions.map(presentAction), ...referenceBookAndMetadata(subscription, item, actions.flatMap(actionAddresses)) });
      }
    }
    if (types.has("trace") && norm !== null && subscription.traceExternalHashNorms.has(norm)) {
      const presented = presentTrace(trace, true);
      const event: Json = { type: "trace", ...base, trace: presented.trace ?? null, transactions: presented.transactions ?? {} };
      if (types.has("actions")) event.actions = presented.actions;
      events.push({ ...event, ...referenceBookAndMetadata(subscription, item, [...transactionAddresses(trace.transactions), ...trace.actions.flatMap(actionAddresses)]) });
    }
    if (types.has("account_state_change")) {
      const last = new Map<string, Transaction>();
      for (const tx of trace.transactions) if (addresses.has(tx.account)) last.set(tx.account, tx);
      for (const [account, tx] of last) {
        if (tx.accountStateAfter === undefined) continue;
        events.push({ type: "account_state_change", finality: "finalized", account, state: presentAccountState(tx.accountStateAfter) });
      }
    }
  }
  return events.map((json, index) => ({ id: index === events.length - 1 ? String(item.seqno) : `${item.seqno}:${index}`, json }));
}

const seqno = 4242;

describe("the REST streams' events, written from the rows", () => {
  let index: TestDatabase;
  let deps: ReturnType<typeof serviceDeps>;
  let refs: BlockTraceRef[];
  let accounts: string[];
  let norms: string[];
  let actionTypes: string[];

  beforeAll(async () => {
    index = await recordedIndex();
    // Traces over 5 transactions are loaded as a header only.
    deps = serviceDeps(index, { MAX_TRACE_TRANSACTIONS: "5" });
    const rows = await index.admin<{ trace_id: string; external_hash_norm: string | null; accounts: string[] }[]>`
      select E.trace_id, E.external_hash_norm, array(select distinct T.account from transactions T where T.trace_id = E.trace_id)::text[] as accounts
      from traces E order by E.end_lt, E.trace_id limit 256`;
    refs = rows.map((row) => ({ traceId: row.trace_id, externalHashNorm: row.external_hash_norm ?? undefined, accounts: row.accounts, classified: true }));
    accounts = [...new Set(refs.flatMap((ref) => ref.accounts))].sort();
    norms = refs.flatMap((ref) => (ref.externalHashNorm === undefined ? [] : [ref.externalHashNorm]));
    actionTypes = (await index.admin<{ type: string }[]>`select distinct type from actions order by type`).map((row) => row.type);
  }, 120_000);
  afterAll(async () => {
    await deps?.db.end();
    await index?.drop();
  });

  it("are byte for byte JSON.stringify of the presenters' events, over SSE and WebSocket", async () => {
    const subscriptionBodies: Json[] = [
      { types: ["transactions", "actions"] },
      { types: ["transactions", "actions", "account_state_change"], addresses: accounts.filter((_, i) => i % 3 === 0), include_address_book: true, include_metadata: true },
      // Actions only: the traces are loaded for it without their transactions.
      { types: ["actions"], addresses: accounts.filter((_, i) => i % 2 === 1), action_types: actionTypes.slice(0, 2), include_metadata: true },
      { types: ["actions"], include_address_book: true },
      { types: ["trace", "actions"], addresses: accounts, trace_external_hash_norms: norms, include_address_book: true },
      {
        types: ["trace", "transactions", "account_state_change"],
        addresses: accounts.filter((_, i) => i % 4 === 1),
        trace_external_hash_norms: norms.filter((_, i) => i % 2 === 0),
        include_address_book: true,
        include_metadata: true,
      },
    ];
    const subscriptions = subscriptionBodies.map((body) => parseSubscription(body, deps.config));
    const actionKey = (subscription: Subscription) => subscription.filter.actionTypes && [...subscription.filter.actionTypes].sort().join(",");
    const actionSets = new Map<string, readonly string[]>();
    for (const subscription of subscriptions) {
      const key = actionKey(subscription);
      if (key !== undefined) actionSets.set(key, subscription.filter.actionTypes ?? []);
    }
    const addressesOf = (loaded: LoadedTraces) => [
      ...transactionRowAddresses(loaded.rowSet),
      ...[...loaded.actions.values()].flatMap((byTrace) => [...byTrace.values()].flat().flatMap(actionAddresses)),
    ];
    const spec = { traceIds: refs.map((ref) => ref.traceId), actionTypes: actionSets, addressBook: true, metadata: true, maxTraceTransactions: deps.config.maxTraceTransactions };
    const signal = AbortSignal.timeout(60_000);
    const loaded = await loadTraces({ ...deps } as unknown as ServiceDeps, signal, spec, addressesOf);

    const seen = { events: 0, types: new Set<string>(), decoded: 0, incomplete: 0, withoutTransactions: 0, trees: 0, book: 0, metadata: 0 };
    for (const subscription of subscriptions) {
      const key = actionKey(subscription);
      const traces = refs.flatMap((ref) => {
        const row = loaded.rows.get(ref.traceId);
        if (row === undefined) return [];
        const actions = key === undefined ? [] : (loaded.actions.get(key)?.get(ref.traceId) ?? []);
        return [streamTrace(ref, row, loaded, { includeTransactions: subscription.filter.includeTransactions, actions, maxTraceTransactions: deps.config.maxTraceTransactions })];
      });
      seen.incomplete += traces.filter((t) => t.loaded.transactions === undefined).length;
      if (!subscription.filter.includeTransactions) seen.withoutTransactions += traces.length;
      const item: Block = { kind: "block", seqno, utime: 0, traces, addressBook: loaded.addressBook, metadata: loaded.metadata };
      const ours = blockEvents(subscription, item);
      const reference = referenceEvents(subscription, item);
      expect(ours.map((event) => event.id)).toEqual(reference.map((event) => event.id));
      ours.forEach((event, i) => {
        const expected = reference[i] as { id: string; json: Json };
        expect(event.json, `subscription ${subscriptions.indexOf(subscription)} event ${event.id}`).toBe(JSON.stringify(expected.json));
        expect(withEventId(event)).toBe(JSON.stringify({ ...expected.json, event_id: expected.id }));
        seen.types.add(expected.json.type as string);
        if (event.json.includes(`"decoded":{`)) seen.decoded++;
        if (expected.json.type === "trace" && expected.json.trace !== null) seen.trees++;
        if (Object.keys((expected.json.address_book as Json | undefined) ?? {}).length > 0) seen.book++;
        if (Object.keys((expected.json.metadata as Json | undefined) ?? {}).length > 0) seen.metadata++;
      });
      // A block printed again (a stream catching up, another stream of the same variant) prints the same.
      expect(blockEvents(subscription, item)).toEqual(ours);
      seen.events += ours.length;
    }
    // What the comparison covered, so that it cannot pass on an empty block.
    expect([...seen.types].sort()).toEqual(["account_state_change", "actions", "trace", "transactions"]);
    expect(seen.events).toBeGreaterThan(50);
    expect(seen.decoded).toBeGreaterThan(0);
    expect(seen.incomplete).toBeGreaterThan(0);
    expect(seen.withoutTransactions).toBeGreaterThan(0);
    expect(seen.trees).toBeGreaterThan(0);
    expect(seen.book).toBeGreaterThan(0);
  }, 120_000);
});
