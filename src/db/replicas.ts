import { Code, ConnectError } from "@connectrpc/connect";
import { log } from "../runtime/log.ts";
import type { Member, MemberRole, Position } from "./member.ts";
import { RequestSnapshot, type SnapshotReads } from "./snapshot.ts";

/**
 * Which member of the index (the primary and its streaming replicas) runs a request's statements.
 *
 * - **Spread.** A request goes to a replica that answers and is at most `maxReplicaLagMs` behind, the one with the
 *   fewest statements in flight (ties in turn); the primary serves when no replica qualifies, and always when
 *   there is none.
 * - **One member per request.** All the statements of a request run on the member its first statement chose. A
 *   member's index only moves forward, so a request that reads trace rows and then their transactions never finds
 *   the second older than the first, as it could across two replicas at different points of replay.
 * - **Never older than seen.** Should its member fail (down, connection lost, a statement cancelled by replay), a
 *   request that has read nothing yet goes to another member as a new one would; one that has read something goes
 *   on on the primary, which holds whatever any replica does (every replica replays the primary's WAL), so a
 *   failover is invisible to the request.
 * - **Across requests.** Once a request's statements are done, the newest masterchain seqno of its member is read
 *   (`Database.indexSeqno`, one more statement, none for masterchainInfo whose statement read it): a bound of
 *   everything the request has read, sent as X-Index-Seqno. A client sends it back as the next request's
 *   `minSeqno` (X-Min-Index-Seqno) and is served by a member known to hold at least that block, else by the
 *   primary, so what it has seen never disappears.
 *
 * Seqnos are what clients understand, and the index worker writes a masterchain block with its shard blocks,
 * transactions, messages and traces in one transaction, so a member holding seqno N holds all of them up to N.
 * The lag bound is measured in WAL instead, which also covers what is written apart from blocks (actions
 * classified later): see {@link ReplicaLag}.
 */
export class Cluster {
  readonly primary: Member;
  readonly replicas: readonly Member[];
  readonly #lag: ReplicaLag;
  readonly #maxLagMs: number;
  /** Whether each replica was serving at its last probe: a change is logged. */
  readonly #serving = new Map<Member, boolean>();
  readonly #listeners = new Set<() => void>();
  #turn = 0;

  constructor(primary: Member, replicas: readonly Member[], lag: ReplicaLag, maxLagMs: number) {
    this.primary = primary;
    this.replicas = replicas;
    this.#lag = lag;
    this.#maxLagMs = maxLagMs;
    for (const member of this.members) member.availability.subscribe(() => this.#changed());
  }

  /**
   * Calls `listener` whenever whether the cluster can serve may have changed (a member went down or came back, a
   * replica fell behind or caught up), until the returned function is called: a health Watch stream follows it.
   */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  get members(): readonly Member[] {
    return [this.primary, ...this.replicas];
  }

  /**
   * Where the statements of the request whose signal this is go; `minSeqno`: the freshness its client asked for;
   * `snapshot`: when given, they all read one snapshot, serially or in parallel (see RequestSnapshot).
   */
  route(signal: AbortSignal, minSeqno: number | undefined, snapshot?: SnapshotReads): RequestRoute {
    return openRoute(signal, minSeqno, snapshot);
  }

  /** The request's route; statements run outside the service (start-up checks, the bench) get one on first use. */
  routeOf(signal: AbortSignal): RequestRoute {
    return routes.get(signal) ?? this.route(signal, undefined);
  }

  /** The member the route's next statement runs on: its own, or a new choice; undefined when none is left. */
  memberFor(route: RequestRoute): Member | undefined {
    const pinned = route.member;
    if (pinned !== undefined && !route.failed.has(pinned)) {
      if (pinned.up) return pinned;
      // Known to be down since the request's last statement: another member takes over without waiting for its
      // probe; with none left, its probe decides (and the request fails fast if it is still down).
      route.failed.add(pinned);
      const next = this.#choose(route);
      if (next === undefined) {
        route.failed.delete(pinned);
        return pinned;
      }
      pinned.counts.failovers++;
      return this.#pin(route, next);
    }
    const member = this.#choose(route);
    return member === undefined ? undefined : this.#pin(route, member);
  }

  #pin(route: RequestRoute, member: Member): Member {
    route.member = member;
    member.counts.requests++;
    return member;
  }

  /**
   * A statement of the route failed on `member` for a reason another member may not share (its connection, a
   * conflict with replay): its next statements go elsewhere. Whether another member can take them.
   */
  reroute(route: RequestRoute, member: Member): boolean {
    route.failed.add(member);
    member.counts.failovers++;
    return this.#choose(route) !== undefined;
  }

  /** Whether a replica takes new requests now: it answers, and its lag is known and within the bound. */
  serves(replica: Member, now = Date.now()): boolean {
    return replica.up && this.#lag.lagMs(replica.position, now) <= this.#maxLagMs;
  }

  /** Resolves when some member can serve reads; while none can, probes them (once, shared) and fails fast. */
  async ready(): Promise<void> {
    if (this.canServe()) return;
    await Promise.any(this.members.map((member) => member.availability.ready())).catch(() => {});
    if (!this.canServe()) throw unavailable("database unavailable");
  }

  /** A probe read `member`'s position: the primary's feeds the lag of the replicas, a replica's may change its state. */
  positionRead(member: Member, position: Position): void {
    if (member.role === "primary") {
      this.#lag.primaryAt(position);
      return;
    }
    const serving = this.serves(member, position.at);
    if (this.#serving.get(member) === serving) return;
    const first = !this.#serving.has(member);
    this.#serving.set(member, serving);
    this.#changed();
    const lagMs = this.#lag.lagMs(position, position.at);
    if (serving && !first) log.info("replica serving again", { url: member.label, lagMs });
    if (!serving && member.up) log.warn("replica behind, not serving", { url: member.label, lagMs: Number.isFinite(lagMs) ? lagMs : null, maxLagMs: this.#maxLagMs });
  }

  /** Per member: whether it answers and serves, its lag and newest seqno, and what it has served (for metrics). */
  stats(): MemberStats[] {
    const now = Date.now();
    return this.members.map((member) => {
      const lagMs = member.role === "primary" ? 0 : this.#lag.lagMs(member.position, now);
      return {
        role: member.role,
        url: member.label,
        up: member.up,
        serving: member.role === "primary" ? member.up : this.serves(member, now),
        lagMs: Number.isFinite(lagMs) ? lagMs : null,
        seqno: member.seqno ?? null,
        inFlight: member.inFlight,
        ...member.counts,
      };
    });
  }

  /** Whether some member can serve reads now, as the probes last found them (no probing). */
  canServe(): boolean {
    const now = Date.now();
    return this.primary.up || this.replicas.some((replica) => this.serves(replica, now));
  }

  #choose(route: RequestRoute): Member | undefined {
    // Every replica is built from the primary's WAL: it holds whatever any of them does.
    const primary = route.failed.has(this.primary) ? undefined : this.primary;
    if (route.hasRead) return primary;
    const needed = route.minSeqno;
    const now = Date.now();
    let best: Member | undefined;
    // Rotating the starting point spreads requests evenly over equally busy replicas.
    const start = this.#turn++;
    for (let i = 0; i < this.replicas.length; i++) {
      const replica = this.replicas[(start + i) % this.replicas.length] as Member;
      if (route.failed.has(replica) || !this.serves(replica, now)) continue;
      if (needed !== undefined && (replica.seqno === undefined || replica.seqno < needed)) continue;
      if (best === undefined || replica.inFlight < best.inFlight) best = replica;
    }
    return best ?? primary;
  }
}

/** The routes of the requests under way, by their signal: a request's statements all carry its signal. */
const routes = new WeakMap<AbortSignal, RequestRoute>();

/** Starts the route of the request whose statements carry `signal`: none has run yet, none is pinned. */
export function openRoute(signal: AbortSignal, minSeqno: number | undefined, snapshot?: SnapshotReads): RequestRoute {
  const route = new RequestRoute(minSeqno, snapshot);
  routes.set(signal, route);
  return route;
}

/** The route of the request `signal` belongs to, if it has one. */
export function routeOfRequest(signal: AbortSignal): RequestRoute | undefined {
  return routes.get(signal);
}

/** Where one request's statements run, the snapshot they read, and what is known of how fresh the index they read was. */
export class RequestRoute {
  readonly minSeqno: number | undefined;
  member: Member | undefined;
  readonly failed = new Set<Member>();
  /** Present when the request reads one snapshot: then a member that fails ends the request's current run. */
  snapshot: RequestSnapshot | undefined;
  #hasRead = false;
  #bound: number | undefined;

  constructor(minSeqno: number | undefined, snapshot: SnapshotReads | undefined) {
    this.minSeqno = minSeqno;
    if (snapshot !== undefined) this.snapshot = new RequestSnapshot(snapshot);
  }

  /** The request is over: its snapshot, if any, is released. */
  end(): void {
    this.snapshot?.end();
  }

  /**
   * The request runs again from the start (its snapshot was lost with its member): a new snapshot, on a member
   * chosen afresh among those that have not failed it.
   */
  restart(): void {
    if (this.snapshot === undefined) return;
    this.snapshot.end();
    this.snapshot = this.snapshot.renewed();
    this.member = undefined;
    this.#hasRead = false;
    this.#bound = undefined;
  }

  /** A statement of the request has answered: a member that fails from now on hands it to the primary. */
  get hasRead(): boolean {
    return this.#hasRead;
  }

  /** A masterchain seqno the request's member held after its last statement, when one is known (X-Index-Seqno). */
  get indexSeqno(): number | undefined {
    return this.#bound;
  }

  read(): void {
    this.#hasRead = true;
    this.#bound = undefined;
  }

  /** The statement that has just answered read `seqno` as its member's newest masterchain block. */
  bounded(seqno: number): void {
    this.#bound = seqno;
    this.member?.noteSeqno(seqno);
  }
}

/**
 * How far each replica's replay is behind the primary, in time, from WAL positions: the probe reads the primary's
 * write position (`pg_current_wal_lsn()`) and each replica's replay position (`pg_last_wal_replay_lsn()`) every
 * probe interval, and the primary's recent positions are kept with the time they were read.
 *
 * A replica that has replayed past the primary's last known position is not behind (lag 0). Otherwise it has
 * been missing data since the primary was first seen past its position: its lag is the time since then (known to
 * within one probe interval). A replica behind every position kept is at least as far behind as the oldest of them
 * (kept for longer than `keepMs`, more than the lag bound); one not measured yet counts as infinitely behind. `pg_last_xact_replay_timestamp()` is not used: it is the age of the last transaction replayed, which
 * grows on a replica that is fully caught up whenever the primary has nothing to write.
 */
export class ReplicaLag {
  /** The primary's positions, oldest first, one per probe: enough to date a position within `keepMs`. */
  readonly #history: { lsn: bigint; at: number }[] = [];
  readonly #keepMs: number;

  constructor(keepMs: number) {
    this.#keepMs = keepMs;
  }

  primaryAt(position: Position): void {
    this.#history.push({ lsn: position.lsn, at: position.at });
    // The newest position older than keepMs stays: a replica behind it is at least keepMs behind.
    while (this.#history.length > 1 && (this.#history[1] as { at: number }).at < position.at - this.#keepMs) this.#history.shift();
  }

  lagMs(position: Position | undefined, now: number): number {
    if (position === undefined) return Number.POSITIVE_INFINITY;
    const newest = this.#history.at(-1);
    // The primary has not been measured (it has not answered since start-up): nothing says a replica is behind.
    if (newest === undefined || position.lsn >= newest.lsn) return 0;
    const passed = this.#history.findIndex((sample) => sample.lsn > position.lsn);
    if (passed <= 0) {
      // Behind every position kept: when the oldest is older than keepMs, the replica has been missing data at least
      // since then (a lower bound the stats can show); a younger one (just after start-up) dates nothing.
      const oldest = this.#history[0];
      return oldest !== undefined && oldest.at <= now - this.#keepMs ? now - oldest.at : Number.POSITIVE_INFINITY;
    }
    return Math.max(0, now - (this.#history[passed] as { at: number }).at);
  }
}

export interface MemberStats {
  role: MemberRole;
  /** The member's URL without its password. */
  url: string;
  /** The last probe or statement found it answering. */
  up: boolean;
  /** It takes new requests: answers and (a replica) is within MAX_REPLICA_LAG_MS. */
  serving: boolean;
  /** Replay lag behind the primary (0 for the primary; null while unknown). */
  lagMs: number | null;
  /** The newest masterchain seqno it is known to hold. */
  seqno: number | null;
  inFlight: number;
  requests: number;
  statements: number;
  failovers: number;
}

export function unavailable(message: string): ConnectError {
  return new ConnectError(message, Code.Unavailable);
}
