import type { Trace } from "../../gen/tonquery/v1/trace_pb.ts";
import type { GetTracesResponse } from "../../gen/tonquery/v1/service_pb.ts";

// Following an account live: the account view takes new traces from one function, and shows each at the top of its
// list as it arrives (a trace it shows already, still pending, is replaced by its newer state).
//
// The typed API has no streaming RPC yet (StreamTraces is being added); when it lands, its client call becomes the
// source here, in main.ts. The page does not poll GetTraces in the meantime: a stream is the right way for a server
// to push, and a poll built into every open tab would be load the streaming RPC exists to avoid.

/** The traces of one answer with the names (address book, token metadata) that describe their addresses. */
export type TracesAnswer = Pick<GetTracesResponse, "traces" | "addressBook" | "metadata">;

/** New traces of `account` as they land, until `signal` aborts. */
export type LiveTraces = (account: string, signal: AbortSignal) => AsyncIterable<TracesAnswer>;

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
