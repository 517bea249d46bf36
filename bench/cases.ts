// The representative requests, chosen from the data at start-up so the bench works on any index: the hot account
// (most transactions); a cold one, the least active account whose traces still fill the largest page (1000), so
// that hot and cold pages hold as many traces and differ only in the history behind them; a tiny one (a handful
// of transactions); a mid-sized complete trace for the hash selectors, the masterchain block with the most
// complete traces, the block with the most transactions.

import postgres from "postgres";
import { create, equals, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import {
  type GetAdjacentTransactionsRequest,
  GetAdjacentTransactionsRequestSchema,
  type GetBlockTransactionsExtRequest,
  GetBlockTransactionsExtRequestSchema,
  type GetMasterchainInfoRequest,
  GetMasterchainInfoRequestSchema,
  type GetTracesRequest,
  GetTracesRequestSchema,
  TonQueryService,
} from "../gen/tonquery/v1/service_pb.ts";
import type { TracePosition } from "../src/db/traces.ts";
import { encodeTraceCursor, traceCursorScope } from "../src/handlers/trace-cursor.ts";
import type { Sql } from "../src/db/client.ts";
import { adjacentTransactionsQuery, blockTransactionsExtQuery, tracesQuery } from "../src/rest/queries.ts";

export type CaseCall =
  | { method: "getMasterchainInfo"; request: GetMasterchainInfoRequest }
  | { method: "getAdjacentTransactions"; request: GetAdjacentTransactionsRequest }
  | { method: "getTraces"; request: GetTracesRequest }
  | { method: "getBlockTransactionsExt"; request: GetBlockTransactionsExtRequest };

export type MethodName = CaseCall["method"];

export interface CaseTags {
  op: "masterchainInfo" | "adjacentTransactions" | "traces" | "getBlockTransactionsExt";
  selector?: "hot" | "cold" | "tiny" | "tx_hash" | "msg_hash" | "mc_seqno";
  limit?: number;
  offset?: number;
  actions?: boolean;
  count?: number;
  /** The page asked for by cursor instead of offset. */
  cursor?: boolean;
  /** The answer asked for compressed (see BenchCase.acceptEncoding). */
  encoding?: "gzip" | "br";
}

export type BenchCase = CaseCall & {
  /** Stable id for --cases and for comparing runs, e.g. traces.hot.l100. */
  id: string;
  /** What the request is, with the sizes that explain its cost. */
  title: string;
  /** Path and query of the equivalent REST call (checked to parse into exactly `request`). */
  restPath: string;
  tags: CaseTags;
  /**
   * Ask for the answer compressed with this coding, each protocol its own way: REST and Connect with Accept-Encoding,
   * gRPC and gRPC-web with grpc-accept-encoding. The sizes reported are then the coded bytes on the wire.
   */
  acceptEncoding?: "gzip" | "br";
};

export interface DatasetFacts {
  transactions: number;
  traces: number;
  messages: number;
  actions: number;
  blocks: number;
  accounts: number;
  hot: { account: string; transactions: number; traces: number } | undefined;
  /** The hot account's trace just before the deep offset page (see deepOffset): where its cursor page starts. */
  hotDeepPosition: TracePosition | undefined;
  cold: { account: string; transactions: number; traces: number } | undefined;
  tiny: { account: string; transactions: number; traces: number } | undefined;
  trace: { traceId: string; transactions: number } | undefined;
  txHash: string | undefined;
  adjacent: number;
  msgHash: string | undefined;
  mcSeqno: { seqno: number; completeTraces: number } | undefined;
  block: { workchain: number; shard: string; seqno: number; transactions: number } | undefined;
}

/** The cold account must fill a page of this many traces, the largest the bench asks for. */
const coldPageTraces = 1000;

/** The hot account (most transactions, as the cases pick it), for the tools that measure one of its pages. */
export async function hotAccount(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [hot] = await sql<{ account: string }[]>`select account from transactions group by account order by count(*) desc, account limit 1`;
    if (hot === undefined) throw new Error("no transactions");
    return hot.account;
  } finally {
    await sql.end();
  }
}

const count = async (sql: Sql, table: string) => Number((await sql.unsafe(`select count(*)::bigint as n from ${table}`))[0]?.n ?? 0);

/** Reads the facts the cases are built from. A few full passes over transactions and traces: seconds at 2M. */
export async function readDataset(sql: Sql): Promise<DatasetFacts> {
  const [transactions, traces, messages, actions, blocks] = await Promise.all(
    ["transactions", "traces", "messages", "actions", "blocks"].map((t) => count(sql, t)),
  );

  type AccountCount = { account: string; transactions: number; traces: number };
  const [accounts] = await sql<{ hot: AccountCount | null; cold: AccountCount | null; tiny: AccountCount | null; fewest: AccountCount | null; accounts: number }[]>`
    with counts as materialized (
      select account, count(*)::int as transactions, count(distinct trace_id)::int as traces from transactions group by account)
    select
      (select row_to_json(h) from (select * from counts order by transactions desc, account limit 1) h) as hot,
      (select row_to_json(c) from (select * from counts where traces >= ${coldPageTraces} order by transactions, account limit 1) c) as cold,
      (select row_to_json(t) from (select * from counts where transactions between 2 and 20 order by abs(transactions - 5), account limit 1) t) as tiny,
      (select row_to_json(f) from (select * from counts order by transactions, account limit 1) f) as fewest,
      (select count(*)::int from counts) as accounts`;
  const hot = accounts?.hot ?? undefined;
  const other = (row: AccountCount | null | undefined) => (row === null || row === undefined || row.account === hot?.account ? undefined : row);
  const cold = other(accounts?.cold);
  const tiny = other(accounts?.tiny ?? accounts?.fewest);

  // A mid-sized complete trace a little behind the newest one: its busiest transaction (most messages with a
  // counterpart) for tx_hash and adjacentTransactions, that transaction's inbound message for msg_hash.
  let [trace] = await sql<{ trace_id: string; nodes: number }[]>`
    select trace_id, nodes_::int as nodes from traces
    where state = 'complete' and nodes_ between 3 and 20
    order by end_lt desc, trace_id desc offset 50 limit 1`;
  trace ??= (
    await sql<{ trace_id: string; nodes: number }[]>`
      select trace_id, coalesce(nodes_, 0)::int as nodes from traces order by nodes_ desc nulls last, trace_id limit 1`
  )[0];
  let txHash: string | undefined;
  let adjacent = 0;
  let msgHash: string | undefined;
  if (trace !== undefined) {
    const [busiest] = await sql<{ tx_hash: string; n: number }[]>`
      select M1.tx_hash, count(*)::int as n
      from messages M1 join messages M2 on M2.msg_hash = M1.msg_hash and M2.direction <> M1.direction
      where M1.trace_id = ${trace.trace_id}
      group by M1.tx_hash order by n desc, M1.tx_hash limit 1`;
    txHash = busiest?.tx_hash ?? (await sql<{ hash: string }[]>`select hash from transactions where trace_id = ${trace.trace_id} order by lt limit 1`)[0]?.hash;
    adjacent = busiest?.n ?? 0;
    if (txHash !== undefined) {
      msgHash = (
        await sql<{ msg_hash: string }[]>`
          select msg_hash from messages where tx_hash = ${txHash} order by (direction = 'in') desc, msg_hash limit 1`
      )[0]?.msg_hash;
    }
  }

  const [mc] = await sql<{ seqno: number; n: number }[]>`
    select E.mc_seqno_end as seqno, count(*)::int as n
    from traces E
    where E.state = 'complete'
      and exists (select 1 from blocks B where B.workchain = -1 and B.shard = -9223372036854775808 and B.seqno = E.mc_seqno_end)
    group by E.mc_seqno_end
    order by n desc, seqno desc limit 1`;

  const [block] = await sql<{ workchain: number; shard: string; seqno: number; n: number }[]>`
    select G.workchain, G.shard::text as shard, G.seqno, G.n
    from (
      select block_workchain as workchain, block_shard as shard, block_seqno as seqno, count(*)::int as n
      from transactions group by 1, 2, 3
    ) G
    where exists (select 1 from blocks B where B.workchain = G.workchain and B.shard = G.shard and B.seqno = G.seqno)
    order by G.n desc, G.seqno desc limit 1`;

  // The trace a cursor names to reach the deep offset's page: found once here, at the offset's cost.
  let hotDeepPosition: TracePosition | undefined;
  if (hot !== undefined && hot.traces > 1) {
    const [row] = await sql<{ key: string | null; trace_id: string }[]>`
      select E.end_lt::text as key, E.trace_id from traces E
      where E.trace_id in (select T.trace_id from transactions T where T.account = ${hot.account})
      order by E.end_lt desc, E.trace_id desc offset ${deepOffset(hot.traces, 100) - 1} limit 1`;
    hotDeepPosition = row && { key: row.key, traceId: row.trace_id };
  }

  return {
    hotDeepPosition,
    transactions,
    traces,
    messages,
    actions,
    blocks,
    accounts: accounts?.accounts ?? 0,
    hot,
    cold,
    tiny,
    trace: trace && { traceId: trace.trace_id, transactions: trace.nodes },
    txHash,
    adjacent,
    msgHash,
    mcSeqno: mc && { seqno: mc.seqno, completeTraces: mc.n },
    block: block && { workchain: block.workchain, shard: block.shard, seqno: block.seqno, transactions: block.n },
  };
}

function restQuery(path: string, params: Record<string, string | number | boolean | undefined>): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, String(v));
  const text = query.toString();
  return text === "" ? path : `${path}?${text}`;
}

/** The deep offset: 10,000 traces into the hot account's history, or as deep as a full page still reaches. */
export function deepOffset(traces: number, limit: number): number {
  return traces > limit ? Math.min(10_000, traces - limit) : Math.floor(traces / 2);
}

/** Every case the data allows, in run order. */
export function buildCases(facts: DatasetFacts): BenchCase[] {
  const cases: BenchCase[] = [];
  cases.push({
    id: "masterchainInfo",
    title: "masterchainInfo",
    method: "getMasterchainInfo",
    request: create(GetMasterchainInfoRequestSchema),
    restPath: "/api/v3/masterchainInfo",
    tags: { op: "masterchainInfo" },
  });
  if (facts.txHash !== undefined) {
    cases.push({
      id: "adjacentTransactions",
      title: `adjacentTransactions, ${facts.adjacent} adjacent`,
      method: "getAdjacentTransactions",
      request: create(GetAdjacentTransactionsRequestSchema, { hash: facts.txHash }),
      restPath: restQuery("/api/v3/adjacentTransactions", { hash: facts.txHash }),
      tags: { op: "adjacentTransactions" },
    });
  }
  if (facts.block !== undefined) {
    for (const n of [40, 1000]) {
      const b = facts.block;
      cases.push({
        id: `blockTransactionsExt.c${n}`,
        title: `getBlockTransactionsExt count ${n}, block (${b.workchain},${b.shard},${b.seqno}) of ${b.transactions} tx`,
        method: "getBlockTransactionsExt",
        request: create(GetBlockTransactionsExtRequestSchema, { workchain: b.workchain, shard: b.shard, seqno: b.seqno, count: n }),
        restPath: restQuery("/api/v2/getBlockTransactionsExt", { workchain: b.workchain, shard: b.shard, seqno: b.seqno, count: n }),
        tags: { op: "getBlockTransactionsExt", count: n },
      });
    }
  }
  const traces = (
    id: string,
    title: string,
    selector: NonNullable<CaseTags["selector"]>,
    filter: Partial<Pick<GetTracesRequest, "account" | "txHash" | "msgHash" | "mcSeqno">>,
    page: { limit: number; offset?: number; actions?: boolean; encoding?: "gzip" | "br"; cursor?: string },
  ) => {
    const request = create(GetTracesRequestSchema, {
      ...filter,
      limit: page.limit,
      offset: page.offset,
      includeActions: page.actions ?? false,
      pageToken: page.cursor,
    });
    cases.push({
      id,
      title: `traces, ${title}, limit ${page.limit}${page.offset ? `, offset ${page.offset}` : ""}${page.cursor ? `, by cursor at offset ${deepOffset(facts.hot?.traces ?? 0, 100)}` : ""}${page.actions ? ", with actions" : ""}${page.encoding ? `, ${page.encoding}` : ""}`,
      method: "getTraces",
      request,
      restPath: restQuery("/api/v3/traces", {
        account: filter.account,
        tx_hash: filter.txHash?.[0],
        msg_hash: filter.msgHash?.[0],
        mc_seqno: filter.mcSeqno,
        limit: page.limit,
        offset: page.offset,
        include_actions: page.actions ? true : undefined,
        cursor: page.cursor,
      }),
      tags: { op: "traces", selector, limit: page.limit, offset: page.offset, actions: page.actions ?? false, encoding: page.encoding, cursor: page.cursor !== undefined },
      acceptEncoding: page.encoding,
    });
  };
  const { hot, cold, tiny } = facts;
  if (hot !== undefined) {
    const who = `hot account (${hot.transactions} tx, ${hot.traces} traces)`;
    for (const limit of [10, 100, 1000]) traces(`traces.hot.l${limit}`, who, "hot", { account: hot.account }, { limit });
    // The cost of compression on a page of about 1.5 MB of JSON: compare with traces.hot.l100.
    for (const encoding of ["gzip", "br"] as const) {
      traces(`traces.hot.l100.${encoding}`, who, "hot", { account: hot.account }, { limit: 100, encoding });
    }
    traces("traces.hot.l100.actions", who, "hot", { account: hot.account }, { limit: 100, actions: true });
    traces("traces.hot.l100.offset", who, "hot", { account: hot.account }, { limit: 100, offset: deepOffset(hot.traces, 100) });
    // The same page by cursor, signed with the server's default CURSOR_SECRET.
    if (facts.hotDeepPosition !== undefined) {
      const cursor = encodeTraceCursor("", traceCursorScope({ account: hot.account }, false), facts.hotDeepPosition);
      traces("traces.hot.l100.cursor", who, "hot", { account: hot.account }, { limit: 100, cursor });
    }
  }
  if (cold !== undefined) {
    const who = `cold account (${cold.transactions} tx, ${cold.traces} traces)`;
    for (const limit of [10, 100, 1000]) traces(`traces.cold.l${limit}`, who, "cold", { account: cold.account }, { limit });
  }
  if (tiny !== undefined) {
    const who = `tiny account (${tiny.transactions} tx, ${tiny.traces} traces)`;
    traces("traces.tiny.l10", who, "tiny", { account: tiny.account }, { limit: 10 });
  }
  if (facts.txHash !== undefined) {
    const who = `tx hash (trace of ${facts.trace?.transactions ?? "?"} tx)`;
    traces("traces.tx_hash", who, "tx_hash", { txHash: [facts.txHash] }, { limit: 10 });
    traces("traces.tx_hash.actions", who, "tx_hash", { txHash: [facts.txHash] }, { limit: 10, actions: true });
  }
  if (facts.msgHash !== undefined) {
    traces("traces.msg_hash", "msg hash", "msg_hash", { msgHash: [facts.msgHash] }, { limit: 10 });
  }
  if (facts.mcSeqno !== undefined) {
    traces(
      "traces.mc_seqno.l100",
      `mc_seqno ${facts.mcSeqno.seqno} (${facts.mcSeqno.completeTraces} complete traces)`,
      "mc_seqno",
      { mcSeqno: facts.mcSeqno.seqno },
      { limit: 100 },
    );
  }
  for (const c of cases) checkRestEquivalence(c);
  return cases;
}

/**
 * Whether `--quick` runs a case when no --cases are given: the cases the targets judge, but not the compressed
 * answers (compression has its own comparison, bench/README.md section 11), the hot account's deep pages (offset,
 * cursor: the same page as traces.hot.l100 after a longer index walk, which the full bench's floor and EXPLAIN judge),
 * the pages of 1000 traces, nor the cold account's beyond 10: on the 200k index the cold account's traces are large
 * (its page of 100 is 10 MB of JSON, 1.3 s; of 1000, 100 MB) and each such case takes half a minute at concurrency
 * 16, where admission serves them a few at a time. The full bench runs them all.
 */
export function inQuickBench(c: BenchCase): boolean {
  const deep = c.tags.offset !== undefined || c.tags.cursor === true;
  const large = c.tags.limit === 1000 || (c.tags.selector === "cold" && (c.tags.limit ?? 0) > 10);
  return c.tags.encoding === undefined && !deep && !large;
}

export function inputSchema(method: MethodName): DescMessage {
  return TonQueryService.method[method].input;
}

export function outputSchema(method: MethodName): DescMessage {
  return TonQueryService.method[method].output;
}

/** The REST call must reach the handler with exactly the RPC request, or the protocols would not be comparable. */
function checkRestEquivalence(c: BenchCase): void {
  const url = new URL(c.restPath, "http://localhost");
  const q = url.searchParams;
  let parsed: MessageShape<DescMessage>;
  switch (c.method) {
    case "getMasterchainInfo":
      parsed = create(GetMasterchainInfoRequestSchema);
      break;
    case "getAdjacentTransactions":
      parsed = adjacentTransactionsQuery(q);
      break;
    case "getTraces":
      parsed = tracesQuery(q);
      break;
    case "getBlockTransactionsExt":
      parsed = blockTransactionsExtQuery(q);
      break;
  }
  if (!equals(inputSchema(c.method), parsed, c.request)) {
    throw new Error(`case ${c.id}: REST ${c.restPath} does not parse into the RPC request`);
  }
}
