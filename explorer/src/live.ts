import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Trace } from "../../gen/tonquery/v1/trace_pb.ts";
import type { GetTracesResponse } from "../../gen/tonquery/v1/service_pb.ts";
import type { StreamTracesRequestSchema, StreamTracesResponse } from "../../gen/tonquery/v1/stream_pb.ts";

// Following an account live: the account view takes new traces from one function, and shows each at the top of its
// list as it arrives (a trace it shows already, still pending, is replaced by its newer state).
//
// The function is the typed API's StreamTraces call (api.ts gives it the generated client): one server-streaming
// request per open account view, a message per masterchain block that completed traces of the account. The page never
// polls GetTraces: the server pushes, and one stream costs it far less than a poll from every open tab would.
// Heartbeats carry no traces; they only move the stream's position forward. A stream that breaks (a deploy, a
// proxy's timeout, a slow tab whose buffer filled) is opened again after its last position, so the list misses no
// block and repeats none; a few failures in a row with no message between them end following, and the view says so.

/** The traces of one answer with the names (address book, token metadata) that describe their addresses. */
export type TracesAnswer = Pick<GetTracesResponse, "traces" | "addressBook" | "metadata">;

/** Where following stands, for the view's indicator: `position` is the last masterchain block the stream covered. */
export type LiveState = { kind: "following"; position: number | undefined } | { kind: "reconnecting"; position: number | undefined; attempt: number };

/** New traces of `account` as they land, until `signal` aborts; `onState` hears of connects, heartbeats and retries. */
export type LiveTraces = (account: string, signal: AbortSignal, onState?: (state: LiveState) => void) => AsyncIterable<TracesAnswer>;

type StreamTracesRequestInit = MessageInitShape<typeof StreamTracesRequestSchema>;

/** One StreamTraces call: the generated client's `streamTraces`, or a stand-in in tests. */
export type OpenStream = (request: StreamTracesRequestInit, signal: AbortSignal) => AsyncIterable<StreamTracesResponse>;

/**
 * Waits before each reconnection after failures in a row: the n-th retry waits the n-th delay (a little jittered so
 * that tabs a restart cut off do not all come back in the same instant); one retry past the list, following stops.
 * A message received resets the count: only failures with nothing between them use it up.
 */
export const reconnectDelaysMs: readonly number[] = [500, 1000, 2000, 4000, 8000, 15000];

/** Codes after which the same request would only fail again: the account does not parse, resume is out of range. */
const finalCodes = new Set([Code.InvalidArgument, Code.OutOfRange, Code.Unimplemented, Code.PermissionDenied, Code.Unauthenticated, Code.FailedPrecondition]);

/** The live source for the account view over `open`: traces with transactions and actions, names included. */
export function streamedTraces(open: OpenStream, delaysMs: readonly number[] = reconnectDelaysMs): LiveTraces {
  return (account, signal, onState) => followAccount(open, account, signal, delaysMs, onState);
}

async function* followAccount(open: OpenStream, account: string, signal: AbortSignal, delaysMs: readonly number[], onState?: (state: LiveState) => void): AsyncGenerator<TracesAnswer> {
  let position: number | undefined;
  let failures = 0;
  while (!signal.aborted) {
    onState?.(failures === 0 ? { kind: "following", position } : { kind: "reconnecting", position, attempt: failures });
    try {
      // No resume_after on the first call: the list was just read, so the stream starts with the next block. GetTraces
      // names no position, so a block committed between that read and the stream's start shows only on a reload.
      const request: StreamTracesRequestInit = { accounts: [account], includeTransactions: true, includeActions: true, includeAddressBook: true, includeMetadata: true, resumeAfter: position };
      for await (const message of open(request, signal)) {
        position = message.position;
        failures = 0;
        if (!message.heartbeat && message.traces.length > 0) yield { traces: message.traces, addressBook: message.addressBook, metadata: message.metadata };
        onState?.({ kind: "following", position });
      }
      // The server ended the stream without an error (it should not while the index goes on): open it again.
      if (signal.aborted) return;
      throw new ConnectError("the stream ended", Code.Unavailable);
    } catch (err) {
      if (signal.aborted) return;
      const error = ConnectError.from(err);
      if (finalCodes.has(error.code)) throw error;
      const delay = delaysMs[failures];
      if (delay === undefined) throw error;
      failures++;
      onState?.({ kind: "reconnecting", position, attempt: failures });
      await sleep(delay * (0.75 + Math.random() * 0.5), signal);
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (the caller then sees it aborted and stops). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // An abort event fires once: a signal aborted already would never wake the timer's listener.
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** `shown` (newest first) with `arrived` at its top; a trace already shown moves up with its newer state. */
export function withArrivals(shown: readonly Trace[], arrived: readonly Trace[]): Trace[] {
  const arrivedIds = new Set(arrived.map((trace) => trace.traceId));
  const newestFirst = [...arrived].sort((a, b) => compareEndLt(b, a));
  return [...newestFirst, ...shown.filter((trace) => !arrivedIds.has(trace.traceId))];
}

function compareEndLt(a: Trace, b: Trace): number {
  const left = BigInt(a.endLt ?? "0");
  const right = BigInt(b.endLt ?? "0");
  return left < right ? -1 : left > right ? 1 : 0;
}
