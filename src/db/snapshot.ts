import type postgres from "postgres";
import { Code, ConnectError } from "@connectrpc/connect";
import { cutIfSilent, leaseConnection } from "./lease.ts";
import type { StatementTelemetry } from "../observability/telemetry.ts";
import type { Member } from "./member.ts";
import { importSnapshot, sendFramed, type Sql, type StatementRun, transactionFrame } from "./statement.ts";

/**
 * One request's view of the index: every statement of the request reads the same committed state, whatever the
 * index worker commits meanwhile and however many connections the statements run on.
 *
 * The worker commits a batch per transaction (a trace's new transactions and its grown trace row together), and a
 * page is several statements: read in transactions of their own, a trace row could say "complete, 5 transactions"
 * and the next statement find 4. So the request's first statement opens a REPEATABLE READ transaction on an
 * anchor connection of its member's prepared pool and exports its snapshot: `begin`, `select pg_export_snapshot()`
 * and the statement go out in one write, no extra round trip. The anchor keeps that transaction, and its
 * connection permit, until the request ends ({@link end} sends its `commit`). A later statement:
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
      const opening = openAnchor(stop, urgent, member, (heldMs) =>
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
    if (anchor.busy > 0) {
      const release = run.pool.gate.tryAcquire(urgent);
      if (release !== undefined) return this.#beside(stop, anchor, release, run);
    }
    return this.#onAnchor(anchor, run);
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
  /** Resolves with the exported snapshot id (undefined on a shared session) once the transaction is open. */
  opened: Promise<string | undefined>;
  /** Statements sent on the anchor and not yet answered. */
  busy: number;
  /** Set once close() has run: nothing more may be sent on the connection, which goes back to its pool. */
  closing: boolean;
  /** Ends the transaction (once, after whatever the anchor still runs), then gives the connection and its permit back. */
  close: () => void;
}

async function openAnchor(stop: AbortSignal, urgent: boolean, member: Member, onFreed: (heldMs: number) => void): Promise<Anchor> {
  const pool = member.pools.prepared;
  const release = await pool.gate.acquire(stop, urgent);
  let connection: postgres.ReservedSql;
  try {
    connection = await leaseConnection(pool, stop);
  } catch (err) {
    release();
    throw err;
  }
  const begun = performance.now();
  const begin = connection.unsafe(transactionFrame.beginSnapshot).execute();
  const exported = member.sharedSession ? undefined : (connection as Sql).unsafe<{ id: string }[]>(transactionFrame.exportSnapshot).execute();
  const opened = Promise.all([begin, exported]).then(([, rows]) => rows?.[0]?.id);
  const anchor: Anchor = {
    connection,
    opened,
    busy: 0,
    closing: false,
    close: () => {
      if (anchor.closing) return;
      anchor.closing = true;
      const free = () => {
        connection.release();
        release();
        onFreed(performance.now() - begun);
      };
      // After a failed opening this ends the aborted transaction all the same.
      const committed = connection.unsafe(transactionFrame.commit).execute();
      committed.then(free, free);
      // Whatever the anchor still runs has its statement timeout; past that, the connection is gone.
      cutIfSilent(connection, committed, pool.bounds.answerMs);
    },
  };
  opened.catch(() => anchor.close());
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
