import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Door } from "./request-context.ts";

// The service's Prometheus metrics, through prom-client (the Node client the Prometheus project lists). Each
// server gets a registry of its own rather than prom-client's global one: tests run several servers in one
// process, and the data access layer only ever sees the small recorder interfaces below.

/** Admission's state at scrape time (see Admission). */
export interface AdmissionState {
  queued: number;
  lanes: readonly { lane: "reserved" | "shared" | "sending"; slots: number; inUse: number }[];
}

/** One connection pool's state at scrape time (see openDatabase). */
export interface PoolState {
  pool: string;
  max: number;
  inUse: number;
  /** Statements waiting for one of its connections. */
  waiting: number;
}

/** One database member's state at scrape time (see Database.memberStats). */
export interface MemberState {
  role: "primary" | "replica";
  /** Its URL without the password: the member's label. */
  url: string;
  up: boolean;
  serving: boolean;
  lagMs: number | null;
  seqno: number | null;
  inFlight: number;
  requests: number;
  statements: number;
  failovers: number;
}

/** What the admission queue reports as it works. */
export interface AdmissionRecorder {
  /** A request got its slots (or gave up waiting) after `seconds` in the queue. */
  admissionWaited(seconds: number): void;
}

/** What a memory release was run for: the service idle after some work, or its resident set over the soft limit. */
export type MemoryReleaseTrigger = "idle" | "pressure";

/** What the memory release reports (see MemoryRelease). */
export interface MemoryReleaseRecorder {
  /** A release run for `trigger` paused the event loop `seconds` and the resident set shrank by `bytes` (negative: it grew). */
  memoryReleased(trigger: MemoryReleaseTrigger, seconds: number, bytes: number): void;
}

/** Latencies from a millisecond (masterchainInfo) to the 10 s request deadline. */
const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface RequestSeries {
  count: { inc(): void };
  duration: { observe(value: number): void };
}

interface StatementSeries {
  duration: { observe(value: number): void };
  timeouts: { inc(): void };
}

export class Metrics implements AdmissionRecorder, MemoryReleaseRecorder {
  readonly registry = new Registry();
  readonly #requests: Counter<"door" | "operation" | "code">;
  readonly #requestDuration: Histogram<"door" | "operation">;
  readonly #admissionWait: Histogram;
  readonly #statementDuration: Histogram<"statement">;
  readonly #statementTimeouts: Counter<"statement">;
  readonly #snapshotHold: Histogram;
  readonly #snapshotStatements: Counter<"placement">;
  readonly #memoryReleases: Counter<"trigger">;
  readonly #memoryReleasePause: Counter<"trigger">;
  readonly #memoryReleasedBytes: Counter<"trigger">;
  // prom-client hashes the label values on every call and allocates a child per labels() call: the series of each
  // label combination are looked up once and kept (the label values are few, see RequestRecord).
  readonly #requestSeries = new Map<string, RequestSeries>();
  readonly #statementSeries = new Map<string, StatementSeries>();
  #admission: (() => AdmissionState) | undefined;
  #pools: (() => readonly PoolState[]) | undefined;
  #databaseUp: (() => boolean) | undefined;
  #members: (() => readonly MemberState[]) | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#requests = new Counter({
      name: "tonquery_requests_total",
      help: "Requests answered, by door (rest, connect, grpc, grpc_web, http), operation and outcome code (gRPC code name for RPC doors, HTTP status otherwise; 499: the client went away first).",
      labelNames: ["door", "operation", "code"],
      registers,
    });
    this.#requestDuration = new Histogram({
      name: "tonquery_request_duration_seconds",
      help: "Time from a request's arrival to the end of its response, by door and operation.",
      labelNames: ["door", "operation"],
      buckets: latencyBuckets,
      registers,
    });
    this.#admissionWait = new Histogram({
      name: "tonquery_admission_wait_seconds",
      help: "Time requests waited for admission slots (0 when a slot was free), those that gave up waiting included.",
      buckets: [0.0005, ...latencyBuckets],
      registers,
    });
    this.#statementDuration = new Histogram({
      name: "tonquery_db_statement_duration_seconds",
      help: "Time of each SQL statement from sending it to its last row, its read-only transaction included, by statement name.",
      labelNames: ["statement"],
      buckets: latencyBuckets,
      registers,
    });
    this.#statementTimeouts = new Counter({
      name: "tonquery_db_statement_timeouts_total",
      help: "Statements PostgreSQL cancelled at STATEMENT_TIMEOUT_MS (SQLSTATE 57014), by statement name.",
      labelNames: ["statement"],
      registers,
    });
    this.#snapshotHold = new Histogram({
      name: "tonquery_db_snapshot_hold_seconds",
      help: "How long a request's snapshot held its anchor connection: from its BEGIN to the answer of its COMMIT.",
      buckets: latencyBuckets,
      registers,
    });
    this.#snapshotStatements = new Counter({
      name: "tonquery_db_snapshot_statements_total",
      help: "Statements run in a request's snapshot, by placement: on its anchor connection, or beside it on a connection that imported the snapshot.",
      labelNames: ["placement"],
      registers,
    });

    this.#memoryReleases = new Counter({
      name: "tonquery_memory_releases_total",
      help: "Collections run to give the operating system back the heap pages work left empty: trigger idle after IDLE_MEMORY_RELEASE_MS without a request, pressure when the resident set passed MEMORY_SOFT_LIMIT_MB.",
      labelNames: ["trigger"],
      registers,
    });
    this.#memoryReleasePause = new Counter({
      name: "tonquery_memory_release_pause_seconds_total",
      help: "Time those collections stopped the event loop.",
      labelNames: ["trigger"],
      registers,
    });
    this.#memoryReleasedBytes = new Counter({
      name: "tonquery_memory_released_bytes_total",
      help: "By how much those collections shrank the resident set.",
      labelNames: ["trigger"],
      registers,
    });

    // Gauges read their sources when scraped: nothing to do on the hot path.
    const metrics = this;
    new Gauge({
      name: "tonquery_admission_queue_length",
      help: "Requests waiting for admission slots.",
      registers,
      collect() {
        const state = metrics.#admission?.();
        if (state !== undefined) this.set(state.queued);
      },
    });
    new Gauge({
      name: "tonquery_admission_slots_in_use",
      help: "Admission slots held by requests, by lane (reserved: light requests only; shared; sending: RPC answers made and not yet sent, which gave back the slots they were made in).",
      labelNames: ["lane"],
      registers,
      collect() {
        for (const lane of metrics.#admission?.().lanes ?? []) this.set({ lane: lane.lane }, lane.inUse);
      },
    });
    new Gauge({
      name: "tonquery_admission_slots",
      help: "Admission slots, by lane (MAX_CONCURRENT_REQUESTS split into reserved and shared; sending: as many as shared).",
      labelNames: ["lane"],
      registers,
      collect() {
        for (const lane of metrics.#admission?.().lanes ?? []) this.set({ lane: lane.lane }, lane.slots);
      },
    });
    const poolGauge = (name: string, help: string, value: (pool: PoolState) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ["pool"],
        registers,
        collect() {
          for (const pool of metrics.#pools?.() ?? []) this.set({ pool: pool.pool }, value(pool));
        },
      });
    poolGauge("tonquery_db_connections_in_use", "Database connections running a statement, by pool (prepared, custom_plan; shared for the embedded database).", (p) => p.inUse);
    poolGauge("tonquery_db_connections_max", "Database connections a pool may open (DB_POOL_SIZE split between the pools).", (p) => p.max);
    poolGauge("tonquery_db_statements_waiting", "Statements waiting for a free connection of their pool.", (p) => p.waiting);
    new Gauge({
      name: "tonquery_db_up",
      help: "1 while the availability probe reaches the database, 0 while it does not.",
      registers,
      collect() {
        const up = metrics.#databaseUp?.();
        if (up !== undefined) this.set(up ? 1 : 0);
      },
    });

    // Per member of the cluster (the primary and each DATABASE_REPLICA_URLS entry). The members count their own
    // requests and statements; the counters below copy those totals at scrape time, which keeps the routing free
    // of metric calls and the totals equal to what the routing decided.
    const memberLabels = ["member", "role"] as const;
    const memberLabel = (m: MemberState) => ({ member: m.url, role: m.role });
    const memberGauge = (name: string, help: string, value: (m: MemberState) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: memberLabels,
        registers,
        collect() {
          this.reset();
          for (const m of metrics.#members?.() ?? []) {
            const v = value(m);
            if (v !== null) this.set(memberLabel(m), v);
          }
        },
      });
    const memberCounter = (name: string, help: string, value: (m: MemberState) => number) =>
      new Counter({
        name,
        help,
        labelNames: memberLabels,
        registers,
        collect() {
          this.reset();
          for (const m of metrics.#members?.() ?? []) this.inc(memberLabel(m), value(m));
        },
      });
    memberGauge("tonquery_db_member_up", "1 while the member's last probe or statement found it answering, by member (URL without password) and role.", (m) => (m.up ? 1 : 0));
    memberGauge("tonquery_db_member_serving", "1 while the member takes new requests: up and, for a replica, within MAX_REPLICA_LAG_MS of the primary.", (m) => (m.serving ? 1 : 0));
    memberGauge("tonquery_db_member_lag_seconds", "How far the member's replay is behind the primary's WAL, dated by the primary's positions (0 for the primary; absent while unknown).", (m) => (m.lagMs === null ? null : m.lagMs / 1000));
    memberGauge("tonquery_db_member_index_seqno", "The newest masterchain block seqno the member is known to hold (absent while unknown).", (m) => m.seqno);
    memberGauge("tonquery_db_member_requests_in_flight", "Requests whose statements currently go to the member.", (m) => m.inFlight);
    memberCounter("tonquery_db_member_requests_total", "Requests routed to the member (a request reads from one member, unless it fails over).", (m) => m.requests);
    memberCounter("tonquery_db_member_statements_total", "Statements the member ran.", (m) => m.statements);
    memberCounter("tonquery_db_member_failovers_total", "Statements moved from the member to another after it failed to answer.", (m) => m.failovers);
  }

  watchAdmission(state: () => AdmissionState): void {
    this.#admission = state;
  }

  watchDatabase(pools: () => readonly PoolState[], up: () => boolean, members: () => readonly MemberState[]): void {
    this.#pools = pools;
    this.#databaseUp = up;
    this.#members = members;
  }

  requestEnded(door: Door, operation: string, code: string, seconds: number): void {
    const key = `${door} ${operation} ${code}`;
    let series = this.#requestSeries.get(key);
    if (series === undefined) {
      series = { count: this.#requests.labels(door, operation, code), duration: this.#requestDuration.labels(door, operation) };
      this.#requestSeries.set(key, series);
    }
    series.count.inc();
    series.duration.observe(seconds);
  }

  admissionWaited(seconds: number): void {
    this.#admissionWait.observe(seconds);
  }

  statementEnded(statement: string, seconds: number, timedOut: boolean): void {
    let series = this.#statementSeries.get(statement);
    if (series === undefined) {
      series = { duration: this.#statementDuration.labels(statement), timeouts: this.#statementTimeouts.labels(statement) };
      this.#statementSeries.set(statement, series);
    }
    series.duration.observe(seconds);
    if (timedOut) series.timeouts.inc();
  }

  snapshotEnded(heldSeconds: number, onAnchor: number, beside: number): void {
    this.#snapshotHold.observe(heldSeconds);
    if (onAnchor > 0) this.#snapshotStatements.labels("anchor").inc(onAnchor);
    if (beside > 0) this.#snapshotStatements.labels("beside").inc(beside);
  }

  memoryReleased(trigger: MemoryReleaseTrigger, seconds: number, bytes: number): void {
    this.#memoryReleases.inc({ trigger });
    this.#memoryReleasePause.inc({ trigger }, seconds);
    if (bytes > 0) this.#memoryReleasedBytes.inc({ trigger }, bytes);
  }

  /** The Prometheus text exposition of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
