import postgres from "postgres";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { abortError, untilAborted } from "../abort.ts";
import type { Config } from "../config.ts";
import { log } from "../log.ts";
import type { PoolState } from "../observability/metrics.ts";
import type { StatementTelemetry } from "../observability/telemetry.ts";
import { DatabaseAvailability } from "./availability.ts";
import { ConnectionGate, isUrgent } from "./connection-gate.ts";

export type Sql = postgres.Sql;

/** A database URL fit for logs: the password masked. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable database URL)";
  }
}

export interface DatabaseOptions {
  url: string;
  /** Connections in all, shared between the two pools below (at least one each). */
  poolSize: number;
  statementTimeoutMs: number;
  /** Bound of opening a connection, and of the availability probe. */
  connectTimeoutMs: number;
  /**
   * The server runs every connection in one shared session (the embedded PGlite): a transaction opened by one
   * connection would take in the others' statements, so statements run bare there, one at a time, and that session
   * is made read-only once for all (see startDemoDatabase).
   */
  sharedSession?: boolean;
  /** For the bench's SQL floor: sees each statement as built (before it is sent) and each one the driver sends. */
  observe?: StatementObserver;
  /** Measures and traces each statement by its name (see runQuery). */
  telemetry?: StatementTelemetry;
}

export interface StatementObserver {
  built(statement: PromiseLike<unknown>, prepared: boolean): void;
  sent(text: string): void;
}

/**
 * The service's connections, in two pools that differ only in how PostgreSQL plans their statements.
 *
 * `sql` sends named prepared statements: parsed once per connection, and after five executions PostgreSQL may
 * settle on one generic plan for all values. That is right for lookups by key, whose best plan is the same for
 * every value. `sqlCustomPlan` sends unnamed statements, planned for each call's own values: for selections whose
 * best plan depends on them. Traces of an account are the case in point: for an account in a fifth of all traces
 * the best plan walks the traces index in page order and stops after the page (3 ms at limit 100 on 2M
 * transactions), for an account with five transactions it starts from that account's rows; the generic plan,
 * costed for an average account, read a hot account's whole history (0.6 s).
 *
 * Both are handles: data access builds statements and fragments with them and hands them to {@link runQuery},
 * which runs them on the pool's live connections (replaced whenever the database goes down, so that no connection
 * left hanging by an outage is ever used again).
 */
export interface Database {
  sql: Sql;
  sqlCustomPlan: Sql;
  availability: DatabaseAvailability;
  /** The pools' connections in use and statements waiting, for the metrics. */
  poolStates(): PoolState[];
  end(): Promise<void>;
}

/** The database options the service's configuration gives. */
export function databaseOptions(config: Config, url: string, extra: Pick<DatabaseOptions, "sharedSession" | "observe" | "telemetry"> = {}): DatabaseOptions {
  return { url, poolSize: config.poolSize, statementTimeoutMs: config.statementTimeoutMs, connectTimeoutMs: config.dbConnectTimeoutMs, ...extra };
}

/** What runQuery needs to know about the pool a handle stands for. */
interface Pool {
  /** Its label in the metrics. */
  name: "prepared" | "custom_plan";
  live: Sql;
  open: () => Sql;
  readOnlyTransactions: boolean;
  availability: DatabaseAvailability;
  observe: ((statement: PromiseLike<unknown>) => void) | undefined;
  telemetry: StatementTelemetry | undefined;
  gate: ConnectionGate;
}

const pools = new WeakMap<Sql, Pool>();

/** Between probes while the database answers: a black hole is noticed within this plus the probe's bound. */
const probeIntervalUpMs = 1000;
/** Between probes while it does not: it is known to be back within this. */
const probeIntervalDownMs = 250;

/**
 * Opens the pools the service reads through, and starts watching the database's availability. Every statement
 * runs in a read-only transaction (see {@link runQuery}); sessions are read-only by default too, and PostgreSQL
 * itself stops a runaway statement even if the service forgets to.
 */
export function openDatabase(options: DatabaseOptions): Database {
  assertDriverPatched();
  const customPlanConnections = Math.max(1, Math.ceil(options.poolSize / 5));
  // A shared session answers one statement at a time: opening a connection, or the probe, may wait behind any
  // statement for as long as the statement timeout allows.
  const connectTimeoutMs = options.sharedSession === true ? options.connectTimeoutMs + options.statementTimeoutMs : options.connectTimeoutMs;
  const connectTimeoutSeconds = connectTimeoutMs / 1000;
  const connect = (max: number, prepare: boolean) =>
    postgres(options.url, {
      max,
      prepare,
      connect_timeout: connectTimeoutSeconds,
      idle_timeout: 60,
      max_lifetime: 30 * 60,
      onnotice: () => {},
      ...(options.observe && { debug: (_connection: number, text: string) => options.observe?.sent(text) }),
      connection: {
        application_name: "tonquery",
        default_transaction_read_only: true,
        statement_timeout: options.statementTimeoutMs,
      },
    });

  const members: Pool[] = [];
  // A shared session has one unnamed statement and one unnamed portal for all connections: statements from two
  // connections interleaving their Parse, Bind and Execute (a new connection's type lookup included) would run
  // each other's (08P01, 34000). It runs one statement at a time anyway, so the service, probe included, sends it
  // one at a time.
  const sharedGate = options.sharedSession === true ? new ConnectionGate(1) : undefined;
  const health = healthProbe(options.url);
  const probe =
    sharedGate === undefined
      ? health.probe
      : async (timeoutMs: number) => {
          const release = await sharedGate.acquire(AbortSignal.timeout(timeoutMs), true);
          try {
            await health.probe(timeoutMs);
          } finally {
            release();
          }
        };
  const availability = new DatabaseAvailability(probe, {
    timeoutMs: connectTimeoutMs,
    upIntervalMs: probeIntervalUpMs,
    downIntervalMs: probeIntervalDownMs,
    // A connection that lost its peer without a word (a black hole) would stay checked out for good: drop them all.
    onDown: () => {
      for (const pool of members) {
        void pool.live.end({ timeout: 0 });
        pool.live = pool.open();
      }
    },
    onChange: (up, downMs) => (up ? log.info("database available again", { downMs }) : log.error("database unavailable")),
  });
  const handle = (max: number, prepare: boolean): Sql => {
    const open = () => connect(max, prepare);
    const live = open();
    const observe = options.observe && ((statement: PromiseLike<unknown>) => options.observe?.built(statement, prepare));
    const gate = sharedGate ?? new ConnectionGate(max);
    const name = prepare ? "prepared" : "custom_plan";
    const pool: Pool = { name, live, open, readOnlyTransactions: options.sharedSession !== true, availability, observe, telemetry: options.telemetry, gate };
    members.push(pool);
    pools.set(live, pool);
    return live;
  };
  const sql = handle(Math.max(1, options.poolSize - customPlanConnections), true);
  const sqlCustomPlan = handle(customPlanConnections, false);
  availability.start();
  return {
    sql,
    sqlCustomPlan,
    availability,
    poolStates: () =>
      sharedGate === undefined
        ? members.map((pool) => ({ pool: pool.name, max: pool.gate.capacity, inUse: pool.gate.inUse, waiting: pool.gate.waiting }))
        : [{ pool: "shared", max: sharedGate.capacity, inUse: sharedGate.inUse, waiting: sharedGate.waiting }],
    end: async () => {
      availability.stop();
      await Promise.all([...members.map((pool) => pool.live.end({ timeout: 5 })), health.close()]);
    },
  };
}

/**
 * postgres.js 3.4.9 as installed by npm ci, with patches/postgres+3.4.9.patch applied by its postinstall step: without
 * it a statement that fails mid-result corrupts the next one on its connection. An install that skipped scripts
 * (`--ignore-scripts`) would serve wrong answers under load, so the service refuses to start on it.
 */
function assertDriverPatched(): void {
  const connection = new URL("connection.js", import.meta.resolve("postgres"));
  if (!readFileSync(connection, "utf8").includes("tonquery patch")) {
    throw new Error(`${fileURLToPath(connection)} lacks patches/postgres+3.4.9.patch: run npm ci (or npx patch-package) without --ignore-scripts`);
  }
}

/**
 * The availability probe: one round trip on a connection of its own, bounded by `timeoutMs` whatever the network
 * does. The connection is kept while it answers and replaced after a failure, since a hung one never recovers.
 */
function healthProbe(url: string): { probe: (timeoutMs: number) => Promise<void>; close: () => Promise<void> } {
  const open = (timeoutMs: number) =>
    postgres(url, { max: 1, connect_timeout: timeoutMs / 1000, idle_timeout: 0, onnotice: () => {}, connection: { application_name: "tonquery-probe" } });
  let connection: Sql | undefined;
  const probe = async (timeoutMs: number) => {
    connection ??= open(timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    // Should the timeout win, the query is rejected later, when its connection is dropped: nobody waits for it then.
    const answer = connection`select 1`;
    answer.catch(() => {});
    try {
      await Promise.race([
        answer,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      void connection.end({ timeout: 0 });
      connection = undefined;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
  return { probe, close: async () => void (await connection?.end({ timeout: 1 })) };
}

const connectionErrorCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  // PostgreSQL: shutting down, cannot connect now, too many connections.
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

function errorCode(err: unknown): string | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Translates a failure of the database into the error the caller should see: an outage is retryable
 * (Unavailable, 503), a statement past its timeout is DeadlineExceeded (504), anything else is an
 * internal error whose details stay in the log, never in the response.
 */
export function databaseError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const code = errorCode(err);
  if (code === "57014") {
    return new ConnectError("timeout: the query took longer than the statement timeout", Code.DeadlineExceeded, undefined, undefined, err);
  }
  if ((code !== undefined && (connectionErrorCodes.has(code) || code.startsWith("08"))) || err instanceof AggregateError) {
    return new ConnectError("database unavailable", Code.Unavailable, undefined, undefined, err);
  }
  return new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/**
 * Runs one statement for a request, built by `build` on a connection of `pool` reserved for it, and maps its
 * failures through {@link databaseError}. `statement` names it in the metrics and traces: a fixed name per call
 * site (never built from values), so that the metrics have one series per statement of the code.
 *
 * - The statement runs inside a read-only transaction (BEGIN READ ONLY, the statement and COMMIT are sent in one
 *   write, so this costs no extra round trip): a session default could be turned off by a statement, a
 *   transaction's read-only mode cannot be once it has run a query.
 * - A request whose signal has fired (client gone, deadline passed, shutdown) never starts its statement, even
 *   when its turn for a connection comes after that; a statement already sent is left to finish or to hit the
 *   statement timeout, because PostgreSQL's cancel request hits whatever the backend runs when it arrives, which
 *   may already be the next request's statement.
 * - While the database is down the request fails at once with Unavailable, and a statement in flight when it goes
 *   down ends with it rather than with the request's deadline.
 */
export async function runQuery<T extends readonly postgres.MaybeRow[]>(
  signal: AbortSignal,
  pool: Sql,
  statement: string,
  build: (sql: Sql) => postgres.PendingQuery<T>,
): Promise<postgres.RowList<T>> {
  const member = pools.get(pool);
  if (member === undefined) throw new Error("runQuery: not a pool opened by openDatabase");
  if (signal.aborted) throw abortError(signal);
  // Fails with Unavailable at once while the database is known to be down.
  await member.availability.ready();
  const stop = AbortSignal.any([signal, member.availability.downSignal]);
  let release: () => void;
  try {
    release = await member.gate.acquire(stop, isUrgent(signal));
  } catch (err) {
    throw failure(member, stop, err);
  }
  let running: Promise<postgres.RowList<T>>;
  try {
    // Holding a permit, the connection is free at once (see ConnectionGate).
    const connection = await member.live.reserve();
    if (stop.aborted) {
      // Opening the connection took long enough for the request to end: it is not started.
      connection.release();
      throw abortError(stop);
    }
    running = runReserved(connection, statement, build, member);
  } catch (err) {
    release();
    throw failure(member, stop, err);
  }
  void running.then(release, release);
  try {
    return await untilAborted(stop, running);
  } catch (err) {
    throw failure(member, stop, err);
  }
}

/** The statements runQuery sends around each of the service's own. */
export const transactionFrame = { begin: "begin read only", commit: "commit" } as const;

async function runReserved<T extends readonly postgres.MaybeRow[]>(
  connection: postgres.ReservedSql,
  name: string,
  build: (sql: Sql) => postgres.PendingQuery<T>,
  member: Pool,
): Promise<postgres.RowList<T>> {
  try {
    const built = build(connection);
    member.observe?.(built);
    const ended = member.telemetry?.statementStarted(name);
    if (!member.readOnlyTransactions) {
      try {
        const rows = await built;
        ended?.();
        return rows;
      } catch (err) {
        ended?.(err);
        throw err;
      }
    }
    // Queued in this order in the same tick, the three go out in one write.
    const begin = connection.unsafe(transactionFrame.begin).execute();
    const statement = built.execute();
    const commit = connection.unsafe(transactionFrame.commit).execute();
    const [opened, result, closed] = await Promise.allSettled([begin, statement, commit]);
    ended?.(result.status === "rejected" ? result.reason : opened.status === "rejected" ? opened.reason : undefined);
    if (result.status === "rejected") throw result.reason;
    if (opened.status === "rejected") throw opened.reason;
    if (closed.status === "rejected") throw closed.reason;
    return result.value;
  } finally {
    connection.release();
  }
}

/** The error a statement ends with: the signal's when it fired, else the database's (a connection failure prompts a probe). */
function failure(member: Pool, stop: AbortSignal, err: unknown): ConnectError {
  if (stop.aborted) return abortError(stop);
  const error = databaseError(err);
  if (error.code === Code.Unavailable) member.availability.suspect();
  return error;
}
