import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type AddressMetadata, type Trace, type TraceAction, TraceSchema } from "../../gen/tonquery/v1/trace_pb.ts";
import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";
import { actionAddresses } from "../actions/present.ts";
import { expandActionTypes } from "../actions/types.ts";
import { type LoadedTrace, traceHeader, traceOf } from "../handlers/traces.ts";
import type { TraceRow } from "../db/traces.ts";
import { transactionRowAddresses } from "../db/transactions.ts";
import { delimitedTrace } from "../encode/proto/traces.ts";
import { AsyncResource } from "node:async_hooks";
import { log } from "../runtime/log.ts";
import { untilAborted } from "../runtime/abort.ts";
import type { ServiceDeps } from "../service/deps.ts";
import type { StreamMetrics } from "./metrics.ts";
import {
  asRead,
  type BlockTraceRef,
  type LoadedTraces,
  loadTraces,
  type MasterchainBlock,
  pollMasterchain,
  selectBlockTraces,
  selectUnclassified,
} from "./reads.ts";

// One reader of the index for all the streams of an instance (see README "Live streams").
//
// The hub polls the index once per STREAM_POLL_INTERVAL_MS while any stream is open, and moves its position along
// the *contiguous* committed prefix of masterchain blocks: the worker commits batches out of order, so block N+1
// may be visible before N, and a missing seqno below a visible one means "not yet". For each new block it reads,
// once, which traces the block completed and the accounts of their transactions; then, once, the traces that the
// live streams match (their rows, transactions, actions, address book and metadata, in one read), and hands each
// live stream its share. A stream that starts behind the hub (it resumes from an earlier position) reads block
// after block through the hub's cache at its own pace, and joins the live streams when it reaches the hub's
// position, in the same turn of the event loop, so it neither misses nor repeats a block.

/** What a stream follows. */
export interface StreamFilter {
  /** Raw addresses; empty: every trace. */
  accounts: ReadonlySet<string>;
  /** trace_external_hash_norm values whose traces the stream also wants (REST `trace` events); none: no such. */
  externalHashNorms: ReadonlySet<string>;
  includeTransactions: boolean;
  /** Expanded action types, undefined: no actions. */
  actionTypes: readonly string[] | undefined;
  addressBook: boolean;
  metadata: boolean;
}

/**
 * One trace of a block as streams get it: one per load, trace and variant (with or without transactions, action
 * type set), shared by the streams that want the same, with what their doors print of it built once.
 */
export interface StreamTrace {
  /** As the typed API's Trace: built on first use (Connect JSON's); the other doors write `loaded` instead. */
  readonly trace: Trace;
  /** As a length-delimited binary Trace (the binary RPC doors'): written from `loaded` on first use. */
  readonly binary: Uint8Array;
  /** The same trace as the rows every door writes from (src/encode/). */
  loaded: LoadedTrace;
  externalHashNorm: string | undefined;
  /** The accounts of the trace's transactions. */
  accounts: readonly string[];
}

export type StreamItem =
  | {
      kind: "block";
      seqno: number;
      utime: number;
      traces: StreamTrace[];
      addressBook: Record<string, AddressBookRow>;
      metadata: Record<string, AddressMetadata>;
    }
  | { kind: "heartbeat"; seqno: number };

/** The metadata key of a stream's position in the error that ends it. */
export const positionKey = "tonquery-stream-position";

/** An error that ends a stream and tells its client where to resume. */
export function streamEnded(message: string, code: Code, position: number): ConnectError {
  return new ConnectError(`${message}; resume after position ${position}`, code, { [positionKey]: String(position) });
}

/** The position a stream error carries, if any. */
export function positionOf(error: ConnectError): number | undefined {
  const value = error.metadata.get(positionKey);
  return value === null ? undefined : Number(value);
}

export interface HubSettings {
  pollIntervalMs: number;
  heartbeatMs: number;
  bufferBlocks: number;
  resumeWindowBlocks: number;
  gapWaitMs: number;
  actionsWaitMs: number;
  maxStreams: number;
  /** Bound of one read (its statements all run under one signal). */
  readTimeoutMs: number;
  /** Recent blocks kept in memory for streams catching up. */
  cacheBlocks: number;
}

/** The seqnos the first poll looks back over to find where the committed prefix ends. */
const initialWindow = 256;
/** Blocks a stream catching up has read ahead of the one it waits for: its reads overlap its client's. */
const prefetchBlocks = 3;
/** The shortest time a failed stream's client gets to read its end before its transport is cut. */
const killFloorMs = 10_000;
/** Blocks one poll reads at most. */
const pollLimit = 1000;

interface Load {
  traceIds: Set<string>;
  actionKeys: Set<string>;
  addressBook: boolean;
  metadata: boolean;
  result: Promise<LoadedTraces>;
  /** Streams waiting for it; at 0 (every one left) the read is stopped. */
  waiting: number;
  stop: AbortController;
}

interface CachedBlock {
  block: MasterchainBlock;
  traces: Promise<BlockTraceRef[]>;
  loads: Load[];
}

interface Need {
  traceIds: Set<string>;
  actionKeys: Map<string, readonly string[]>;
  addressBook: boolean;
  metadata: boolean;
}

class Subscriber {
  readonly filter: StreamFilter;
  readonly actionKey: string | undefined;
  /** What a trace is loaded as for the stream (with transactions or not, its action set): streams of one variant share it. */
  readonly variant: string;
  /** Blocks handed to the door, in order; the live hub pushes, the stream's generator takes. */
  readonly queue: StreamItem[] = [];
  /** The last position handed to the door (a block's seqno, or a heartbeat's). */
  position: number;
  live = false;
  failure: ConnectError | undefined;
  wake: (() => void) | undefined;
  readonly door: string;
  /** Cuts the client's transport: for a failed stream whose door cannot even write the error (its client reads nothing). */
  abortTransport: (() => void) | undefined;
  killTimer: NodeJS.Timeout | undefined;
  /** Since when the door has held the stream's last item without taking the next (its client is not reading). */
  yieldedAt: number | undefined;

  constructor(filter: StreamFilter, position: number, door: string) {
    this.filter = filter;
    this.actionKey = filter.actionTypes === undefined ? undefined : [...filter.actionTypes].sort().join(",");
    this.variant = `${filter.includeTransactions} ${this.actionKey ?? "-"}`;
    this.position = position;
    this.door = door;
  }

  notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  matches(ref: BlockTraceRef): boolean {
    const { accounts, externalHashNorms } = this.filter;
    if (ref.externalHashNorm !== undefined && externalHashNorms.has(ref.externalHashNorm)) return true;
    if (accounts.size === 0) return externalHashNorms.size === 0;
    return ref.accounts.some((account) => accounts.has(account));
  }
}

export class StreamHub {
  readonly #deps: ServiceDeps;
  readonly #settings: HubSettings;
  readonly #metrics: StreamMetrics | undefined;
  readonly #subscribers = new Set<Subscriber>();
  readonly #live = new Set<Subscriber>();
  readonly #cache = new Map<number, CachedBlock>();
  /** Per load, its traces as streams get them, by variant (Subscriber.variant) and trace id. */
  readonly #streamTraces = new WeakMap<LoadedTraces, Map<string, Map<string, StreamTrace>>>();
  /** Everything up to here has been handed to the live streams (or had none): streams catching up read up to it. */
  #position: number | undefined;
  /** The newest masterchain seqno seen in the index (committed, maybe above a gap). */
  #newest: number | undefined;
  /** Blocks committed above the prefix, waiting for the gap below them to close. */
  #ahead: MasterchainBlock[] = [];
  #gapSince: number | undefined;
  /** When a poll first saw each block not handed out yet (for tonquery_stream_hand_out_delay_seconds). */
  readonly #seenAt = new Map<number, number>();
  #busy = false;
  /** No stream was open after the last poll: the position is kept (a caller may still read it) but is no longer followed. */
  #stale = false;
  #pollFailing = false;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  readonly #advanced = new Set<() => void>();
  readonly #openListeners = new Set<() => void>();
  readonly #closed = new AbortController();
  /**
   * The hub's own async context (the service's start-up): its polls and reads run there, not in the context of the
   * request whose stream happened to start them, so their log lines, spans and routes are the hub's.
   */
  readonly #context = new AsyncResource("tonquery.stream-hub");

  constructor(deps: ServiceDeps, settings: HubSettings, metrics?: StreamMetrics) {
    this.#deps = deps;
    this.#settings = settings;
    this.#metrics = metrics;
    metrics?.watch(() => ({
      open: this.#subscribers,
      indexLag: this.#newest === undefined || this.#position === undefined ? 0 : this.#newest - this.#position,
      streamLag: this.#position === undefined ? 0 : [...this.#subscribers].reduce((max, s) => (s.position < 0 ? max : Math.max(max, (this.#position as number) - s.position)), 0),
    }));
  }

  /** Calls `listener` whenever a stream opens (the demo starts its replay on the first one). */
  onStreamOpened(listener: () => void): () => void {
    this.#openListeners.add(listener);
    return () => this.#openListeners.delete(listener);
  }

  get position(): number | undefined {
    return this.#position;
  }

  /** Streams open now. */
  get size(): number {
    return this.#subscribers.size;
  }

  /**
   * Ends every stream with UNAVAILABLE and its position (the server is shutting down), and stops polling: no read is
   * started afterwards, and reads in flight are stopped.
   */
  close(): void {
    this.#closed.abort(new ConnectError("the server is shutting down", Code.Unavailable));
    clearTimeout(this.#timer);
    for (const sub of this.#subscribers) this.#fail(sub, streamEnded("the server is shutting down", Code.Unavailable, sub.position));
  }

  /**
   * A stream of `filter`'s blocks after `resumeAfter` (undefined: from the hub's position, live only) as items for a
   * door; ends when `signal` aborts (the client left) or with a ConnectError carrying its position.
   */
  async *open(
    filter: StreamFilter,
    resumeAfter: number | undefined,
    signal: AbortSignal,
    door: string,
    abortTransport?: () => void,
  ): AsyncGenerator<StreamItem> {
    if (this.#subscribers.size >= this.#settings.maxStreams) {
      throw new ConnectError(`too many streams on this instance (${this.#settings.maxStreams})`, Code.ResourceExhausted);
    }
    // Counted from here, so that streams that wait for the first poll count against the limit too.
    const sub = new Subscriber(filter, -1, door);
    sub.abortTransport = abortTransport;
    this.#subscribers.add(sub);
    this.#metrics?.opened(door);
    for (const listener of this.#openListeners) listener();
    const stop = AbortSignal.any([signal, this.#closed.signal]);
    const onStop = () => sub.notify();
    stop.addEventListener("abort", onStop);
    try {
      await this.admit(resumeAfter, stop, 1);
      const position = this.#position as number;
      sub.position = resumeAfter ?? position;
      yield* this.#run(sub, stop);
    } finally {
      clearTimeout(sub.killTimer);
      stop.removeEventListener("abort", onStop);
      this.#subscribers.delete(sub);
      this.#live.delete(sub);
      this.#metrics?.closed(door);
      if (this.#subscribers.size === 0) this.#idle();
    }
  }

  /**
   * Whether a stream of `resumeAfter` can open now: the hub knows its position (the first stream waits for the first
   * poll), the position is within the resume window and not ahead of the index, and the instance has room. Doors
   * call it before they answer, to refuse with a status; open() checks again.
   */
  async admit(resumeAfter: number | undefined, signal: AbortSignal, self = 0): Promise<void> {
    if (this.#closed.signal.aborted) throw new ConnectError("the server is shutting down", Code.Unavailable);
    if (this.#subscribers.size - self >= this.#settings.maxStreams) {
      throw new ConnectError(`too many streams on this instance (${this.#settings.maxStreams})`, Code.ResourceExhausted);
    }
    await this.#start(AbortSignal.any([signal, this.#closed.signal]));
    const position = this.#position as number;
    if (resumeAfter === undefined) return;
    const oldest = Math.max(0, position - this.#settings.resumeWindowBlocks);
    if (resumeAfter < oldest) {
      throw new ConnectError(
        `position ${resumeAfter} is older than the resume window of ${this.#settings.resumeWindowBlocks} blocks: the oldest position accepted now is ${oldest}`,
        Code.OutOfRange,
        { [positionKey]: String(oldest) },
      );
    }
    const newest = Math.max(this.#newest ?? position, position);
    if (resumeAfter > newest) throw new ConnectError(`position ${resumeAfter} is ahead of the index: its newest masterchain block is ${newest}`, Code.OutOfRange);
  }

  async *#run(sub: Subscriber, stop: AbortSignal): AsyncGenerator<StreamItem> {
    let lastSent = Date.now();
    for (;;) {
      if (sub.failure !== undefined) {
        clearTimeout(sub.killTimer);
        throw sub.failure;
      }
      if (stop.aborted) {
        if (this.#closed.signal.aborted) throw streamEnded("the server is shutting down", Code.Unavailable, sub.position);
        return;
      }
      const item = sub.queue.shift();
      if (item !== undefined) {
        sub.position = item.seqno;
        lastSent = Date.now();
        this.#metrics?.sent(sub.door);
        sub.yieldedAt = Date.now();
        yield item;
        sub.yieldedAt = undefined;
        continue;
      }
      const hub = this.#position as number;
      if (!sub.live && sub.position < hub) {
        // Catching up: the next block, read through the cache, at the client's pace.
        const seqno = sub.position + 1;
        this.#prefetch(sub, seqno + 1, Math.min(hub, seqno + prefetchBlocks), stop);
        let content: StreamItem | undefined;
        try {
          content = await this.#contentFor(sub, seqno, stop);
        } catch (err) {
          // Stopped while reading: the stream ends as it would have between blocks.
          if (sub.failure !== undefined) throw sub.failure;
          if (this.#closed.signal.aborted) throw streamEnded("the server is shutting down", Code.Unavailable, sub.position);
          if (stop.aborted) return;
          throw err;
        }
        if (content !== undefined) {
          sub.position = seqno;
          lastSent = Date.now();
          this.#metrics?.sent(sub.door);
          sub.yieldedAt = Date.now();
          yield content;
          sub.yieldedAt = undefined;
        } else {
          sub.position = seqno;
          if (Date.now() - lastSent >= this.#settings.heartbeatMs) {
            lastSent = Date.now();
            sub.yieldedAt = Date.now();
            yield { kind: "heartbeat", seqno };
            sub.yieldedAt = undefined;
          }
        }
        continue;
      }
      if (!sub.live && sub.position === hub && !this.#busy) {
        // In the same turn as the check above: the next block the hub hands out is the stream's next one.
        sub.live = true;
        this.#live.add(sub);
        continue;
      }
      // Live with nothing queued, or ahead of the hub, or the hub is busy with a block: wait for news.
      const waited = Date.now() - lastSent;
      const woken = await this.#wait(sub, Math.max(0, this.#settings.heartbeatMs - waited));
      if (!woken && sub.queue.length === 0 && sub.failure === undefined && !stop.aborted) {
        lastSent = Date.now();
        // Live and caught up: every block up to the hub's position was handed over or had nothing for this stream.
        if (sub.live) sub.position = Math.max(sub.position, this.#position as number);
        this.#metrics?.sent(sub.door);
        sub.yieldedAt = Date.now();
        yield { kind: "heartbeat", seqno: sub.position };
        sub.yieldedAt = undefined;
      }
    }
  }

  /** Waits for the stream's next item, the hub's next block, or `ms`; true unless the time ran out. */
  #wait(sub: Subscriber, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        sub.wake = undefined;
        this.#advanced.delete(done);
        resolve(false);
      }, ms);
      const done = () => {
        clearTimeout(timer);
        this.#advanced.delete(done);
        sub.wake = undefined;
        resolve(true);
      };
      sub.wake = done;
      if (!sub.live) this.#advanced.add(done);
    });
  }

  #fail(sub: Subscriber, error: ConnectError): void {
    if (sub.failure !== undefined) return;
    sub.failure = error;
    sub.queue.length = 0;
    this.#live.delete(sub);
    sub.notify();
    // The error goes out after what the door is writing; a client that reads nothing for a heartbeat period more
    // (10 s at least) has its transport cut (it resumes from the last position it did read).
    sub.killTimer = setTimeout(() => sub.abortTransport?.(), Math.max(killFloorMs, this.#settings.heartbeatMs));
    sub.killTimer.unref();
  }

  /** Starts following the index when the first stream opens; resolves once the hub knows its position. */
  async #start(stop: AbortSignal): Promise<void> {
    while (this.#position === undefined || this.#stale) {
      if (stop.aborted) throw stop.reason instanceof ConnectError ? stop.reason : new ConnectError("stream cancelled", Code.Canceled);
      if (this.#polling === undefined) this.#schedule(0);
      await new Promise<void>((resolve) => {
        const done = () => {
          this.#advanced.delete(done);
          stop.removeEventListener("abort", done);
          resolve();
        };
        this.#advanced.add(done);
        stop.addEventListener("abort", done, { once: true });
      });
    }
  }

  /** No stream is left: polling stops, and the position is forgotten (the next stream starts from the index's present). */
  #idle(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#polling === undefined) this.#forget();
  }

  /** The position stops following the index: the next poll starts afresh from the index's present. */
  #forget(): void {
    this.#stale = true;
    this.#cache.clear();
  }

  #schedule(ms: number): void {
    if (this.#timer !== undefined || this.#polling !== undefined || this.#closed.signal.aborted) return;
    this.#timer = this.#context.runInAsyncScope(() => setTimeout(() => {
      this.#timer = undefined;
      this.#polling = this.#poll().finally(() => {
        this.#polling = undefined;
        if (this.#subscribers.size > 0) this.#schedule(this.#settings.pollIntervalMs);
        else this.#forget();
      });
    }, ms));
  }

  async #poll(): Promise<void> {
    const settings = this.#settings;
    if (this.#stale) {
      this.#stale = false;
      this.#position = undefined;
      this.#newest = undefined;
      this.#seenAt.clear();
      this.#ahead = [];
      this.#gapSince = undefined;
    }
    let blocks: MasterchainBlock[];
    try {
      blocks = await asRead(this.#deps, this.#closed.signal, settings.readTimeoutMs, (signal) =>
        pollMasterchain(this.#deps, signal, this.#position ?? undefined, initialWindow, pollLimit),
      );
    } catch (err) {
      // Logged when polls start failing (an outage is logged by the availability probe too), not every interval.
      if (!this.#closed.signal.aborted && !this.#pollFailing) log.warn("stream poll failed: streams wait (with heartbeats) until the index answers", { error: err });
      this.#pollFailing = true;
      return;
    }
    if (this.#pollFailing) log.info("stream poll answers again");
    this.#pollFailing = false;
    this.#metrics?.polled();
    const now = performance.now();
    for (const block of blocks) if (!this.#seenAt.has(block.seqno)) this.#seenAt.set(block.seqno, now);
    if (blocks.length > 0) this.#newest = Math.max(this.#newest ?? 0, (blocks[blocks.length - 1] as MasterchainBlock).seqno);
    if (this.#position === undefined) {
      // First poll: the prefix ends before the first gap of the newest seqnos (or at the newest block).
      const first = blocks[0];
      if (first === undefined) {
        // An empty index: streams start at 0 and get block 1 onwards.
        this.#position = 0;
        this.#announce();
        return;
      }
      let end = 0;
      while (end + 1 < blocks.length && (blocks[end + 1] as MasterchainBlock).seqno === (blocks[end] as MasterchainBlock).seqno + 1) end++;
      this.#position = (blocks[end] as MasterchainBlock).seqno;
      this.#ahead = blocks.slice(end + 1);
      this.#announce();
      return;
    }
    const known = new Map([...this.#ahead, ...blocks].map((block) => [block.seqno, block]));
    for (;;) {
      const position = this.#position as number;
      let next = known.get(position + 1);
      if (next === undefined) {
        const above = [...known.keys()].filter((seqno) => seqno > position);
        if (above.length === 0) {
          this.#gapSince = undefined;
          break;
        }
        // A gap below committed blocks: its batch is still being written. Waited for, within a bound.
        this.#gapSince ??= Date.now();
        if (Date.now() - this.#gapSince < settings.gapWaitMs) break;
        const resumeAt = Math.min(...above);
        log.warn("masterchain blocks missing below committed ones: streams move past them", { from: position + 1, to: resumeAt - 1, waited_ms: Date.now() - this.#gapSince });
        this.#metrics?.gapSkipped(resumeAt - position - 1);
        next = known.get(resumeAt) as MasterchainBlock;
        this.#position = resumeAt - 1;
      }
      this.#gapSince = undefined;
      known.delete(next.seqno);
      try {
        await this.#handOut(next);
      } catch (err) {
        // Read again at the next poll; the streams wait (and get heartbeats).
        known.set(next.seqno, next);
        if (!this.#closed.signal.aborted) log.warn("stream block read failed", { seqno: next.seqno, error: err });
        break;
      }
      if (this.#subscribers.size === 0 || this.#closed.signal.aborted) break;
    }
    this.#ahead = [...known.values()].filter((block) => block.seqno > (this.#position as number)).sort((a, b) => a.seqno - b.seqno);
  }

  /** Reads block `block` once for the live streams, queues each one's share, then moves the hub's position to it. */
  async #handOut(block: MasterchainBlock): Promise<void> {
    this.#busy = true;
    try {
      const live = [...this.#live];
      if (live.length > 0) {
        const cached = this.#cached(block);
        const refs = await cached.traces;
        const need = this.#need(refs, live);
        const load = need.traceIds.size === 0 ? undefined : this.#load(cached, refs, need);
        let loaded: LoadedTraces | undefined;
        if (load !== undefined) {
          load.waiting++;
          try {
            loaded = await load.result;
          } finally {
            load.waiting--;
          }
        }
        const now = performance.now();
        for (const sub of live) {
          if (!this.#live.has(sub)) continue;
          const content = loaded === undefined ? undefined : this.#content(sub, block, refs, loaded);
          if (content === undefined) continue;
          if (sub.queue.length >= this.#settings.bufferBlocks) {
            this.#metrics?.slowConsumer(sub.door);
            this.#fail(sub, streamEnded(`the client read too slowly: ${sub.queue.length} blocks were waiting for it (STREAM_BUFFER_BLOCKS)`, Code.ResourceExhausted, sub.position));
            continue;
          }
          sub.queue.push(content);
          sub.notify();
        }
        this.#metrics?.fannedOut(performance.now() - now);
      }
      // A stream catching up takes blocks at its client's pace, so it has no queue to overflow; its client is too slow
      // when it has not taken the last item for two heartbeat periods while the index moves on.
      const stalledSince = Date.now() - 2 * this.#settings.heartbeatMs;
      for (const sub of this.#subscribers) {
        if (sub.live || sub.failure !== undefined || sub.yieldedAt === undefined || sub.yieldedAt > stalledSince) continue;
        this.#metrics?.slowConsumer(sub.door);
        this.#fail(sub, streamEnded("the client stopped reading while the stream was catching up", Code.ResourceExhausted, sub.position));
      }
      this.#position = block.seqno;
      const seen = this.#seenAt.get(block.seqno);
      if (seen !== undefined && live.length > 0) this.#metrics?.handedOut((performance.now() - seen) / 1000);
      for (const seqno of this.#seenAt.keys()) if (seqno <= block.seqno) this.#seenAt.delete(seqno);
      this.#evict();
    } finally {
      this.#busy = false;
      this.#announce();
    }
  }

  #announce(): void {
    for (const done of [...this.#advanced]) done();
  }

  #evict(): void {
    const oldest = (this.#position as number) - this.#settings.cacheBlocks;
    for (const seqno of this.#cache.keys()) if (seqno <= oldest) this.#cache.delete(seqno);
  }

  #cached(block: MasterchainBlock): CachedBlock {
    let cached = this.#cache.get(block.seqno);
    if (cached === undefined) {
      const traces = this.#context.runInAsyncScope(() =>
        asRead(this.#deps, this.#closed.signal, this.#settings.readTimeoutMs, (signal) => selectBlockTraces(this.#deps, signal, block.seqno)),
      );
      cached = { block, traces, loads: [] };
      this.#cache.set(block.seqno, cached);
      // A failed read is not kept: the next stream to need the block reads it again.
      traces.catch(() => {
        if (this.#cache.get(block.seqno) === cached) this.#cache.delete(block.seqno);
      });
    }
    return cached;
  }

  #need(refs: readonly BlockTraceRef[], subs: Iterable<Subscriber>): Need {
    const need: Need = { traceIds: new Set(), actionKeys: new Map(), addressBook: false, metadata: false };
    for (const sub of subs) {
      let matched = false;
      for (const ref of refs) {
        if (!sub.matches(ref)) continue;
        need.traceIds.add(ref.traceId);
        matched = true;
      }
      if (!matched) continue;
      if (sub.actionKey !== undefined) need.actionKeys.set(sub.actionKey, sub.filter.actionTypes as readonly string[]);
      need.addressBook ||= sub.filter.addressBook;
      need.metadata ||= sub.filter.metadata;
    }
    return need;
  }

  /** A load of the block that covers `need`: one under way or done, else a new one (one read, one snapshot). */
  #load(cached: CachedBlock, refs: readonly BlockTraceRef[], need: Need): Load {
    const covers = (load: Load) =>
      [...need.traceIds].every((id) => load.traceIds.has(id)) &&
      [...need.actionKeys.keys()].every((key) => load.actionKeys.has(key)) &&
      (!need.addressBook || load.addressBook) &&
      (!need.metadata || load.metadata);
    const found = cached.loads.find(covers);
    if (found !== undefined) return found;
    const stop = new AbortController();
    const settings = this.#settings;
    const deps = this.#deps;
    const closed = this.#closed.signal;
    const traceIds = [...need.traceIds];
    const result = this.#context.runInAsyncScope(async () => {
      const cancelled = AbortSignal.any([stop.signal, closed]);
      if (need.actionKeys.size > 0) {
        // Actions exist once the classifier has classified the traces: the block waits for it, within a bound.
        let pending = refs.filter((ref) => need.traceIds.has(ref.traceId) && !ref.classified).map((ref) => ref.traceId);
        const deadline = Date.now() + settings.actionsWaitMs;
        while (pending.length > 0 && Date.now() < deadline) {
          await sleep(Math.min(settings.pollIntervalMs, deadline - Date.now()), cancelled);
          const unclassified = await asRead(deps, cancelled, settings.readTimeoutMs, (signal) => selectUnclassified(deps, signal, pending));
          pending = pending.filter((id) => unclassified.has(id));
        }
        if (pending.length > 0) this.#metrics?.actionsTimedOut(pending.length);
      }
      return asRead(deps, cancelled, settings.readTimeoutMs, (signal) =>
        loadTraces(
          deps,
          signal,
          { traceIds, actionTypes: need.actionKeys, addressBook: need.addressBook, metadata: need.metadata, maxTraceTransactions: deps.config.maxTraceTransactions },
          addressesOfLoad,
        ),
      );
    });
    const load: Load = {
      traceIds: need.traceIds,
      actionKeys: new Set(need.actionKeys.keys()),
      addressBook: need.addressBook,
      metadata: need.metadata,
      result,
      waiting: 0,
      stop,
    };
    cached.loads.push(load);
    result.catch(() => {
      const index = cached.loads.indexOf(load);
      if (index >= 0) cached.loads.splice(index, 1);
    });
    return load;
  }

  /** Starts the reads of blocks `from`..`to` for a stream catching up, so that they are under way when it gets there. */
  #prefetch(sub: Subscriber, from: number, to: number, stop: AbortSignal): void {
    for (let seqno = from; seqno <= to; seqno++) {
      if (this.#cache.has(seqno)) continue;
      const cached = this.#cached({ seqno, utime: 0 });
      cached.traces.then(
        (refs) => {
          const need = this.#need(refs, [sub]);
          if (need.traceIds.size === 0 || sub.failure !== undefined || stop.aborted) return;
          const load = this.#load(cached, refs, need);
          load.result.catch(() => {});
          // The stream gone, a read-ahead nobody waits for starts no further statement.
          stop.addEventListener("abort", () => load.waiting === 0 && load.stop.abort(), { once: true });
        },
        () => {},
      );
    }
  }

  /** Block `seqno` for a stream catching up: undefined when it has nothing for the stream. */
  async #contentFor(sub: Subscriber, seqno: number, stop: AbortSignal): Promise<StreamItem | undefined> {
    // An old block, not seen by a poll, has no time here: the content takes its traces' (see #content).
    const cached = this.#cache.get(seqno) ?? this.#cached({ seqno, utime: 0 });
    const refs = await untilAborted(stop, cached.traces, stopReason);
    const need = this.#need(refs, [sub]);
    if (need.traceIds.size === 0) return undefined;
    const load = this.#load(cached, refs, need);
    load.waiting++;
    try {
      const loaded = await untilAborted(stop, load.result, stopReason);
      return this.#content(sub, cached.block, refs, loaded);
    } finally {
      load.waiting--;
      // Nobody waits for it any more: no further statement of it starts.
      if (load.waiting === 0 && stop.aborted) load.stop.abort();
    }
  }

  /** A load's traces in a stream's variant, by trace id, shared with the streams of the same variant. */
  #variantTraces(sub: Subscriber, loaded: LoadedTraces): Map<string, StreamTrace> {
    let variants = this.#streamTraces.get(loaded);
    if (variants === undefined) {
      variants = new Map();
      this.#streamTraces.set(loaded, variants);
    }
    let traces = variants.get(sub.variant);
    if (traces === undefined) {
      traces = new Map();
      variants.set(sub.variant, traces);
    }
    return traces;
  }

  /** The stream's share of a loaded block. */
  #content(sub: Subscriber, block: MasterchainBlock, refs: readonly BlockTraceRef[], loaded: LoadedTraces): StreamItem | undefined {
    const traces: StreamTrace[] = [];
    const addresses = new Set<string>();
    const shared = this.#variantTraces(sub, loaded);
    for (const ref of refs) {
      if (!sub.matches(ref)) continue;
      let trace = shared.get(ref.traceId);
      if (trace === undefined) {
        const row = loaded.rows.get(ref.traceId);
        if (row === undefined) continue;
        const actions = sub.actionKey === undefined ? [] : (loaded.actions.get(sub.actionKey)?.get(ref.traceId) ?? []);
        const { includeTransactions } = sub.filter;
        trace = streamTrace(ref, row, loaded, { includeTransactions, actions, maxTraceTransactions: this.#deps.config.maxTraceTransactions });
        shared.set(ref.traceId, trace);
      }
      traces.push(trace);
      if (sub.filter.addressBook || sub.filter.metadata) {
        for (const address of transactionRowAddresses(loaded.rowSet, loaded.transactionRows.get(ref.traceId) ?? [])) addresses.add(address);
        for (const action of trace.loaded.actions) for (const address of actionAddresses(action)) addresses.add(address);
      }
    }
    if (traces.length === 0) return undefined;
    const addressBook: Record<string, AddressBookRow> = {};
    const metadata: Record<string, AddressMetadata> = {};
    for (const address of addresses) {
      const row = sub.filter.addressBook ? loaded.addressBook[address] : undefined;
      if (row !== undefined) addressBook[address] = row;
      const meta = sub.filter.metadata ? loaded.metadata[address] : undefined;
      if (meta !== undefined) metadata[address] = meta;
    }
    const utime = block.utime !== 0 ? block.utime : Math.max(0, ...traces.map((t) => t.loaded.row.end_utime ?? 0));
    return { kind: "block", seqno: block.seqno, utime, traces, addressBook, metadata };
  }
}

/**
 * A trace of a load in a stream's variant: its header and actions only when the stream wants no transactions (a
 * complete trace without transactions is written so), a header only when it is over MAX_TRACE_TRANSACTIONS, or all
 * of it. Its Trace and binary form are built once, when a door first asks for them.
 */
export function streamTrace(
  ref: BlockTraceRef,
  row: TraceRow,
  loaded: LoadedTraces,
  variant: { includeTransactions: boolean; actions: TraceAction[]; maxTraceTransactions: number },
): StreamTrace {
  const { includeTransactions, actions } = variant;
  const rows = includeTransactions ? loaded.transactionRows.get(ref.traceId) : [];
  // No rows: a trace loaded without its transactions (over MAX_TRACE_TRANSACTIONS), or one that has none.
  const transactions = rows === undefined && BigInt(row.nodes_ ?? "0") > BigInt(variant.maxTraceTransactions) ? undefined : (rows ?? []);
  const trace: LoadedTrace = { row, transactions, rowSet: loaded.rowSet, actions, bodies: loaded.bodies };
  let typed: Trace | undefined;
  let binary: Uint8Array | undefined;
  return {
    get trace() {
      typed ??= includeTransactions ? traceOf(trace) : create(TraceSchema, { ...traceHeader(row), actions });
      return typed;
    },
    get binary() {
      binary ??= delimitedTrace(trace);
      return binary;
    },
    loaded: trace,
    externalHashNorm: ref.externalHashNorm,
    accounts: ref.accounts,
  };
}

function addressesOfLoad(loaded: LoadedTraces): string[] {
  const out = transactionRowAddresses(loaded.rowSet);
  for (const byTrace of loaded.actions.values()) for (const list of byTrace.values()) for (const action of list) out.push(...actionAddresses(action));
  return out;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The filter a request names, checked: addresses parse and are at most `maxAddresses`, action types expand. */
export function streamFilter(
  input: {
    accounts: readonly string[];
    externalHashNorms?: readonly string[];
    includeTransactions: boolean;
    includeActions: boolean;
    supportedActionTypes: readonly string[];
    addressBook: boolean;
    metadata: boolean;
  },
  maxAddresses: number,
  parse: (address: string, index: number) => string,
): StreamFilter {
  const accounts = new Set(input.accounts.map(parse));
  if (accounts.size > maxAddresses) throw new ConnectError(`too many addresses: ${accounts.size} > ${maxAddresses}`, Code.InvalidArgument);
  return {
    accounts,
    externalHashNorms: new Set(input.externalHashNorms ?? []),
    includeTransactions: input.includeTransactions,
    actionTypes: input.includeActions ? expandActionTypes(input.supportedActionTypes.length === 0 ? ["latest"] : [...input.supportedActionTypes]) : undefined,
    addressBook: input.addressBook,
    metadata: input.metadata,
  };
}

/** The hub's waits fail with what stopped them as it is (a stream's end, the hub's close), not as a request's error. */
function stopReason(signal: AbortSignal): unknown {
  return signal.reason;
}
