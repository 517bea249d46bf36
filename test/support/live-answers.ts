import { toJson } from "@bufbuild/protobuf";
import {
  Direction,
  GetAdjacentTransactionsResponseSchema,
  GetBlockTransactionsExtResponseSchema,
  GetMasterchainInfoResponseSchema,
  GetTracesResponseSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import type { FlippedState } from "../../bench/live/trace-flipper.ts";
import type { RpcProtocol, TestServer } from "./server.ts";

// Asking a moving index through every door, and judging each answer on its own: does it hold together, as an answer
// read from one state of the index would? Answers of the REST door (toncenter's JSON) and of the RPC doors (the typed
// messages, as JSON) are read into one view, then checked by the same rules. A rule broken is a torn answer: parts of
// it were read before a commit of the writer, parts after.

export type Door = "rest" | RpcProtocol;
type Json = Record<string, unknown>;

interface MessageView {
  hash: string;
  source: string | undefined;
  destination: string | undefined;
}

interface TransactionView {
  hash: string;
  traceId: string | undefined;
  account: string;
  inMsg: MessageView | undefined;
  outMsgs: MessageView[];
  /** The block, as getBlockTransactionsExt names it (shard as signed decimal). */
  block: { workchain: number; shard: string; seqno: number };
}

export interface TraceView {
  id: string;
  state: string;
  infoTransactions: number;
  pendingMessages: number;
  classification: string;
  tooLarge: boolean;
  transactions: TransactionView[];
  /** Hashes in transactions_order (REST) or in the node list (RPC), and in the tree. */
  order: string[];
  tree: string[];
  /** Undefined when actions were not asked for. */
  actions: Json[] | undefined;
}

interface AnswerView<T> {
  value: T;
  addressBook: Set<string>;
  metadata: Set<string>;
}

const signedShard = (hex: string) => BigInt.asIntN(64, BigInt(`0x${hex}`)).toString();

function restMessage(m: Json | null | undefined): MessageView | undefined {
  if (m === null || m === undefined) return undefined;
  return { hash: m.hash as string, source: (m.source as string | null) ?? undefined, destination: (m.destination as string | null) ?? undefined };
}

function restTransaction(tx: Json): TransactionView {
  const ref = tx.block_ref as { workchain: number; shard: string; seqno: number };
  return {
    hash: tx.hash as string,
    traceId: (tx.trace_id as string | null) ?? undefined,
    account: tx.account as string,
    inMsg: restMessage(tx.in_msg as Json | null),
    outMsgs: ((tx.out_msgs as Json[]) ?? []).map((m) => restMessage(m) as MessageView),
    block: { workchain: ref.workchain, shard: signedShard(ref.shard), seqno: ref.seqno },
  };
}

function rpcTransaction(tx: Json): TransactionView {
  const ref = (tx.blockRef ?? {}) as { workchain?: number; shard?: string; seqno?: number };
  return {
    hash: tx.hash as string,
    traceId: tx.traceId as string | undefined,
    account: tx.account as string,
    inMsg: restMessage(tx.inMsg as Json | undefined),
    outMsgs: ((tx.outMsgs as Json[]) ?? []).map((m) => restMessage(m) as MessageView),
    block: { workchain: ref.workchain ?? 0, shard: ref.shard ?? "0", seqno: ref.seqno ?? 0 },
  };
}

function treeHashes(node: Json | undefined, into: string[] = []): string[] {
  if (node === undefined || node === null) return into;
  if (typeof node.tx_hash === "string") into.push(node.tx_hash);
  for (const child of (node.children as Json[]) ?? []) treeHashes(child, into);
  return into;
}

/** The view of a trace of a REST answer. */
export function restTraceView(trace: Json): TraceView {
  const info = trace.trace_info as Json;
  return {
    id: trace.trace_id as string,
    state: info.trace_state as string,
    infoTransactions: Number(info.transactions),
    pendingMessages: Number(info.pending_messages),
    classification: info.classification_state as string,
    tooLarge: trace.warning !== undefined && trace.warning !== null,
    transactions: Object.values((trace.transactions as Record<string, Json>) ?? {}).map(restTransaction),
    order: (trace.transactions_order as string[]) ?? [],
    tree: treeHashes(trace.trace as Json | undefined),
    actions: trace.actions as Json[] | undefined,
  };
}

function rpcTrace(trace: Json, includeActions: boolean): TraceView {
  const info = (trace.traceInfo ?? {}) as Json;
  const nodes = ((trace.nodes as Json[]) ?? []).map((n) => n.transactionHash as string);
  return {
    id: trace.traceId as string,
    state: info.traceState as string,
    infoTransactions: Number(info.transactions ?? 0),
    pendingMessages: Number(info.pendingMessages ?? 0),
    classification: info.classificationState as string,
    tooLarge: trace.warning !== undefined,
    transactions: ((trace.transactions as Json[]) ?? []).map(rpcTransaction),
    order: nodes,
    tree: nodes,
    actions: includeActions ? ((trace.actions as Json[]) ?? []) : undefined,
  };
}

const keys = (map: unknown) => new Set(Object.keys((map as Record<string, unknown>) ?? {}));

/** One door of a test server, answering with views. */
/** A request that takes longer has failed: the tests stay bounded in time whatever the server does. */
const requestTimeoutMs = 5000;
const rpcOptions = { timeoutMs: requestTimeoutMs };

export class DoorClient {
  private readonly server: TestServer;
  readonly door: Door;

  constructor(server: TestServer, door: Door) {
    this.server = server;
    this.door = door;
  }

  private async rest(path: string): Promise<Json> {
    const response = await fetch(`${this.server.baseUrl}${path}`, { signal: AbortSignal.timeout(requestTimeoutMs) });
    const status = response.status;
    const text = await response.text();
    const body = text === "" ? undefined : (JSON.parse(text) as unknown);
    if (status !== 200) throw new Error(`${path}: HTTP ${status} ${JSON.stringify(body)}`);
    return body as Json;
  }

  async traces(query: { account?: string; traceIds?: string[]; limit: number; includeActions: boolean }): Promise<AnswerView<TraceView[]>> {
    if (this.door === "rest") {
      const params = new URLSearchParams({ limit: String(query.limit), include_actions: String(query.includeActions) });
      if (query.account !== undefined) params.set("account", query.account);
      for (const id of query.traceIds ?? []) params.append("trace_id", id);
      const body = await this.rest(`/api/v3/traces?${params}`);
      return { value: (body.traces as Json[]).map(restTraceView), addressBook: keys(body.address_book), metadata: keys(body.metadata) };
    }
    const response = await this.server.client(this.door).getTraces({
      account: query.account,
      traceId: query.traceIds ?? [],
      limit: query.limit,
      includeActions: query.includeActions,
    }, rpcOptions);
    const body = toJson(GetTracesResponseSchema, response) as Json;
    return {
      value: ((body.traces as Json[]) ?? []).map((t) => rpcTrace(t, query.includeActions)),
      addressBook: keys(body.addressBook),
      metadata: keys(body.metadata),
    };
  }

  async adjacent(hash: string, direction: "in" | "out"): Promise<AnswerView<TransactionView[]>> {
    if (this.door === "rest") {
      const body = await this.rest(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(hash)}&direction=${direction}`);
      return { value: (body.transactions as Json[]).map(restTransaction), addressBook: keys(body.address_book), metadata: new Set() };
    }
    const response = await this.server.client(this.door).getAdjacentTransactions({ hash, direction: direction === "in" ? Direction.IN : Direction.OUT }, rpcOptions);
    const body = toJson(GetAdjacentTransactionsResponseSchema, response) as Json;
    return { value: ((body.transactions as Json[]) ?? []).map(rpcTransaction), addressBook: keys(body.addressBook), metadata: new Set() };
  }

  async blockPage(block: TransactionView["block"], count: number): Promise<{ reqCount: number; incomplete: boolean; transactions: number }> {
    if (this.door === "rest") {
      const body = await this.rest(`/api/v2/getBlockTransactionsExt?workchain=${block.workchain}&shard=${block.shard}&seqno=${block.seqno}&count=${count}`);
      const result = body.result as Json;
      return { reqCount: result.req_count as number, incomplete: result.incomplete as boolean, transactions: (result.transactions as Json[]).length };
    }
    const response = await this.server.client(this.door).getBlockTransactionsExt({ workchain: block.workchain, shard: block.shard, seqno: block.seqno, count }, rpcOptions);
    const body = toJson(GetBlockTransactionsExtResponseSchema, response) as Json;
    return { reqCount: Number(body.reqCount ?? 0), incomplete: body.incomplete === true, transactions: ((body.transactions as Json[]) ?? []).length };
  }

  async masterchainInfo(): Promise<{ first: number; last: number }> {
    if (this.door === "rest") {
      const body = await this.rest("/api/v3/masterchainInfo");
      return { first: Number((body.first as Json).seqno), last: Number((body.last as Json).seqno) };
    }
    const response = await this.server.client(this.door).getMasterchainInfo({}, rpcOptions);
    const body = toJson(GetMasterchainInfoResponseSchema, response) as Json;
    return { first: Number((body.first as Json).seqno), last: Number((body.last as Json).seqno) };
  }
}

/** The addresses an answer's address book must cover: every account and message end in it. */
function transactionAddresses(transactions: readonly TransactionView[]): string[] {
  const addresses: string[] = [];
  for (const tx of transactions) {
    addresses.push(tx.account);
    if (tx.inMsg?.source !== undefined) addresses.push(tx.inMsg.source);
    for (const out of tx.outMsgs) if (out.destination !== undefined) addresses.push(out.destination);
  }
  return addresses;
}

function bookProblems(answer: AnswerView<unknown>, addresses: readonly string[]): string[] {
  const problems: string[] = [];
  const missing = addresses.filter((a) => !answer.addressBook.has(a));
  if (missing.length > 0) problems.push(`address book misses ${missing.length} address(es) of the answer, e.g. ${missing[0]}`);
  const stray = [...answer.metadata].filter((a) => !answer.addressBook.has(a));
  if (stray.length > 0) problems.push(`metadata for ${stray.length} address(es) outside the address book`);
  return problems;
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().join() === [...b].sort().join();

/** What is wrong with a trace as answered, read as one state of the index would be ([] when nothing). */
export function traceProblems(trace: TraceView): string[] {
  if (trace.tooLarge) return [];
  const problems: string[] = [];
  const at = `trace ${trace.id} (${trace.state}, ${trace.classification})`;
  const hashes = trace.transactions.map((t) => t.hash);
  if (trace.infoTransactions !== hashes.length) problems.push(`${at}: trace_info says ${trace.infoTransactions} transactions, ${hashes.length} returned`);
  if (!sameSet(trace.order, hashes)) problems.push(`${at}: the transaction order lists ${trace.order.length} transactions, ${hashes.length} returned`);
  if (!sameSet(trace.tree, hashes)) problems.push(`${at}: the tree holds ${trace.tree.length} transactions, ${hashes.length} returned`);
  const foreign = trace.transactions.filter((t) => t.traceId !== trace.id);
  if (foreign.length > 0) problems.push(`${at}: ${foreign.length} transaction(s) of another trace`);
  // Messages sent inside the trace that no transaction of the answer received: still on their way.
  const received = new Set(trace.transactions.flatMap((t) => (t.inMsg === undefined ? [] : [t.inMsg.hash])));
  const onTheirWay = trace.transactions.flatMap((t) => t.outMsgs).filter((m) => m.destination !== undefined && !received.has(m.hash)).length;
  if (trace.pendingMessages !== onTheirWay) problems.push(`${at}: trace_info says ${trace.pendingMessages} pending messages, the transactions leave ${onTheirWay}`);
  if ((trace.state === "pending") !== onTheirWay > 0) problems.push(`${at}: state ${trace.state} with ${onTheirWay} messages on their way`);
  if (trace.actions !== undefined) {
    if (trace.classification === "unclassified" && trace.actions.length > 0) problems.push(`${at}: unclassified, yet ${trace.actions.length} actions`);
    // Every classified trace of the synthetic chain has actions, but a lone wallet transaction (no transfer).
    if (trace.classification === "ok" && trace.actions.length === 0 && hashes.length > 1) problems.push(`${at}: classified, yet no actions`);
  }
  return problems;
}

export function tracesProblems(answer: AnswerView<TraceView[]>): string[] {
  return [...answer.value.flatMap(traceProblems), ...bookProblems(answer, answer.value.flatMap((t) => transactionAddresses(t.transactions)))];
}

/** adjacentTransactions of a transaction of `account`: each answer is a child (out) or a parent (in) by its messages. */
export function adjacentProblems(answer: AnswerView<TransactionView[]>, account: string, direction: "in" | "out"): string[] {
  const problems = answer.value.flatMap((tx) => {
    const linked = direction === "out" ? tx.inMsg?.source === account : tx.outMsgs.some((m) => m.destination === account);
    return linked ? [] : [`adjacent ${direction} transaction ${tx.hash} has no message from/to ${account}`];
  });
  return [...problems, ...bookProblems(answer, transactionAddresses(answer.value))];
}

export function blockPageProblems(page: { reqCount: number; incomplete: boolean; transactions: number }): string[] {
  if (page.transactions > page.reqCount) return [`block page of ${page.transactions} transactions for req_count ${page.reqCount}`];
  if (page.incomplete && page.transactions < page.reqCount) return [`incomplete block page of ${page.transactions} transactions < req_count ${page.reqCount}`];
  return [];
}

/** Which of the flipper's two states a trace answer is, or why it is neither. */
export function flippedStateOf(trace: TraceView | undefined, states: readonly FlippedState[]): FlippedState["state"] | string {
  if (trace === undefined) return "no trace in the answer";
  const hashes = trace.transactions.map((t) => t.hash).sort();
  for (const s of states) {
    if (trace.state === s.state && trace.infoTransactions === s.transactions.length && sameSet(hashes, s.transactions) && sameSet(trace.order, s.transactions) && sameSet(trace.tree, s.transactions)) {
      return s.state;
    }
  }
  return `${trace.state} with trace_info.transactions ${trace.infoTransactions}, ${hashes.length} transactions, ${trace.order.length} in order, ${trace.tree.length} in the tree`;
}

/** Answers and torn answers per operation, with a few examples of what tore. */
export class Tally {
  readonly answers = new Map<string, number>();
  readonly torn = new Map<string, number>();
  readonly examples: string[] = [];
  /** Requests that failed (an error instead of an answer). */
  failed = 0;

  record(operation: string, problems: readonly string[]): void {
    this.answers.set(operation, (this.answers.get(operation) ?? 0) + 1);
    if (problems.length === 0) return;
    this.torn.set(operation, (this.torn.get(operation) ?? 0) + 1);
    if (this.examples.length < 5) this.examples.push(`${operation}: ${problems[0]}`);
  }

  fail(error: unknown): void {
    this.failed++;
    if (this.examples.length < 5) this.examples.push(`failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300));
  }

  get tornTotal(): number {
    return [...this.torn.values()].reduce((a, b) => a + b, 0);
  }

  get answerTotal(): number {
    return [...this.answers.values()].reduce((a, b) => a + b, 0);
  }

  /** "operation: torn/answers, ..." with the examples: the message of a failed assertion. */
  summary(): string {
    const lines = [...this.answers].map(([op, n]) => `${op}: ${this.torn.get(op) ?? 0} torn of ${n}`);
    if (this.failed > 0) lines.push(`${this.failed} requests failed`);
    return [...lines, ...this.examples.map((e) => `  e.g. ${e}`)].join("\n");
  }
}
