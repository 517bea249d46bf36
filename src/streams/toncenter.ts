import { Code, ConnectError } from "@connectrpc/connect";
import type { AddressMetadata, TraceAction } from "../../gen/tonquery/v1/trace_pb.ts";
import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";
import { actionAddresses, presentAction } from "../actions/present.ts";
import { type TransactionRow, transactionRowAddresses } from "../db/transactions.ts";
import { type JsonPieces, printJson, quote } from "../encode/json-pieces.ts";
import { transactionsByHash, writeTransactionsObject, writeTree } from "../encode/v3-json/traces.ts";
import { writeAccountState, writeTransaction } from "../encode/v3-json/transaction.ts";
import type { Config } from "../runtime/config.ts";
import { assembleTraceTree, transactionRowTreeView } from "../handlers/trace-tree.ts";
import type { LoadedTrace } from "../handlers/traces.ts";
import { distinctValues, isStorableText } from "../handlers/validation.ts";
import { presentMetadata } from "../present/v3/trace.ts";
import { presentAddressBook } from "../present/v3/transaction.ts";
import { parseAddress } from "../ton/address.ts";
import { parseHash } from "../ton/hash.ts";
import { type StreamFilter, type StreamItem, type StreamTrace, streamFilter } from "./hub.ts";

// toncenter's Streaming API v2 as tonquery speaks it (/api/streaming/v2/sse and /ws): the subscription's fields and
// the events' JSON shapes, written with REST v3's writers, plus what toncenter's cannot do: every event has an id,
// and a stream resumes exactly after any id it sent (see README "Live streams").
//
// Event ids: the events of masterchain block N are numbered from 0 in the order they are sent; every one but the
// last has the id "N:k" (k its number), the last has the id "N" ("block N done"), and so has a heartbeat sent
// after block N. Resuming after "N" starts with block N+1; after "N:k", with the event k+1 of block N. Any
// masterchain seqno N in the resume window is a valid id, so a client may also start after a block of its choice.

export type EventType = "transactions" | "actions" | "trace" | "account_state_change";
export const eventTypes: readonly EventType[] = ["transactions", "actions", "trace", "account_state_change"];
/** toncenter's types the index cannot serve from what it holds. */
export const unservedTypes = ["jettons_change", "trace_invalidated"];

/** A subscription as toncenter's clients send it (SSE: the POST body or the GET query; WebSocket: a subscribe message). */
export interface Subscription {
  types: Set<EventType>;
  addresses: Set<string>;
  traceExternalHashNorms: Set<string>;
  actionTypes: Set<string> | undefined;
  includeAddressBook: boolean;
  includeMetadata: boolean;
  filter: StreamFilter;
}

/** Where a client resumes: after block `seqno`, skipping the first `skip` events of block seqno + 1. */
export interface ResumePoint {
  after: number;
  skip: number;
}

/** The 4xx of a subscription that cannot be served, with toncenter's status where it has one. */
export function subscriptionError(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

function stringList(body: Record<string, unknown>, name: string, max: number): string[] {
  const value = body[name];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== "string" || !isStorableText(item))) {
    throw subscriptionError(`${name} must be a list of strings`);
  }
  return distinctValues(name, value as string[], max);
}

function flag(body: Record<string, unknown>, name: string): boolean {
  const value = body[name];
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") throw subscriptionError(`${name} must be true or false`);
  return value;
}

/** Reads and checks a subscription. */
export function parseSubscription(body: Record<string, unknown>, config: Config): Subscription {
  const types = stringList(body, "types", 16);
  if (types.length === 0) throw subscriptionError(`types is required: one or more of ${eventTypes.join(", ")}`);
  for (const type of types) {
    if (unservedTypes.includes(type)) throw subscriptionError(`type ${type} is not served: tonquery streams what the index holds (${eventTypes.join(", ")})`);
    if (!(eventTypes as readonly string[]).includes(type)) throw subscriptionError(`unknown type ${type}: expected one of ${eventTypes.join(", ")}`);
  }
  const finality = body.min_finality;
  if (finality !== undefined && finality !== null && finality !== "finalized") {
    throw subscriptionError(
      `min_finality ${JSON.stringify(finality)} is not served: tonquery reads the index, which holds committed (finalized) blocks only; use "finalized" or leave it out`,
    );
  }
  const addresses = stringList(body, "addresses", Number.MAX_SAFE_INTEGER);
  if (addresses.length > config.streamMaxAddresses) throw subscriptionError(`too many addresses: ${addresses.length} > ${config.streamMaxAddresses}`);
  const norms = stringList(body, "trace_external_hash_norms", config.streamMaxAddresses).map((hash) => {
    const parsed = parseHash(hash);
    if (parsed === undefined) throw subscriptionError(`trace_external_hash_norms: ${JSON.stringify(hash)} is not a hash`);
    return parsed;
  });
  const typeSet = new Set(types as EventType[]);
  if (typeSet.has("trace") && norms.length === 0) throw subscriptionError("trace_external_hash_norms is required with type trace");
  const accountTypes = [...typeSet].filter((type) => type !== "trace");
  if (accountTypes.length > 0 && addresses.length === 0 && norms.length > 0) {
    throw subscriptionError(`addresses is required with ${accountTypes.join(", ")} when trace_external_hash_norms is given`);
  }
  const actionTypes = stringList(body, "action_types", config.maxListValues);
  const supported = stringList(body, "supported_action_types", config.maxListValues);
  const includeAddressBook = flag(body, "include_address_book");
  const includeMetadata = flag(body, "include_metadata");
  const withActions = typeSet.has("actions") || typeSet.has("trace");
  const filter = streamFilter(
    {
      accounts: addresses,
      externalHashNorms: norms,
      includeTransactions: typeSet.has("transactions") || typeSet.has("trace") || typeSet.has("account_state_change"),
      includeActions: withActions,
      supportedActionTypes: supported,
      addressBook: includeAddressBook,
      metadata: includeMetadata,
    },
    config.streamMaxAddresses,
    (address) => {
      const raw = parseAddress(address);
      if (raw === undefined) throw subscriptionError(`addresses: ${JSON.stringify(address)} is not an address`);
      return raw;
    },
  );
  return {
    types: typeSet,
    addresses: filter.accounts as Set<string>,
    traceExternalHashNorms: new Set(norms),
    actionTypes: actionTypes.length === 0 ? undefined : new Set(actionTypes),
    includeAddressBook,
    includeMetadata,
    filter,
  };
}

/** A resume point from an event id ("N" or "N:k"), or undefined when there is none. */
export function parseEventId(id: string | undefined | null): ResumePoint | undefined {
  if (id === undefined || id === null || id.trim() === "") return undefined;
  const match = /^(\d{1,10})(?::(\d{1,9}))?$/.exec(id.trim());
  if (match === null) throw subscriptionError(`malformed event id ${JSON.stringify(id)}: expected a masterchain seqno N or N:k`);
  const seqno = Number(match[1]);
  if (seqno > 2 ** 31 - 1) throw subscriptionError(`malformed event id ${JSON.stringify(id)}: seqno out of range`);
  if (match[2] === undefined) return { after: seqno, skip: 0 };
  // After event k of block N: block N again, without its first k + 1 events.
  return { after: seqno - 1, skip: Number(match[2]) + 1 };
}

/** One event of a block, as its JSON text, with its id. */
export interface StreamEvent {
  id: string;
  json: string;
}

/** An event as a WebSocket message: its JSON with its id as the last member. */
export function withEventId(event: StreamEvent): string {
  return `${event.json.slice(0, -1)},"event_id":${JSON.stringify(event.id)}}`;
}

type Block = Extract<StreamItem, { kind: "block" }>;

// What events print of a block's rows and actions, printed once for every stream that sends it: the rows, actions
// and StreamTraces of a load are shared by its streams (see StreamHub #streamTrace), and go with it.
const printedTransactions = new WeakMap<TransactionRow, string>();
const printedStatesAfter = new WeakMap<TransactionRow, string>();
const printedActions = new WeakMap<TraceAction, string>();
const printedTraces = new WeakMap<StreamTrace, string>();
const printedBookEntries = new WeakMap<AddressBookRow, string>();
const printedMetadataEntries = new WeakMap<AddressMetadata, string>();

function printedOnce<K extends object>(printed: WeakMap<K, string>, key: K, print: () => string): string {
  let text = printed.get(key);
  if (text === undefined) {
    text = print();
    printed.set(key, text);
  }
  return text;
}

function transactionJson(trace: LoadedTrace, row: TransactionRow): string {
  return printedOnce(printedTransactions, row, () => {
    return printJson((out) => writeTransaction(out, trace.rowSet, row, trace.bodies)).toString();
  });
}

function writePrintedTransaction(out: JsonPieces, row: TransactionRow, trace: LoadedTrace): void {
  out.text(transactionJson(trace, row));
}

function actionsJson(actions: readonly TraceAction[]): string {
  return `[${actions.map((action) => printedOnce(printedActions, action, () => JSON.stringify(presentAction(action)))).join(",")}]`;
}

/** A trace event's `"trace":...,"transactions":...`: the tree (null when there is none) and the transactions by hash. */
function treeAndTransactionsJson(trace: StreamTrace): string {
  return printedOnce(printedTraces, trace, () => {
    const { transactions, rowSet } = trace.loaded;
    if (transactions === undefined) return `"trace":null,"transactions":{}`;
    const tree = assembleTraceTree(transactions, transactionRowTreeView(rowSet));
    const byHash = transactionsByHash(transactions);
    return printJson((out) => {
      out.text(`"trace":`);
      if (tree.nodes.length > 0) writeTree(out, rowSet, tree.nodes, byHash);
      else out.text("null");
      out.text(`,"transactions":`);
      writeTransactionsObject(out, byHash, writePrintedTransaction, trace.loaded);
    }).toString();
  });
}

/** `,"address_book":{...},"metadata":{...}` as the subscription asks, for the addresses an event names. */
function bookAndMetadata(subscription: Subscription, item: Block, addresses: Iterable<string>): string {
  if (!subscription.includeAddressBook && !subscription.includeMetadata) return "";
  const book: string[] = [];
  const metadata: string[] = [];
  for (const address of new Set(addresses)) {
    const row = item.addressBook[address];
    if (row !== undefined) book.push(printedOnce(printedBookEntries, row, () => JSON.stringify(presentAddressBook({ [address]: row })).slice(1, -1)));
    const meta = item.metadata[address];
    if (meta !== undefined) metadata.push(printedOnce(printedMetadataEntries, meta, () => JSON.stringify(presentMetadata({ [address]: meta })).slice(1, -1)));
  }
  return (subscription.includeAddressBook ? `,"address_book":{${book.join(",")}}` : "") + (subscription.includeMetadata ? `,"metadata":{${metadata.join(",")}}` : "");
}

/**
 * The events a block makes for a subscription, in toncenter's shapes, in a fixed order (trace by trace, in the
 * block's trace order; per trace: transactions, actions, trace, account_state_change), with their ids. Written from
 * the rows with REST v3's writers (src/encode/v3-json/), byte for byte what JSON.stringify printed of the v3
 * presenters' objects (test/streams-json.test.ts).
 */
export function blockEvents(subscription: Subscription, item: Block): StreamEvent[] {
  const events: string[] = [];
  const { types, addresses } = subscription;
  const mine = (account: string) => addresses.size === 0 || addresses.has(account);
  for (const streamTrace of item.traces) {
    const { loaded } = streamTrace;
    const rows = loaded.transactions ?? [];
    const norm = streamTrace.externalHashNorm ?? null;
    const base = `"finality":"finalized","trace_external_hash_norm":${norm === null ? "null" : quote(norm)}`;
    if (types.has("transactions")) {
      const transactions = rows.filter((row) => mine(row.account));
      if (transactions.length > 0) {
        const printed = transactions.map((row) => transactionJson(loaded, row)).join(",");
        const book = bookAndMetadata(subscription, item, transactionRowAddresses(loaded.rowSet, transactions));
        events.push(`{"type":"transactions",${base},"transactions":[${printed}]${book}}`);
      }
    }
    if (types.has("actions")) {
      const actions = loaded.actions.filter(
        (action) =>
          (subscription.actionTypes === undefined || subscription.actionTypes.has(action.type)) &&
          (addresses.size === 0 || actionAddresses(action).some((account) => addresses.has(account))),
      );
      if (actions.length > 0) {
        events.push(`{"type":"actions",${base},"actions":${actionsJson(actions)}${bookAndMetadata(subscription, item, actions.flatMap(actionAddresses))}}`);
      }
    }
    if (types.has("trace") && norm !== null && subscription.traceExternalHashNorms.has(norm)) {
      const actions = types.has("actions") ? `,"actions":${actionsJson(loaded.actions)}` : "";
      const book = bookAndMetadata(subscription, item, [...transactionRowAddresses(loaded.rowSet, rows), ...loaded.actions.flatMap(actionAddresses)]);
      events.push(`{"type":"trace",${base},${treeAndTransactionsJson(streamTrace)}${actions}${book}}`);
    }
    if (types.has("account_state_change")) {
      // The state each subscribed account is left in by the trace: after its last transaction in it.
      const last = new Map<string, TransactionRow>();
      for (const row of rows) if (addresses.has(row.account)) last.set(row.account, row);
      for (const [account, row] of last) {
        if (row.account_state_hash_after === null) continue;
        const state = printedOnce(printedStatesAfter, row, () =>
          printJson((out) => writeAccountState(out, row.account_state_hash_after, loaded.rowSet.stateByHash)).toString(),
        );
        events.push(`{"type":"account_state_change","finality":"finalized","account":${quote(account)},"state":${state}}`);
      }
    }
  }
  return events.map((json, index) => ({ id: index === events.length - 1 ? String(item.seqno) : `${item.seqno}:${index}`, json }));
}
