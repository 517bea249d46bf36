import type postgres from "postgres";
import { Code, ConnectError } from "@connectrpc/connect";
import { cutIfSilent, leaseConnection } from "./lease.ts";
import { endTransaction, parkAnchor, takeParkedAnchor } from "./parked-anchors.ts";
import type { StatementTelemetry } from "../observability/telemetry.ts";
import type { Member } from "./member.ts";
import { importSnapshot, sendFramed, type Sql, type StatementRun, transactionFrame } from "./statement.ts";

/**
 * How a request's statements share its snapshot.
 * - `serial`: all on the anchor, queued there and sent without waiting for each other's answers (postgres.js
 *   pipelines a connection's statements), so PostgreSQL runs them one after another in the anchor's transaction.
 * - `parallel`: a statement that would queue behind another runs beside the anchor on a connection of its own,
 *   importing the exported snapshot, while the pool has connections to spare (see {@link RequestSnapshot}).
 *
 * Exporting and importing a snapshot is not free: `pg_export_snapshot()` writes a file and each import reads it in a
 * transaction of its own (`begin`, `set transaction snapshot`, `commit`). Alternated on the 2M bench index (same
 * machine, 1-second windows), a small request paid for it twice over: adjacentTransactions at concurrency 1 ran
 * 221 req/s with it and 325 without (PostgreSQL 2.1 → 1.2 ms of CPU per request), 554 → 669 req/s at 16, a 10-trace
 * page 107 → 118 and 154 → 169; only pages whose statements take milliseconds gain from running them side by side
 * on an idle database (at concurrency 1, a cold account's 100-trace page 17.6 → 20.2 pages per second, the hot
 * account's 1000-trace page 1.3 → 1.6), and under load none does (the hot 100-trace page at 16: 38.5 pages per
 * second serial, 33.8 parallel): the database's cores are busy with other requests anyway.
 */
export type SnapshotReads = "serial" | "parallel";

/**
 * One request's view of the index: every statement of the request reads the same committed state, whatever the
 * index worker commits meanwhile and however many connections the statements run on.
 *
 * The worker commits a batch per transaction (a trace's new transactions and its grown trace row together), and a
 * page is several statements: read in transactions of their own, a trace row could say "complete, 5 transactions"
 * and the next statement find 4. So the request's first statement opens a REPEATABLE READ transaction on an
 * anchor connection of its member's prepared pool: `begin` and the statement go out in one write, no extra round
 * trip. The anchor keeps that transaction, and its connection permit, until the request ends ({@link end} sends its
 * `commit`). A later statement runs on the anchor, behind whatever the anchor still runs, unless the request reads
 * in parallel and its anchor exported the snapshot: it does when the pool had at most a quarter of its connections
 * in use as the anchor opened (`select pg_export_snapshot()` goes out in the same write). Then a later statement:
 * - runs on the anchor when nothing runs there;
 * - runs beside it when a connection of its own pool is free at once, importing the snapshot (`begin`,
 *   `set transaction snapshot`, the statement and `commit` in one write): parallel statements stay parallel;
 * - else queues on the anchor. A request never waits for a second permit while it holds one, so requests cannot
 *   deadlock each other over connections, and one request never takes connections others are waiting for.
 *
 * A shared session (the embedded PGlite) has one permit, which the anchor holds: every statement of the request
 * queues on the anchor, and requests run one after another (pglite-socket runs a transaction's messages alone,
 * so a writer's commit never lands inside a request either). Nothing is exported there: nobody could import it.
 *
 * The snapshot lives on its member: should that member fail once the snapshot is taken, the request cannot be
 * finished on another member's state. Its statements then fail with {@link snapshotLost}, which the service
 * answers by running the request again from the start (see `admitted` in service.ts).
 */
export class RequestSnapshot {
  #anchor: Promise<Anchor> | undefined;
  #member: Member | undefined;
  #taken = false;
  #ended = false;
  /** Where the request's statements ran, for the metrics; the telemetry is the statements' own. */
  readonly #placed = { onAnchor: 0, beside: 0 };
  #telemetry: StatementTelemetry | undefined;
  readonly #reads: SnapshotReads;

  constructor(reads: SnapshotReads) {
    this.#reads = reads;
  }

  /** The member the snapshot lives on, once it is taken. */
  get member(): Member | undefined {
    return this.#taken ? this.#member : undefined;
  }

  /** Whether the snapshot exists: statements have read from it, so the request can only go on on its member. */
  get taken(): boolean {
    return this.#taken;
  }

  /**
   * Runs one statement of the request in the snapshot, on `member` (the snapshot's, or the member chosen for the
   * request's first statement). `stop` ends the wait for the anchor's connection; a statement once sent runs to its
   * end. `urgent`: the request's statements go first for connections (see ConnectionGate).
   */
  async run<T extends readonly postgres.MaybeRow[]>(stop: AbortSignal, urgent: boolean, member: Member, run: StatementRun<T>): Promise<postgres.RowList<T>> {
    this.#assertOpen();
    this.#telemetry ??= run.telemetry;
    // An anchor still opening on another member (the request's first choice failed meanwhile) is left to close.
    if (this.#anchor === undefined || (this.#member !== member && !this.#taken)) {
      void this.#anchor?.then(
        (abandoned) => abandoned.close(),
        () => {},
      );
      this.#member = member;
      const opening = openAnchor(stop, urgent, member, this.#reads, (heldMs) =>
        this.#telemetry?.snapshotEnded(heldMs / 1000, this.#placed.onAnchor, this.#placed.beside),
      );
      this.#anchor = opening;
      opening
        .then((anchor) => anchor.opened)
        .then(
          () => {
            if (this.#anchor === opening) this.#taken = true;
          },
          () => this.#forget(opening),
        );
    }
    const anchor = await this.#anchor;
    this.#assertOpen();
    if (anchor.busy > 0 && anchor.exported) {
      const release = run.pool.gate.tryAcquire(urgent);
      if (release !== undefined) return this.#beside(stop, anchor, release, run);
    }
    return this.#onAnchor(anchor, run);
  }

  /** A snapshot read the same way, for the request's next run (see RequestRoute.restart). */
  renewed(): RequestSnapshot {
    return new RequestSnapshot(this.#reads);
  }

  /** The request is over: the anchor commits (after whatever it still runs) and gives its connection back. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    void this.#anchor?.then(
      (anchor) => anchor.close(),
      () => {},
    );
  }

  #assertOpen(): void {
    if (this.#ended) throw new ConnectError("the request has ended", Code.Canceled);
  }

  /** An anchor that failed to open took nothing: the request's next statement may open one, elsewhere if need be. */
  #forget(opening: Promise<Anchor>): void {
    if (this.#anchor !== opening || this.#taken) return;
    this.#anchor = undefined;
    this.#member = undefined;
  }

  async #onAnchor<T extends readonly postgres.MaybeRow[]>(anchor: Anchor, run: StatementRun<T>): Promise<postgres.RowList<T>> {
    if (anchor.closing) throw new ConnectError("the request has ended", Code.Canceled);
    anchor.busy++;
    this.#placed.onAnchor++;
    try {
      // Sent at once, behind the anchor's begin and export when it is the request's first: no round trip is waited.
      return await sendFramed(anchor.connection, [], run, []);
    } catch (err) {
      anchor.sound = false;
      throw err;
    } finally {
      anchor.busy--;
    }
  }

  async #beside<T extends readonly postgres.MaybeRow[]>(
    stop: AbortSignal,
    anchor: Anchor,
    release: () => void,
    run: StatementRun<T>,
  ): Promise<postgres.RowList<T>> {
    let connection: postgres.ReservedSql | undefined;
    try {
      const id = await anchor.opened;
      this.#assertOpen();
      if (anchor.closing) throw new ConnectError("the request has ended", Code.Canceled);
      // Holding a permit, the connection is free at once (see ConnectionGate), unless it has to be opened.
      connection = await leaseConnection(run.pool, stop);
      this.#placed.beside++;
      const answer = sendFramed(connection, [transactionFrame.beginSnapshot, importSnapshot(id as string)], run, [transactionFrame.commit]);
      cutIfSilent(connection, answer, run.pool.bounds.answerMs);
      return await answer;
    } finally {
      connection?.release();
      release();
    }
  }
}

/** The connection that holds a request's snapshot open. */
interface Anchor {
  connection: postgres.ReservedSql;
  /** Whether the snapshot is exported: statements may run beside the anchor. */
  exported: boolean;
  /** Resolves with the exported snapshot id, if it is exported, once the transaction is open. */
  opened: Promise<string | undefined>;
  /** Statements sent on the anchor and not yet answered. */
  busy: number;
  /** No statement failed on the anchor: its connection may serve the next request (see parkAnchor). */
  sound: boolean;
  /** Set once close() has run: nothing more may be sent on the connection, which goes back to its pool. */
  closing: boolean;
  /** Ends the transaction (once, after whatever the anchor still runs), then gives the connection and its permit back. */
  close: () => void;
}

/**
 * The share of its pool's connections in use, its own anchor included, up to which a request reading in parallel
 * exports its snapshot. At a half, a 100-trace page at concurrency 16 still exported in a fifth of its statements (8
 * admission slots hold 4-5 such pages, and the pool is 10): 35.0 → 35.7 pages per second against exporting always;
 * at a quarter, 29.3-31.8 → 32.5-33.9, and at concurrency 1 the same as exporting always.
 */
const parallelReadsWhileInUse = 0.25;

async function openAnchor(stop: AbortSignal, urgent: boolean, member: Member, reads: SnapshotReads, onFreed: (heldMs: number) => void): Promise<Anchor> {
  const pool = member.pools.prepared;
  const release = await pool.gate.acquire(stop, urgent);
  const parked = takeParkedAnchor(pool);
  let connection: postgres.ReservedSql;
  if (parked !== undefined) connection = parked;
  else {
    try {
      connection = await leaseConnection(pool, stop);
    } catch (err) {
      release();
      throw err;
    }
  }
  const begun = performance.now();
  // The previous request's transaction ends in the write that begins this one's; should the connection fail, the
  // begin reports it.
  if (parked !== undefined) connection.unsafe(transactionFrame.commit).execute().catch(() => {});
  const begin = connection.unsafe(transactionFrame.beginSnapshot).execute();
  const exported = reads === "parallel" && !member.sharedSession && pool.gate.inUse <= pool.gate.capacity * parallelReadsWhileInUse;
  const exporting = exported ? (connection as Sql).unsafe<{ id: string }[]>(transactionFrame.exportSnapshot).execute() : undefined;
  const opened = Promise.all([begin, exporting]).then(([, rows]) => rows?.[0]?.id);
  let open = false;
  const anchor: Anchor = {
    connection,
    exported,
    opened,
    busy: 0,
    sound: true,
    closing: false,
    close: () => {
      if (anchor.closing) return;
      anchor.closing = true;
      const free = () => {
        release();
        onFreed(performance.now() - begun);
      };
      if (open && anchor.sound && anchor.busy === 0 && !member.sharedSession) {
        parkAnchor(pool, connection);
        free();
        return;
      }
      // After a failed opening this ends the aborted transaction all the same.
      endTransaction(pool, connection, () => {
        connection.release();
        free();
      });
    },
  };
  opened.then(
    () => {
      open = true;
    },
    () => anchor.close(),
  );
  return anchor;
}

/** The request's snapshot is gone with its member (down, connection lost, or cancelled by replay on a replica). */
export function snapshotLost(cause: ConnectError): ConnectError {
  const error = new ConnectError("database unavailable: the request's snapshot was lost with its server", Code.Unavailable, undefined, undefined, cause);
  lostSnapshots.add(error);
  return error;
}

const lostSnapshots = new WeakSet<ConnectError>();

/** Whether the request failed only because its snapshot was lost: it can run again from the start, on another member. */
export function isSnapshotLost(error: unknown): boolean {
  return error instanceof ConnectError && lostSnapshots.has(error);
}
