import postgres from "postgres";
import { log } from "../runtime/log.ts";
import { DatabaseAvailability } from "./availability.ts";
import { ConnectionGate } from "./connection-gate.ts";
import { endParkedAnchors } from "./parked-anchors.ts";
import type { LeaseBounds } from "./lease.ts";

type Sql = postgres.Sql;

export type MemberRole = "primary" | "replica";

/** The two pools of a member, which differ only in how PostgreSQL plans their statements (see `Database`). */
export type PoolKind = "prepared" | "customPlan";

/** What runQuery needs to know about one pool of a member. */
export interface Pool {
  live: Sql;
  open: () => Sql;
  /** Sends named prepared statements (see `Database`). */
  prepared: boolean;
  bounds: LeaseBounds;
  observe: ((statement: PromiseLike<unknown>) => void) | undefined;
  gate: ConnectionGate;
}

/** Where a member's replay stands: its WAL position (bytes) and the newest masterchain block it holds. */
export interface Position {
  lsn: bigint;
  seqno: number | undefined;
  /** When the member answered. */
  at: number;
}

export interface MemberOptions {
  url: string;
  role: MemberRole;
  /** For logs: the URL without its password. */
  label: string;
  poolSize: number;
  statementTimeoutMs: number;
  snapshotIdleMs: number;
  connectTimeoutMs: number;
  probeIntervalMs: number;
  sharedSession?: boolean;
  observe?: { built(statement: PromiseLike<unknown>, prepared: boolean): void; sent(text: string): void };
  /**
   * The probe also reads the member's position (with replicas: lag and freshness are judged by it); else it is a
   * bare `select 1`.
   */
  onPosition?: (member: Member, position: Position) => void;
}

/** Between probes while a member does not answer: it is known to be back within this. */
const probeIntervalDownMs = 250;

/**
 * One PostgreSQL server of the index (the primary, or a streaming replica of it): its pools, its availability
 * probe, and what is known of its position.
 */
export class Member {
  readonly role: MemberRole;
  readonly url: string;
  readonly label: string;
  readonly pools: Record<PoolKind, Pool>;
  readonly availability: DatabaseAvailability;
  /** Every connection runs in one shared session (the embedded PGlite, see DatabaseOptions). */
  readonly sharedSession: boolean;
  /** The last position the probe read (with replicas only). */
  position: Position | undefined;
  /** Statements running or waiting for a connection here: new requests go to the member with fewest. */
  inFlight = 0;
  /** Requests that ran statements here, statements run, statements moved to another member after failing here. */
  readonly counts = { requests: 0, statements: 0, failovers: 0 };
  #up = true;
  #seqno: number | undefined;
  readonly #probe: HealthProbe;

  constructor(options: MemberOptions) {
    this.role = options.role;
    this.url = options.url;
    this.label = options.label;
    this.sharedSession = options.sharedSession === true;
    const customPlanConnections = Math.max(1, Math.ceil(options.poolSize / 5));
    // A shared session answers one request at a time (its snapshot's transaction runs alone): opening a connection,
    // or the probe, waits behind the request under way. The embedded demo's requests take milliseconds; one that
    // holds the session longer than a statement may run is taken for an outage, as a host that stopped answering is.
    const connectTimeoutMs = options.sharedSession === true ? options.connectTimeoutMs + options.statementTimeoutMs : options.connectTimeoutMs;
    const connect = (max: number, prepare: boolean) =>
      postgres(options.url, {
        max,
        prepare,
        connect_timeout: connectTimeoutMs / 1000,
        idle_timeout: 60,
        max_lifetime: 30 * 60,
        onnotice: () => {},
        ...(options.observe && { debug: (_connection: number, text: string) => options.observe?.sent(text) }),
        connection: {
          application_name: "tonquery",
          default_transaction_read_only: true,
          statement_timeout: options.statementTimeoutMs,
          idle_in_transaction_session_timeout: options.snapshotIdleMs,
          // No parallel workers: a Gather starts worker processes for the statement, which on the 2M bench index
          // made a 100-trace page's custom-planned transactions and messages statements take 43 and 81 ms where
          // they take 15 and 22 without (EXPLAIN ANALYZE, 2 cores); an API's index-driven pages never need them.
          // A string: postgres.js leaves out a startup parameter whose value is 0.
          max_parallel_workers_per_gather: "0",
        },
      });
    // A shared session has one unnamed statement and one unnamed portal for all connections: statements from two
    // connections interleaving their Parse, Bind and Execute (a new connection's type lookup included) would run
    // each other's (08P01, 34000). It runs one statement at a time anyway, so the service, probe included, sends it
    // one at a time.
    const sharedGate = options.sharedSession === true ? new ConnectionGate(1) : undefined;
    const pool = (max: number, prepare: boolean): Pool => {
      const open = () => connect(max, prepare);
      return {
        live: open(),
        open,
        prepared: prepare,
        bounds: { connectMs: connectTimeoutMs, answerMs: options.statementTimeoutMs + connectTimeoutMs },
        observe: options.observe && ((statement: PromiseLike<unknown>) => options.observe?.built(statement, prepare)),
        gate: sharedGate ?? new ConnectionGate(max),
      };
    };
    this.pools = {
      prepared: pool(Math.max(1, options.poolSize - customPlanConnections), true),
      customPlan: pool(customPlanConnections, false),
    };

    this.#probe = healthProbe(options.url);
    const onPosition = options.onPosition;
    const check = async (timeoutMs: number) => {
      if (onPosition === undefined) {
        // One simple-protocol message: on a shared session nothing can come between its parts (see sharedSession).
        await this.#probe.run(timeoutMs, (sql) => sql.unsafe("select 1"));
        return;
      }
      const [row] = await this.#probe.run(timeoutMs, readPosition);
      const position = { lsn: BigInt(row?.lsn ?? "0"), seqno: row?.seqno ?? undefined, at: Date.now() };
      this.position = position;
      this.noteSeqno(position.seqno);
      onPosition(this, position);
    };
    const probe =
      sharedGate === undefined
        ? check
        : async (timeoutMs: number) => {
            const release = await sharedGate.acquire(AbortSignal.timeout(timeoutMs), true);
            try {
              await check(timeoutMs);
            } finally {
              release();
            }
          };
    const describe = options.role === "primary" && onPosition === undefined ? {} : { member: options.role, url: options.label };
    this.availability = new DatabaseAvailability(probe, {
      timeoutMs: connectTimeoutMs,
      upIntervalMs: options.probeIntervalMs,
      downIntervalMs: Math.min(probeIntervalDownMs, options.probeIntervalMs),
      // A connection that lost its peer without a word (a black hole) would stay checked out for good: drop them all.
      onDown: () => {
        for (const p of Object.values(this.pools)) {
          // Parked anchors are connections of the pool being dropped: the next request must not take one.
          endParkedAnchors(p);
          void p.live.end({ timeout: 0 });
          p.live = p.open();
        }
      },
      onChange: (up, downMs) => {
        this.#up = up;
        if (up) log.info("database available again", { downMs, ...describe });
        else log.error("database unavailable", describe);
      },
    });
  }

  /** Whether the last probe (or statement) found the member answering. */
  get up(): boolean {
    return this.#up;
  }

  /** The newest masterchain seqno the member is known to hold: it only grows, as replay only goes forward. */
  get seqno(): number | undefined {
    return this.#seqno;
  }

  noteSeqno(seqno: number | undefined): void {
    if (seqno !== undefined && (this.#seqno === undefined || seqno > this.#seqno)) this.#seqno = seqno;
  }

  start(): void {
    this.availability.start();
    // Its position is needed before it may take requests: measure it now rather than a probe interval from now.
    if (this.role === "replica") this.availability.suspect();
  }

  async end(): Promise<void> {
    this.availability.stop();
    for (const pool of Object.values(this.pools)) endParkedAnchors(pool);
    await Promise.all([...Object.values(this.pools).map((p) => p.live.end({ timeout: 5 })), this.#probe.close()]);
  }
}

/**
 * A member's position in one round trip: its WAL position (written on the primary, replayed on a replica) and the
 * newest masterchain block it holds (one probe of blocks_index_3 at its end).
 */
function readPosition(sql: Sql) {
  return sql<{ lsn: string | null; seqno: number | null }[]>`
    select (case when pg_is_in_recovery() then pg_last_wal_replay_lsn() else pg_current_wal_lsn() end - '0/0'::pg_lsn)::text as lsn,
           (select seqno from blocks where workchain = -1 order by seqno desc limit 1) as seqno`;
}

interface HealthProbe {
  run<T extends readonly postgres.MaybeRow[]>(timeoutMs: number, statement: (sql: Sql) => postgres.PendingQuery<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * The availability probe: one round trip on a connection of its own, bounded by `timeoutMs` whatever the network
 * does. The connection is kept while it answers and replaced after a failure, since a hung one never recovers.
 */
function healthProbe(url: string): HealthProbe {
  const open = (timeoutMs: number) =>
    postgres(url, { max: 1, connect_timeout: timeoutMs / 1000, idle_timeout: 0, onnotice: () => {}, connection: { application_name: "tonquery-probe" } });
  let connection: Sql | undefined;
  return {
    async run(timeoutMs, statement) {
      connection ??= open(timeoutMs);
      let timer: NodeJS.Timeout | undefined;
      // Should the timeout win, the query is rejected later, when its connection is dropped: nobody waits for it then.
      const answer = statement(connection);
      answer.catch(() => {});
      try {
        return await Promise.race([
          answer,
          new Promise<never>((_, reject) => {
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
    },
    close: async () => void (await connection?.end({ timeout: 1 })),
  };
}
