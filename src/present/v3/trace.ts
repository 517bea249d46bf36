import type { GetTracesRequest, GetTracesResponse } from "../../../gen/tonquery/v1/service_pb.ts";
import type { AddressMetadata, Trace, TraceNode } from "../../../gen/tonquery/v1/trace_pb.ts";
import type { Transaction } from "../../../gen/tonquery/v1/transaction_pb.ts";
import { presentAction } from "../../actions/present.ts";
import { jsonBytes } from "../json-text.ts";
import { presentAddressBook, presentTransaction } from "./transaction.ts";

type Json = Record<string, unknown>;

/** Nests the flat node list: children in trace order; [] for a leaf without outbound messages, null for one with. */
function presentTree(nodes: readonly TraceNode[], transactions: ReadonlyMap<string, Transaction>): Json | undefined {
  const childIndexes = nodes.map((): number[] => []);
  nodes.forEach((node, index) => {
    if (node.parent !== undefined) childIndexes[node.parent]?.push(index);
  });
  // Parents precede their children, so building from the end finds every child already built.
  const built: Json[] = [];
  for (let index = nodes.length - 1; index >= 0; index--) {
    const node = nodes[index] as TraceNode;
    const children = (childIndexes[index] ?? []).map((child) => built[child] as Json);
    const hasOutMsgs = (transactions.get(node.transactionHash)?.outMsgs.length ?? 0) > 0;
    built[index] = {
      tx_hash: node.transactionHash,
      ...(node.inMsgHash === undefined ? {} : { in_msg_hash: node.inMsgHash }),
      children: children.length === 0 && hasOutMsgs ? null : children,
    };
  }
  return built[0];
}

export function presentTrace(trace: Trace, includeActions: boolean): Json {
  const info = trace.traceInfo;
  const out: Json = {
    trace_id: trace.traceId,
    external_hash: trace.externalHash ?? null,
    mc_seqno_start: trace.mcSeqnoStart === undefined ? null : String(trace.mcSeqnoStart),
    mc_seqno_end: trace.mcSeqnoEnd === undefined ? null : String(trace.mcSeqnoEnd),
    start_lt: trace.startLt ?? null,
    start_utime: trace.startUtime ?? null,
    end_lt: trace.endLt ?? null,
    end_utime: trace.endUtime ?? null,
    trace_info: {
      trace_state: info?.traceState ?? null,
      messages: Number(info?.messages ?? 0),
      transactions: Number(info?.transactions ?? 0),
      pending_messages: Number(info?.pendingMessages ?? 0),
      classification_state: info?.classificationState ?? null,
    },
    is_incomplete: trace.isIncomplete,
  };
  if (trace.warning !== undefined) out.warning = trace.warning;
  if (includeActions) out.actions = trace.actions.map(presentAction);
  if (trace.isIncomplete) return out;
  const byHash = new Map(trace.transactions.map((tx) => [tx.hash, tx]));
  const tree = presentTree(trace.nodes, byHash);
  if (tree !== undefined) out.trace = tree;
  out.transactions_order = trace.transactions.map((tx) => tx.hash);
  out.transactions = Object.fromEntries(trace.transactions.map((tx) => [tx.hash, presentTransaction(tx)]));
  return out;
}

export function presentMetadata(metadata: Record<string, AddressMetadata>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [address, entry] of Object.entries(metadata)) {
    out[address] = {
      is_indexed: entry.isIndexed,
      token_info: entry.tokenInfo.map((info) => {
        const json: Json = {};
        if (info.valid !== undefined) json.valid = info.valid;
        json.type = info.type;
        const optionalFields: [string, unknown][] = [
          ["name", info.name],
          ["symbol", info.symbol],
          ["description", info.description],
          ["image", info.image],
          ["nft_index", info.nftIndex],
          ["is_nsfw", info.isNsfw],
          ["is_scam", info.isScam],
          ["extra", info.extra],
        ];
        for (const [key, value] of optionalFields) if (value !== undefined) json[key] = value;
        return json;
      }),
    };
  }
  return out;
}

/**
 * The reference of REST's traces JSON since the service writes it from rows (src/encode/v3-json/traces.ts, held
 * equal to this by test/v3-json-encoder.test.ts), as the live streams' events are (test/stream-events.test.ts).
 *
 * The JSON of presentTracesResponse, serialised a chunk of traces at a time as UTF-8 pieces: a page of 1000
 * traces never exists as one object tree or one string (which V8 keeps as two bytes per character as soon as one
 * comment is not ASCII). The pieces concatenated are byte for byte JSON.stringify(presentTracesResponse(...)).
 */
const comma = Buffer.from(",");

export class TracesJsonWriter {
  readonly #pieces: Buffer[] = [Buffer.from('{"traces":[')];
  readonly #includeActions: boolean;
  #first = true;

  constructor(request: GetTracesRequest) {
    this.#includeActions = request.includeActions;
  }

  trace(trace: Trace): void {
    // One piece per trace: a joined string would turn two-byte for the whole chunk as soon as one trace holds a
    // non-ASCII comment, and encoding that to UTF-8 took three times as long.
    if (!this.#first) this.#pieces.push(comma);
    this.#pieces.push(jsonBytes(presentTrace(trace, this.#includeActions)));
    this.#first = false;
  }

  end(end: Pick<GetTracesResponse, "addressBook" | "metadata" | "nextPageToken">): Buffer[] {
    this.#pieces.push(tracesPageTail(end));
    return this.#pieces;
  }
}

/** What closes a page's JSON after its last trace: the list, then the address book, the metadata and the cursor. */
export function tracesPageTail({ addressBook, metadata, nextPageToken }: Pick<GetTracesResponse, "addressBook" | "metadata" | "nextPageToken">): Buffer {
  const book = JSON.stringify(presentAddressBook(addressBook));
  const cursor = JSON.stringify(presentNextCursor(nextPageToken));
  return Buffer.from(`],"address_book":${book},"metadata":${JSON.stringify(presentMetadata(metadata))},"next_cursor":${cursor}}`);
}

export function presentTracesResponse(response: GetTracesResponse, request: GetTracesRequest): Json {
  return {
    traces: response.traces.map((trace) => presentTrace(trace, request.includeActions)),
    address_book: presentAddressBook(response.addressBook),
    metadata: presentMetadata(response.metadata),
    next_cursor: presentNextCursor(response.nextPageToken),
  };
}

/** tonquery's own field (toncenter clients ignore it): the `cursor` of the next page, null after the last one. */
function presentNextCursor(token: string): string | null {
  return token === "" ? null : token;
}
