// The SQL floor: the statements a handler runs for one request, recorded by running the handler in-process, then
// replayed through `postgres` alone with the same concurrency structure.
//
// Recording. The handler gets a `sql` that is the real client behind a Proxy: every query the handler builds is
// the real postgres Query, with an own `then` that notes when the handler awaited it (the statement is issued) and
// when it settled. Fragments (sql`` pieces nested in other queries) are never awaited and so never recorded. The
// statement text and parameters are read from the Query after it ran (postgres sets .string and .parameters when
// it builds the statement), which is the same text and values the `debug` option reports; the client's `debug`
// hook counts the statements sent during the request as a cross-check that nothing bypassed the Proxy.
//
// Structure. Each statement depends on the statements that had settled before it was issued (happens-before):
// the handler cannot have needed anything else, and it did wait for those. Promise.all rounds therefore replay as
// concurrent statements, a chain (rows, then their messages) as a chain. Only the direct dependencies are kept.
//
// Replay. runQuery with sql.unsafe(text, parameters, { prepare }) on pools opened like the server's (databaseOptions, openDatabase, same sizes,
// same session settings), each statement on the pool it was recorded from: the same prepared or per-call-planned
// statements, the same parameter types (postgres infers them from the same JS values), the same row parsing, but
// none of the handler's own work (protobuf, presentation, HTTP).

import { createHandlerContext } from "@connectrpc/connect";
import postgres from "postgres";
import { TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import type { Config } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase, runQuery, transactionFrame, type Database } from "../src/db/client.ts";
import { getAdjacentTransactions } from "../src/handlers/adjacent-transactions.ts";
import { getBlockTransactionsExt } from "../src/handlers/block-transactions-ext.ts";
import { getMasterchainInfo } from "../src/handlers/masterchain-info.ts";
import { getTraces } from "../src/handlers/traces.ts";
import type { ServiceDeps } from "../src/service/deps.ts";
import type { BenchCase } from "./cases.ts";

export interface CapturedStatement {
  query: string;
  parameters: unknown[];
  /** Sent as a named prepared statement (Database.sql) or planned per call (Database.sqlCustomPlan). */
  prepared: boolean;
  /** Indices of the statements that must have completed before this one is sent. */
  after: number[];
  /** Rows the statement returned when captured. */
  rows: number;
  /** Time from issue to completion in the capture run (one sample, for orientation only). */
  capturedMs: number;
}

export interface Capture {
  statements: CapturedStatement[];
  /** Statements the client reported through `debug` while the handler ran (must equal statements.length). */
  debugCount: number;
  /** A size summary of the handler's response, to check the server's answers against. */
  response: ResponseSummary;
}

export interface ResponseSummary {
  items: number;
  description: string;
}

type QueryLike = Promise<unknown> & { string?: string; parameters?: unknown[]; strings?: unknown };

interface Recorded {
  query: QueryLike;
  prepared: boolean;
  issued: number;
  settled: number | undefined;
  issuedAt: number;
  settledAt: number;
  rows: number;
}

export interface Recorder {
  db: Database;
  record<T>(run: () => Promise<T>): Promise<{ result: T; capture: Omit<Capture, "response"> }>;
  end(): Promise<void>;
}

/** Clients opened like the server's pools, whose queries can be recorded. */
export function createRecorder(url: string, config: Config): Recorder {
  let debugCount = 0;
  let recording: Recorded[] | undefined;
  let seq = 0;
  const frame: readonly string[] = Object.values(transactionFrame);
  const db = openDatabase(
    databaseOptions(config, url, {
      observe: {
        built: (statement, prepared) => instrument(statement as unknown as QueryLike, prepared),
        sent: (text) => {
          if (recording !== undefined && !frame.includes(text)) debugCount++;
        },
      },
    }),
  );

  const instrument = (q: QueryLike, isPrepared: boolean) => {
    const originalThen = q.then;
    let entry: Recorded | undefined;
    Object.defineProperty(q, "then", {
      configurable: true,
      value(onFulfilled?: (v: unknown) => unknown, onRejected?: (e: unknown) => unknown) {
        if (entry === undefined && recording !== undefined) {
          entry = { query: q, prepared: isPrepared, issued: seq++, settled: undefined, issuedAt: performance.now(), settledAt: 0, rows: 0 };
          recording.push(entry);
        }
        const settle = (rows: number) => {
          if (entry !== undefined && entry.settled === undefined) {
            entry.settled = seq++;
            entry.settledAt = performance.now();
            entry.rows = rows;
          }
        };
        return originalThen.call(
          q,
          (v: unknown) => {
            settle(Array.isArray(v) ? v.length : 0);
            return onFulfilled ? onFulfilled(v) : v;
          },
          (e: unknown) => {
            settle(0);
            if (onRejected) return onRejected(e);
            throw e;
          },
        );
      },
    });
  };

  return {
    db,
    async record(run) {
      recording = [];
      debugCount = 0;
      seq = 0;
      const entries = recording;
      try {
        const result = await run();
        return { result, capture: { statements: toStatements(entries), debugCount } };
      } finally {
        recording = undefined;
      }
    },
    end: () => db.end(),
  };
}

function toStatements(entries: Recorded[]): CapturedStatement[] {
  const ordered = [...entries].sort((a, b) => a.issued - b.issued);
  // All statements settled before each one was issued, then only those not implied by another dependency.
  const before = ordered.map((s) => ordered.flatMap((t, j) => (t.settled !== undefined && t.settled < s.issued ? [j] : [])));
  return ordered.map((s, i) => {
    const all = before[i] ?? [];
    const implied = new Set(all.flatMap((j) => before[j] ?? []));
    if (s.query.string === undefined || s.query.parameters === undefined) throw new Error("a recorded query was never sent");
    return {
      query: s.query.string,
      parameters: [...s.query.parameters],
      prepared: s.prepared,
      after: all.filter((j) => !implied.has(j)),
      rows: s.rows,
      capturedMs: s.settledAt - s.issuedAt,
    };
  });
}

/** Calls the case's handler in-process, as the service's doors do. */
export function callHandler(deps: ServiceDeps, c: BenchCase): Promise<unknown> {
  const method = TonQueryService.method[c.method];
  const context = createHandlerContext({
    service: TonQueryService,
    method,
    protocolName: "bench",
    requestMethod: "POST",
    url: `/${TonQueryService.typeName}/${method.name}`,
    timeoutMs: deps.config.requestTimeoutMs,
  });
  switch (c.method) {
    case "getMasterchainInfo":
      return getMasterchainInfo(deps, c.request, context);
    case "getAdjacentTransactions":
      return getAdjacentTransactions(deps, c.request, context);
    case "getTraces":
      return getTraces(deps, c.request, context);
    case "getBlockTransactionsExt":
      return getBlockTransactionsExt(deps, c.request, context);
  }
}

/** The number of top-level items of a response (traces, transactions, blocks), decoded or as REST JSON. */
export function summarize(method: BenchCase["method"], response: unknown): ResponseSummary {
  const r = response as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.length : 0);
  switch (method) {
    case "getMasterchainInfo":
      return { items: (r.first ? 1 : 0) + (r.last ? 1 : 0), description: "blocks" };
    case "getAdjacentTransactions":
      return { items: list(r.transactions), description: "transactions" };
    case "getTraces":
      return { items: list(r.traces), description: "traces" };
    case "getBlockTransactionsExt": {
      const result = (r.result ?? r) as Record<string, unknown>;
      return { items: list(result.transactions), description: "transactions" };
    }
  }
}

/**
 * Runs the handler a few times (warming the pool, the prepared statements and the caches), then records one
 * request. The last run is the one recorded, so the structure reflects a warm server.
 */
export async function captureCase(recorder: Recorder, config: Config, c: BenchCase, warmups = 2): Promise<Capture> {
  const deps: ServiceDeps = { db: recorder.db, config };
  for (let i = 0; i < warmups; i++) await callHandler(deps, c);
  const { result, capture } = await recorder.record(() => callHandler(deps, c));
  return { ...capture, response: summarize(c.method, result) };
}

/**
 * One request's worth of the captured statements, with the captured dependencies. An abort rejects at once; the
 * statements not yet started never start, those running finish (see runQuery).
 */
export function replay(db: Database, statements: readonly CapturedStatement[], signal: AbortSignal = new AbortController().signal): Promise<void> {
  const done: Promise<unknown>[] = [];
  for (const s of statements) {
    // Through runQuery, as the service runs its statements: the same read-only transaction around each.
    const run = () =>
      runQuery(signal, s.prepared ? db.sql : db.sqlCustomPlan, "floor_replay", (tx) =>
        tx.unsafe(s.query, s.parameters as postgres.ParameterOrJSON<never>[], { prepare: s.prepared }),
      );
    done.push(s.after.length === 0 ? Promise.resolve().then(run) : Promise.all(s.after.map((j) => done[j])).then(run));
  }
  for (const d of done) d.catch(() => {});
  return Promise.all(done).then(() => undefined);
}
