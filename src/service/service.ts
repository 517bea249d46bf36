import { Code, ConnectError, type ConnectRouter, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type GetAdjacentTransactionsRequest,
  type GetAdjacentTransactionsResponse,
  type GetBlockTransactionsExtRequest,
  type GetBlockTransactionsExtResponse,
  type GetMasterchainInfoRequest,
  type GetMasterchainInfoResponse,
  type GetTracesRequest,
  type GetTracesResponse,
  TonQueryService,
} from "../../gen/tonquery/v1/service_pb.ts";
import type { StreamTracesRequest } from "../../gen/tonquery/v1/stream_pb.ts";
import { adjacentTransactionsResponse, loadAdjacentTransactions, type LoadedTransactions } from "../handlers/adjacent-transactions.ts";
import { blockTransactionsExtResponse, defaultCount, loadBlockTransactionsExt, type LoadedBlockTransactions } from "../handlers/block-transactions-ext.ts";
import { blockTransactionsExtBinary } from "../encode/proto/block-transactions.ts";
import { getMasterchainInfo } from "../handlers/masterchain-info.ts";
import { getTraces, streamTraces, type TraceSink } from "../handlers/traces.ts";
import { Admission, expectedTransactionsPerTrace, type HeldSlots, transactionsWeight } from "./admission.ts";
import { answerDelivery, type AnswerDelivery } from "./answer-delivery.ts";
import { isSnapshotLost } from "../db/client.ts";
import { prioritise } from "../db/connection-gate.ts";
import { prepareBodyDecoding } from "../decoding/page-bodies.ts";
import { exposeIndexSeqno, minIndexSeqno } from "./index-freshness.ts";
import { respondsInBinary, TracesProtoSink } from "../encode/proto/traces.ts";
import { adjacentTransactionsBinary } from "../encode/proto/transactions.ts";
import { assertSelfEncodingSupported, releaseOwnEncoding } from "../encode/proto/own-encoding.ts";
import type { ServiceDeps } from "./deps.ts";
import { MemoryRelease } from "../runtime/memory-release.ts";
import { StreamHub } from "../streams/hub.ts";
import { StreamMetrics } from "../streams/metrics.ts";
import { streamTracesRpc } from "../streams/rpc.ts";

/**
 * What a door does with a response while the request still holds its admission: the RPC doors take the message
 * as it is (Connect serialises it right after), the REST door presents and serialises it there, so that the
 * legacy JSON of a page is built within the same memory bound as the page.
 */
type Finish<Response, Out> = (response: Response) => Out;

/** The one implementation behind both doors: Connect/gRPC/gRPC-web call it through the router, REST directly. */
export function createTonQueryService(deps: ServiceDeps) {
  const { config } = deps;
  // Before the first request, not during it: compiling the schema takes most of a second.
  prepareBodyDecoding(config);
  // The binary doors' pages are sent as the bytes the encoders wrote, which an unpatched connect would drop.
  assertSelfEncodingSupported(TonQueryService.method.getTraces);
  const admission = new Admission(config.maxConcurrentRequests, deps.telemetry?.metrics);
  // Every request that reads the index passes here: when none has for a while, or the process holds too much, the
  // heap's emptied pages go back.
  const memoryRelease = new MemoryRelease({
    idleMs: config.idleMemoryReleaseMs,
    softLimitBytes: config.memorySoftLimitMb * 1024 * 1024,
    recorder: deps.telemetry?.metrics,
  });
  deps.telemetry?.metrics.watchAdmission(() => admission.state());
  // A guess until the page's trace rows are read; streamTraces then resizes to the transactions they hold.
  // One reader of the index for every live stream of this instance (src/streams).
  const streams = new StreamHub(
    deps,
    {
      pollIntervalMs: config.streamPollIntervalMs,
      heartbeatMs: config.streamHeartbeatMs,
      bufferBlocks: config.streamBufferBlocks,
      resumeWindowBlocks: config.streamResumeWindowBlocks,
      gapWaitMs: config.streamGapWaitMs,
      actionsWaitMs: config.streamActionsWaitMs,
      maxStreams: config.streamMaxStreams,
      readTimeoutMs: config.requestTimeoutMs,
      cacheBlocks: Math.max(16, config.streamBufferBlocks),
    },
    deps.telemetry === undefined ? undefined : new StreamMetrics(deps.telemetry.metrics.registry),
  );
  /** A page expected to hold a slot's worth of transactions (250) or more: 100 traces, a block page of 250. */
  const parallelReadsWeight = 1;
  const tracesWeight = (request: GetTracesRequest) => transactionsWeight((request.limit ?? config.defaultLimit) * expectedTransactionsPerTrace);

  /** `requestClass`: the operation and its page size, which admission keeps fair between (see Admission). */
  const admitted = async <Response, Out>(
    requestClass: string,
    context: HandlerContext,
    weight: number,
    handle: (context: HandlerContext, slots: HeldSlots) => Promise<Response>,
    finish: Finish<Response, Out | Promise<Out>> | undefined,
    answerSent: () => boolean = nothingSent,
  ): Promise<Out> => {
    const minSeqno = minIndexSeqno(context.requestHeader);
    const { bounded, done } = withServerDeadline(context, config.requestTimeoutMs);
    // The request's statements all go to one member, at least as fresh as its client asked (see Cluster), and all
    // read one snapshot of the index there, side by side only for a page large enough to gain from it (see SnapshotReads).
    const route = deps.db.route(bounded.signal, minSeqno, weight >= parallelReadsWeight ? "parallel" : "serial");
    // Set by the RPC doors, which send the answer after it is returned; the REST door sends it within the work.
    const delivery = context.values.get(answerDelivery);
    const work = async (slots: HeldSlots) => {
      prioritise(bounded.signal, () => slots.light);
      try {
        for (let runs = 1; ; runs++) {
          try {
            const response = await handle(bounded, slots);
            // A streamed answer's head, X-Index-Seqno included, went out before the end (see getTracesInto).
            if (!answerSent()) exposeIndexSeqno(context.responseHeader, await deps.db.indexSeqno(bounded.signal));
            // Read in full: the snapshot is let go before the answer is written.
            route.end();
            const answer = finish ? await finish(response) : (response as unknown as Out);
            // Unless the caller has already been answered with the signal's error (which its door is writing).
            if (delivery !== undefined && !bounded.signal.aborted) {
              slots.keepUntil(untilSent(delivery, bounded, config.requestTimeoutMs));
              void delivery.written.then((written) => {
                if (written && typeof answer === "object" && answer !== null) releaseOwnEncoding(answer);
              });
            }
            return answer;
          } catch (err) {
            // A run whose member failed under it is done again from the start, on another member, never finished
            // there: its door makes its sink anew per run and drops what the failed run wrote. Unless part of the
            // answer has already left (a REST page streamed past REST_HOLD_MAX_BYTES): bytes sent cannot be taken
            // back nor sent twice, so that request fails, and its door ends the response abnormally.
            if (!isSnapshotLost(err) || runs >= maxRuns || answerSent()) throw err;
            route.restart();
          }
        }
      } finally {
        route.end();
      }
    };
    // What is left of the deadline: a request whose turn would come too late is refused now (see Admission).
    memoryRelease.started();
    return admission.run(bounded.signal, weight, work, { kind: requestClass, timeoutMs: bounded.timeoutMs() }).finally(() => {
      done();
      memoryRelease.ended();
    });
  };

  /**
   * The operations whose answer a door writes from the rows read (see src/encode/): each admitted and loaded here
   * once, for every door; `present` turns the rows into the door's answer once the snapshot is let go.
   */
  const adjacentTransactions = <Out>(request: GetAdjacentTransactionsRequest, context: HandlerContext, present: Finish<LoadedTransactions, Out | Promise<Out>>) =>
    admitted<LoadedTransactions, Out>("getAdjacentTransactions", context, 0, (bounded) => loadAdjacentTransactions(deps, request, bounded), present);
  const blockTransactionsExt = <Out>(request: GetBlockTransactionsExtRequest, context: HandlerContext, present: Finish<LoadedBlockTransactions, Out | Promise<Out>>) =>
    admitted<LoadedBlockTransactions, Out>(
      `getBlockTransactionsExt/${request.count ?? defaultCount}`,
      context,
      transactionsWeight(request.count ?? defaultCount),
      (bounded) => loadBlockTransactionsExt(deps, request, bounded),
      present,
    );
  /**
   * The RPC doors' answer from the rows: a binary one written from them (src/encode/proto/), without the typed
   * message's objects; a JSON one as the typed message, which Connect serialises.
   */
  const rpcAnswer =
    <Loaded, Response, Out>(context: HandlerContext, binary: (loaded: Loaded) => Response, typed: (loaded: Loaded) => Response | Promise<Response>, finish?: Finish<Response, Out>) =>
    async (loaded: Loaded): Promise<Out> => {
      const response = respondsInBinary(context) ? binary(loaded) : await typed(loaded);
      return finish ? finish(response) : (response as unknown as Out);
    };

  const rpcMethods = {
    getMasterchainInfo: <Out = GetMasterchainInfoResponse>(
      request: GetMasterchainInfoRequest,
      context: HandlerContext,
      finish?: Finish<GetMasterchainInfoResponse, Out>,
    ) => admitted("getMasterchainInfo", context, 0, (bounded) => getMasterchainInfo(deps, request, bounded), finish),
    getAdjacentTransactions: <Out = GetAdjacentTransactionsResponse>(
      request: GetAdjacentTransactionsRequest,
      context: HandlerContext,
      finish?: Finish<GetAdjacentTransactionsResponse, Out>,
    ) => adjacentTransactions(request, context, rpcAnswer(context, adjacentTransactionsBinary, adjacentTransactionsResponse, finish)),
    getTraces: <Out = GetTracesResponse>(request: GetTracesRequest, context: HandlerContext, finish?: Finish<GetTracesResponse, Out>) =>
      admitted(
        `getTraces/${request.limit ?? config.defaultLimit}`,
        context,
        tracesWeight(request),
        (bounded, slots) =>
          respondsInBinary(context) ? streamTraces(deps, request, bounded, new TracesProtoSink(), slots) : getTraces(deps, request, bounded, slots),
        finish,
      ),
    getBlockTransactionsExt: <Out = GetBlockTransactionsExtResponse>(
      request: GetBlockTransactionsExtRequest,
      context: HandlerContext,
      finish?: Finish<GetBlockTransactionsExtResponse, Out>,
    ) => blockTransactionsExt(request, context, rpcAnswer(context, blockTransactionsExtBinary, blockTransactionsExtResponse, finish)),
    // Not admitted like a request: a stream holds no slot while it waits, and its reads are the hub's, shared.
    streamTraces: (request: StreamTracesRequest, context: HandlerContext) => streamTracesRpc(streams, config, request, context),
  } satisfies ServiceImpl<typeof TonQueryService>;
  return {
    ...rpcMethods,
    /** The live streams' reader, for the REST streaming doors and shutdown. */
    streams,
    /** Stops the idle memory release's timer (shutdown). */
    close: () => memoryRelease.close(),
    /** getAdjacentTransactions as the rows read, for a door that writes its answer from them (the REST door's JSON). */
    loadAdjacentTransactions: <Out>(request: GetAdjacentTransactionsRequest, context: HandlerContext, finish: Finish<LoadedTransactions, Out>) =>
      adjacentTransactions(request, context, finish),
    /** getBlockTransactionsExt as the rows read, for a door that writes its answer from them (the REST door's JSON). */
    loadBlockTransactionsExt: <Out>(request: GetBlockTransactionsExtRequest, context: HandlerContext, finish: Finish<LoadedBlockTransactions, Out>) =>
      blockTransactionsExt(request, context, finish),
    /**
     * getTraces for a door that consumes the page chunk by chunk (the REST door's JSON), into a sink made by
     * `newSink` for each run of the request (a run may be done again, see `admitted`, as long as `answerSent` says
     * no part of the answer has left). A door that sends the answer's head before the page is read calls
     * `run.responseHeaders()` first: it sets the response headers (X-Index-Seqno) on the context as they would be
     * set at the end, which they can be because every statement of the request reads one snapshot (the newest
     * block it holds is the same at the first statement as at the last).
     */
    getTracesInto: <T>(request: GetTracesRequest, context: HandlerContext, newSink: (run: TracesRun) => TraceSink<T>, answerSent?: () => boolean) =>
      admitted<T, T>(
        `getTraces/${request.limit ?? config.defaultLimit}`,
        context,
        tracesWeight(request),
        (bounded, slots) => {
          const run: TracesRun = {
            responseHeaders: async () => exposeIndexSeqno(context.responseHeader, await deps.db.indexSeqno(bounded.signal)),
          };
          return streamTraces(deps, request, bounded, newSink(run), slots);
        },
        undefined,
        answerSent,
      ),
  };
}

/** Runs of one request when its snapshot is lost with its member: the first, and one more on another member. */
const maxRuns = 2;

/** Of a door whose answer leaves only at its end: a request may always run again. */
const nothingSent = () => false;

/** One run of getTracesInto, as its sink's door sees it. */
export interface TracesRun {
  /** Sets the response headers of the answer on the request's context before its end (see getTracesInto). */
  responseHeaders(): Promise<void>;
}

/**
 * Until the door has sent the answer, or the request's deadline passes: then the door stops sending it, so that a
 * client that stops reading holds neither slots nor the answer's memory past its deadline. The deadline is read
 * from the context, not from its signal, which connect aborts once it has serialised the answer.
 */
function untilSent(delivery: AnswerDelivery, context: HandlerContext, fallbackTimeoutMs: number): Promise<void> {
  const leftMs = Math.max(0, context.timeoutMs() ?? fallbackTimeoutMs);
  return new Promise((resolve) => {
    const deadline = setTimeout(() => {
      delivery.abandon();
      resolve();
    }, leftMs);
    const sent = () => {
      clearTimeout(deadline);
      resolve();
    };
    delivery.sent.then(sent, sent);
  });
}

/**
 * The request's context, its signal bounded by the server's own deadline when the client sent none (gRPC and
 * Connect clients may omit it): no request waits for admission, for a connection or for its answer without end,
 * and none starts a statement after that deadline.
 */
function withServerDeadline(context: HandlerContext, timeoutMs: number): { bounded: HandlerContext; done: () => void } {
  if (context.timeoutMs() !== undefined) return { bounded: context, done: () => {} };
  // Followed by a listener rather than joined by AbortSignal.any, whose weak references cost the collector: the
  // call's signal lives no longer than the call, so the listener goes with it.
  const deadline = new AbortController();
  if (context.signal.aborted) deadline.abort(context.signal.reason);
  else context.signal.addEventListener("abort", () => deadline.abort(context.signal.reason), { once: true });
  const ends = Date.now() + timeoutMs;
  const timer = setTimeout(
    () => deadline.abort(new ConnectError(`the request took longer than the server's deadline of ${timeoutMs} ms`, Code.DeadlineExceeded)),
    timeoutMs,
  );
  const bounded: HandlerContext = { ...context, signal: deadline.signal, timeoutMs: () => ends - Date.now() };
  return { bounded, done: () => clearTimeout(timer) };
}

export type TonQueryServiceImpl = ReturnType<typeof createTonQueryService>;

export function connectRoutes(service: TonQueryServiceImpl) {
  return (router: ConnectRouter) => {
    router.service(TonQueryService, service);
  };
}
