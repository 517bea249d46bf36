import { Code, ConnectError } from "@connectrpc/connect";
import type { AddressMetadata } from "../../gen/tonquery/v1/trace_pb.ts";
import type { AddressBookRow, Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { actionAddresses, presentAction } from "../actions/present.ts";
import type { Config } from "../runtime/config.ts";
import { transactionAddresses } from "../handlers/adjacent-transactions.ts";
import { distinctValues, isStorableText } from "../handlers/validation.ts";
import { presentMetadata, presentTrace } from "../present/v3/trace.ts";
import { presentAccountState, presentAddressBook, presentTransaction } from "../present/v3/transaction.ts";
import { parseAddress } from "../ton/address.ts";
import { parseHash } from "../ton/hash.ts";
import { type StreamFilter, type StreamItem, streamFilter } from "./hub.ts";

// toncenter's Streaming API v2 as tonquery speaks it (/api/streaming/v2/sse and /ws): the subscription's fields and
// the events' JSON shapes, built with the v3 presenters, plus what toncenter's cannot do: every event has an id,
// and a stream resumes exactly after any id it sent (see README "Live streams").
//
// Event ids: the events of masterchain block N are numbered from 0 in the order they are sent; every one but the
// last has the id "N:k" (k its number), the last has the id "N" ("block N done"), and so has a heartbeat sent
// after block N. Resuming after "N" starts with block N+1; after "N:k", with the event k+1 of block N. Any
// masterchain seqno N in the resume window is a valid id, so a client may also start after a block of its choice.

export type EventType = "transactions" | "actions" | "trace" | "account_state_change";
const eventTypes: readonly EventType[] = ["transactions", "actions", "trace", "account_state_change"];
/** toncenter's types the index cannot serve from what it holds. */
const unservedTypes = ["jettons_change", "trace_invalidated"];

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

/** One event of a block, as JSON, with its id. */
export interface StreamEvent {
  id: string;
  json: Record<string, unknown>;
}

type Json = Record<string, unknown>;

function bookAndMetadata(subscription: Subscription, item: Extract<StreamItem, { kind: "block" }>, addresses: Iterable<string>): Json {
  const out: Json = {};
  if (!subscription.includeAddressBook && !subscription.includeMetadata) return out;
  const book: Record<string, AddressBookRow> = {};
  const metadata: Record<string, AddressMetadata> = {};
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

/**
 * The events a block makes for a subscription, in toncenter's shapes, in a fixed order (trace by trace, in the
 * block's trace order; per trace: transactions, actions, trace, account_state_change), with their ids.
 */
export function blockEvents(subscription: Subscription, item: Extract<StreamItem, { kind: "block" }>): StreamEvent[] {
  const events: Json[] = [];
  const { types, addresses } = subscription;
  const mine = (account: string) => addresses.size === 0 || addresses.has(account);
  for (const { trace, externalHashNorm } of item.traces) {
    const norm = externalHashNorm ?? null;
    const base = { finality: "finalized", trace_external_hash_norm: norm };
    if (types.has("transactions")) {
      const transactions = trace.transactions.filter((tx) => mine(tx.account));
      if (transactions.length > 0) {
        events.push({ type: "transactions", ...base, transactions: transactions.map(presentTransaction), ...bookAndMetadata(subscription, item, transactionAddresses(transactions)) });
      }
    }
    if (types.has("actions")) {
      const actions = trace.actions.filter(
        (action) =>
          (subscription.actionTypes === undefined || subscription.actionTypes.has(action.type)) &&
          (addresses.size === 0 || actionAddresses(action).some((account) => addresses.has(account))),
      );
      if (actions.length > 0) {
        events.push({ type: "actions", ...base, actions: actions.map(presentAction), ...bookAndMetadata(subscription, item, actions.flatMap(actionAddresses)) });
      }
    }
    if (types.has("trace") && norm !== null && subscription.traceExternalHashNorms.has(norm)) {
      const presented = presentTrace(trace, true);
      const event: Json = { type: "trace", ...base, trace: presented.trace ?? null, transactions: presented.transactions ?? {} };
      if (types.has("actions")) event.actions = presented.actions;
      events.push({ ...event, ...bookAndMetadata(subscription, item, [...transactionAddresses(trace.transactions), ...trace.actions.flatMap(actionAddresses)]) });
    }
    if (types.has("account_state_change")) {
      // The state each subscribed account is left in by the trace: after its last transaction in it.
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
