import postgres from "postgres";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Code, ConnectError } from "@connectrpc/connect";
import { abortError, untilAborted } from "../runtime/abort.ts";
import type { Config } from "../runtime/config.ts";
import type { PoolState } from "../observability/metrics.ts";
import type { StatementTelemetry } from "../observability/telemetry.ts";
import type { DatabaseAvailability } from "./availability.ts";
import { isUrgent } from "./connection-gate.ts";
import { cutIfSilent, leaseConnection } from "./lease.ts";
import { Member, type PoolKind } from "./member.ts";
import { Cluster, type MemberStats, ReplicaLag, type RequestRoute, routeOfRequest } from "./replicas.ts";
import { type RequestSnapshot, type SnapshotReads, snapshotLost } from "./snapshot.ts";
import { type BuildStatement, type Sql, sendFramed, type StatementRun, transactionFrame } from "./statement.ts";

export type { Sql } from "./statement.ts";
export { transactionFrame } from "./statement.ts";
export { isSnapshotLost } from "./snapshot.ts";

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
  /** The primary. */
  url: string;
  /** Its streaming replicas, which take the reads while they answer and keep up (see Cluster). */
  replicaUrls: readonly string[];
  /** A replica further behind than this takes no new requests. */
  maxReplicaLagMs: number;
  /** Between probes of each member while it answers: a black hole is noticed within this plus the probe's bound. */
  probeIntervalMs: number;
  /** Connections in all per member, shared between the two pools below (at least one each). */
  poolSize: number;
  statementTimeoutMs: number;
  /**
   * PostgreSQL ends a transaction left idle longer than this: the backstop, should the service ever fail to end a
   * request's snapshot, against a snapshot that holds back vacuum for good. No request idles longer than its deadline.
   */
  snapshotIdleMs: number;
  /** Bound of opening a connection, and of the availability probe. */
  connectTimeoutMs: number;
  /**
   * The server runs every connection in one shared session (the embedded PGlite): its socket runs the messages of
   * all connections one at a time, those of an open transaction alone. A statement sent outside a transaction
   * could have its unnamed statement replaced by another connection's between its Parse and its Bind, so the
   * service sends every statement inside one (begun by a single simple-protocol message), one at a time.
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
 * which runs them on the same pool of the member that serves the request (the primary or a replica, see
 * Cluster), on its live connections (replaced whenever the member goes down, so that no connection left hanging by
 * an outage is ever used again). Used directly, they are the primary's.
 */
export interface Database {
  sql: Sql;
  sqlCustomPlan: Sql;
  /** The primary's availability. */
  availability: DatabaseAvailability;
  /** The pools' connections in use and statements waiting, for the metrics. */
  poolStates(): PoolState[];
  /** Resolves when some member can serve reads; fails fast with Unavailable while none can. */
  ready(): Promise<void>;
  /** Whether some member can serve reads, as last probed (no probing): what ready() would find without waiting. */
  serving(): boolean;
  /** Calls `listener` whenever serving() may have changed, until the returned function is called. */
  onServingChange(listener: () => void): () => void;
  /**
   * Where the statements run under `signal` (one request's) go: to a member known to hold at least masterchain
   * block `minSeqno` when given. With `snapshot`, they all read one snapshot of the index, serially or in parallel
   * (see RequestSnapshot), held until the route's `end()`.
   */
  route(signal: AbortSignal, minSeqno?: number, snapshot?: SnapshotReads): RequestRoute;
  /**
   * With replicas: the newest masterchain seqno of the member that ran the request's statements, as of after the
   * last of them (a bound of everything the request read; X-Index-Seqno). Costs one statement, unless the last
   * statement reported it itself (see {@link noteIndexSeqno}). Undefined without replicas.
   */
  indexSeqno(signal: AbortSignal): Promise<number | undefined>;
  /** Per member: state, lag and counts, for metrics. */
  memberStats(): MemberStats[];
  end(): Promise<void>;
}

/** The database options the service's configuration gives. */
export function databaseOptions(config: Config, url: string, extra: Pick<DatabaseOptions, "sharedSession" | "observe" | "telemetry"> = {}): DatabaseOptions {
  return {
    url,
    replicaUrls: config.databaseReplicaUrls,
    maxReplicaLagMs: config.maxReplicaLagMs,
    probeIntervalMs: config.dbProbeIntervalMs,
    poolSize: config.poolSize,
    statementTimeoutMs: config.statementTimeoutMs,
    snapshotIdleMs: config.requestTimeoutMs,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    ...extra,
  };
}

/** What a handle stands for: a pool kind, on whichever member serves the request. */
const handles = new WeakMap<Sql, { cluster: Cluster; kind: PoolKind; telemetry: StatementTelemetry | undefined }>();

/** A pool kind's label in the metrics. */
const poolLabels: Record<PoolKind, string> = { prepared: "prepared", customPlan: "custom_plan" };

/**
 * Opens the pools the service reads through, on the primary and on each replica (a member each, with
 * `poolSize` connections of its own), and starts watching their availability and positions. Every statement
 * runs in a read-only transaction (see {@link runQuery}); sessions are read-only by default too, and PostgreSQL
 * itself stops a runaway statement even if the service forgets to.
 */
export function openDatabase(options: DatabaseOptions): Database {
  assertDriverPatched();
  const { replicaUrls, probeIntervalMs, maxReplicaLagMs } = options;
  // The primary's positions are kept long enough to date any lag up to the bound, and a little more.
  const lag = new ReplicaLag(maxReplicaLagMs + 2 * probeIntervalMs);
  const member = (url: string, role: Member["role"]) =>
    new Member({
      ...options,
      url,
      role,
      label: redactUrl(url),
      // Positions matter only to choose between members (probes start once the cluster below exists).
      ...(replicaUrls.length > 0 && { onPosition: (m, position) => cluster.positionRead(m, position) }),
    });
  const primary = member(options.url, "primary");
  const cluster = new Cluster(
    primary,
    replicaUrls.map((url) => member(url, "replica")),
    lag,
    maxReplicaLagMs,
  );
  const handle = (kind: PoolKind): Sql => {
    const sql = primary.pools[kind].live;
    handles.set(sql, { cluster, kind, telemetry: options.telemetry });
    return sql;
  };
  const sql = handle("prepared");
  for (const m of cluster.members) m.start();
  return {
    sql,
    sqlCustomPlan: handle("customPlan"),
    availability: primary.availability,
    // One series per pool kind, summed over the members: the members' pools are alike (poolSize each), and the
    // per-member split is in memberStats.
    poolStates: () => {
      if (options.sharedSession === true) {
        const gate = primary.pools.prepared.gate;
        return [{ pool: "shared", max: gate.capacity, inUse: gate.inUse, waiting: gate.waiting }];
      }
      return (Object.keys(poolLabels) as PoolKind[]).map((kind) => {
        const state: PoolState = { pool: poolLabels[kind], max: 0, inUse: 0, waiting: 0 };
        for (const m of cluster.members) {
          const { gate } = m.pools[kind];
          state.max += gate.capacity;
          state.inUse += gate.inUse;
          state.waiting += gate.waiting;
        }
        return state;
      });
    },
    ready: () => cluster.ready(),
    serving: () => cluster.canServe(),
    onServingChange: (listener) => cluster.subscribe(listener),
    route: (signal, minSeqno, snapshot) => cluster.route(signal, minSeqno, snapshot),
    indexSeqno: async (signal) => {
      if (replicaUrls.length === 0) return undefined;
      const route = cluster.routeOf(signal);
      if (route.indexSeqno !== undefined) return route.indexSeqno;
      const [row] = await runQuery(signal, sql, "index_seqno", (tx) => tx<{ seqno: number }[]>`select seqno from blocks where workchain = -1 order by seqno desc limit 1`);
      noteIndexSeqno(signal, row?.seqno);
      return row?.seqno;
    },
    memberStats: () => cluster.stats(),
    end: async () => {
      await Promise.all(cluster.members.map((m) => m.end()));
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
 * Runs one statement for a request, built by `build` on a connection reserved for it, on the member that serves
 * the request (see Cluster), and maps its failures through {@link databaseError}. `statement` names it in the
 * metrics and traces: a fixed name per call site (never built from values), so that the metrics have one series
 * per statement of the code.
 *
 * - The statement runs inside a read-only transaction (BEGIN READ ONLY, the statement and COMMIT are sent in one
 *   write, so this costs no extra round trip): a session default could be turned off by a statement, a
 *   transaction's read-only mode cannot be once it has run a query.
 * - A request whose signal has fired (client gone, deadline passed, shutdown) never starts its statement, even
 *   when its turn for a connection comes after that; a statement already sent is left to finish or to hit the
 *   statement timeout, because PostgreSQL's cancel request hits whatever the backend runs when it arrives, which
 *   may already be the next request's statement.
 * - While the member is down the statement fails at once, and a statement in flight when it goes down ends with
 *   it rather than with the request's deadline. Then, or when its connection fails, or a replica cancels it for
 *   a conflict with replay, the statement runs again on another member (it only reads; see Cluster for which),
 *   and the request's later statements follow it there; with no member left it fails with Unavailable.
 */
export async function runQuery<T extends readonly postgres.MaybeRow[]>(
  signal: AbortSignal,
  handle: Sql,
  statement: string,
  build: BuildStatement<T>,
): Promise<postgres.RowList<T>> {
  const target = handles.get(handle);
  if (target === undefined) throw new Error("runQuery: not a pool opened by openDatabase");
  if (signal.aborted) throw abortError(signal);
  const { cluster, kind, telemetry } = target;
  const route = cluster.routeOf(signal);
  const { snapshot } = route;
  for (;;) {
    // A request whose snapshot is taken stays on the snapshot's member, whatever happens to it.
    const member = snapshot?.member ?? cluster.memberFor(route);
    if (member === undefined) throw new ConnectError("database unavailable", Code.Unavailable);
    member.inFlight++;
    try {
      const run: StatementRun<T> = { name: statement, build, pool: member.pools[kind], telemetry };
      const rows = snapshot === undefined ? await runOn(signal, member, run) : await runInSnapshot(signal, member, snapshot, run);
      route.read();
      return rows;
    } catch (err) {
      if (!(err instanceof ConnectError) || signal.aborted || !mayRunElsewhere(err)) throw err;
      if (snapshot?.taken === true) {
        cluster.reroute(route, member);
        throw snapshotLost(err);
      }
      if (!cluster.reroute(route, member)) throw err;
    } finally {
      member.inFlight--;
    }
  }
}

/**
 * A statement that has just run under `signal` read the newest masterchain block of its member (masterchainInfo):
 * that seqno bounds what the request has read so far, so its X-Index-Seqno costs no further statement.
 */
export function noteIndexSeqno(signal: AbortSignal, seqno: number | undefined): void {
  if (seqno !== undefined) routeOfRequest(signal)?.bounded(seqno);
}

/** A failure another member may not share: the member is down or its connection failed, or replay cancelled the statement. */
function mayRunElsewhere(error: ConnectError): boolean {
  return error.code === Code.Unavailable || errorCode(error.cause) === recoveryConflict;
}

/** SQLSTATE 40001 on a replica: the statement was cancelled because replay had to remove rows it could still see. */
const recoveryConflict = "40001";

/** What stops a statement: its request's signal, or its member going down. */
const statementStops = new WeakMap<AbortSignal, { down: AbortSignal; stop: AbortSignal }>();

/**
 * The request's signal joined to the member's down signal, made once per request and member rather than per
 * statement: AbortSignal.any is a new signal with weak references to follow its sources, a few percent of the
 * server's CPU on small requests when made for each of their five or six statements.
 */
function statementStop(signal: AbortSignal, member: Member): AbortSignal {
  const down = member.availability.downSignal;
  const known = statementStops.get(signal);
  if (known?.down === down) return known.stop;
  const stop = AbortSignal.any([signal, down]);
  statementStops.set(signal, { down, stop });
  return stop;
}

async function runOn<T extends readonly postgres.MaybeRow[]>(signal: AbortSignal, member: Member, run: StatementRun<T>): Promise<postgres.RowList<T>> {
  const { pool } = run;
  // Fails with Unavailable at once while the member is known to be down.
  await member.availability.ready();
  const stop = statementStop(signal, member);
  let release: () => void;
  try {
    release = await pool.gate.acquire(stop, isUrgent(signal));
  } catch (err) {
    throw failure(member, stop, err);
  }
  let running: Promise<postgres.RowList<T>>;
  try {
    // Holding a permit, the connection is free at once (see ConnectionGate), unless it has to be opened.
    const connection = await leaseConnection(pool, stop);
    member.counts.statements++;
    // A statement in a read-only transaction (BEGIN READ ONLY, the statement and COMMIT in one write): a session
    // default could be turned off by a statement, a transaction's read-only mode cannot be once it has run a query.
    running = sendFramed(connection, [transactionFrame.begin], run, [transactionFrame.commit]);
    cutIfSilent(connection, running, pool.bounds.answerMs);
    void running.then(
      () => connection.release(),
      () => connection.release(),
    );
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

/** runOn for a request that reads one snapshot: the snapshot decides which connection the statement takes. */
async function runInSnapshot<T extends readonly postgres.MaybeRow[]>(
  signal: AbortSignal,
  member: Member,
  snapshot: RequestSnapshot,
  run: StatementRun<T>,
): Promise<postgres.RowList<T>> {
  await member.availability.ready();
  const stop = statementStop(signal, member);
  try {
    member.counts.statements++;
    return await untilAborted(stop, snapshot.run(stop, isUrgent(signal), member, run));
  } catch (err) {
    throw failure(member, stop, err);
  }
}

/** The error a statement ends with: the signal's when it fired, else the database's (a connection failure prompts a probe). */
function failure(member: Member, stop: AbortSignal, err: unknown): ConnectError {
  if (stop.aborted) return abortError(stop);
  const error = databaseError(err);
  if (error.code === Code.Unavailable) member.availability.suspect();
  return error;
}
