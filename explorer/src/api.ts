import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import type { Trace } from "../../gen/tonquery/v1/trace_pb.ts";
import { streamedTraces, type LiveTraces, type TracesAnswer } from "./live.ts";
import { standardHash, type Selection } from "./route.ts";

// The page's only way to the service: the typed API's generated client over gRPC-web (binary protobuf in fetch()).
// The API lives beside the page: the folder of the page's URL, so a proxy that serves the service under a path
// prefix serves both.

const baseUrl = new URL(".", document.baseURI).href.replace(/\/$/, "");
const tonquery = createClient(TonQueryService, createGrpcWebTransport({ baseUrl }));

export interface FoundTrace {
  answer: TracesAnswer;
  trace: Trace;
  /** What the hash named: a transaction or a message of the trace (selected when it opens), or the trace itself. */
  matched: Selection | undefined;
}

/** How many traces one page of an account's list holds. */
const pageSize = 20;

function first(answer: TracesAnswer): Trace | undefined {
  return answer.traces[0];
}

/**
 * The trace a hash names: tried as a transaction hash, then a message hash, then a trace id, and the first that
 * finds one wins (a trace id is its root transaction's hash, so most ids are found as a transaction already).
 * Undefined when none does.
 */
export async function findTrace(hash: string, signal: AbortSignal): Promise<FoundTrace | undefined> {
  const standard = standardHash(hash) ?? hash;
  const byTransaction = await tonquery.getTraces({ txHash: [hash], includeActions: true, limit: 1 }, { signal });
  const txTrace = first(byTransaction);
  if (txTrace) return { answer: byTransaction, trace: txTrace, matched: { kind: "tx", hash: standard } };
  const byMessage = await tonquery.getTraces({ msgHash: [hash], includeActions: true, limit: 1 }, { signal });
  const msgTrace = first(byMessage);
  if (msgTrace) {
    // The hash may be an external message's normalised hash: select the message the trace holds under it.
    const message = msgTrace.transactions.flatMap((tx) => [tx.inMsg, ...tx.outMsgs]).find((m) => m !== undefined && (m.hash === standard || m.hashNorm === standard));
    return { answer: byMessage, trace: msgTrace, matched: { kind: "msg", hash: message?.hash ?? standard } };
  }
  const byId = await traceById(hash, signal);
  return byId === undefined ? undefined : { ...byId, matched: undefined };
}

export async function traceById(traceId: string, signal: AbortSignal): Promise<{ answer: TracesAnswer; trace: Trace } | undefined> {
  const answer = await tonquery.getTraces({ traceId: [traceId], includeActions: true, limit: 1 }, { signal });
  const trace = first(answer);
  return trace === undefined ? undefined : { answer, trace };
}

/** A page of traces, newest first: an account's, or with no account the whole index's. */
export async function tracesPage(account: string | undefined, pageToken: string | undefined, signal: AbortSignal) {
  return tonquery.getTraces({ account, pageToken, includeActions: true, limit: pageSize }, { signal });
}

/** New traces of an account as they land: the StreamTraces RPC, one stream per open account view (see live.ts). */
export const liveAccountTraces: LiveTraces = streamedTraces((request, signal) => tonquery.streamTraces(request, { signal }));

/** What went wrong, for a person: the service's own message for a refused request, else what failed. */
export function describeError(err: unknown): string {
  const error = ConnectError.from(err);
  switch (error.code) {
    case Code.InvalidArgument:
      return `The service refused the request: ${error.rawMessage}`;
    case Code.Unavailable:
      return `The service is unavailable (${error.rawMessage}). Try again in a moment.`;
    case Code.DeadlineExceeded:
      return `The service took too long to answer (${error.rawMessage}).`;
    default:
      return `The request failed: ${error.rawMessage} (${Code[error.code]})`;
  }
}
