import type { IncomingHttpHeaders } from "node:http";
import { xxh3 } from "@node-rs/xxhash";
import fresh from "fresh";
import type { GetTracesRequest } from "../../gen/tonquery/v1/service_pb.ts";
import type { LoadedTrace, TracePageEnd, TraceSink } from "../handlers/traces.ts";
import { parseHash } from "../ton/hash.ts";

// HTTP caching of the REST door's answers: what a shared cache (a CDN, a reverse proxy) or a browser may keep, and
// for how long. A wrong "immutable" serves a stale answer to everyone behind that cache, so an answer is declared
// final only when nothing the indexer or the classifier writes later can change it, and otherwise must be
// revalidated (the ETag then saves the bytes, not the work).

const day = 24 * 60 * 60;

export const cacheControl = {
  /**
   * A page of a v2 block's transactions: ton-index-worker commits a block with its transactions and messages in one
   * database transaction, and a masterchain block is never rolled back, so an existing block's page is final.
   */
  finalBlockPage: `public, max-age=${365 * day}, immutable`,
  /**
   * Complete, classified traces looked up by id or transaction hash: their transactions, tree and actions are final,
   * but the address book and token metadata beside them describe the addresses as they are now (a domain moves, a
   * contract is deployed and its address turns bounceable, a token's name is edited), so a day, not a year.
   */
  finalTraces: `public, max-age=${day}, immutable`,
  /** masterchainInfo: a new masterchain block every few seconds; a second absorbs bursts without lagging behind. */
  latestBlock: "public, max-age=1",
  /** Anything that may still change: a cache may keep it but must ask again each time (If-None-Match → 304). */
  revalidate: "no-cache",
  /** Errors, health, not found: never stored (an error or an absence now says nothing about the next request). */
  never: "no-store",
} as const;

/**
 * The answer's validator: one weak ETag over its JSON, shared by its identity, gzip and br forms. RFC 9110 §8.8.1:
 * a weak validator stands for semantically equivalent representations, which the three codings of one JSON are; a
 * strong one would have to differ per coding (nginx makes its ETags weak when it compresses, Apache suffixes them
 * with -gzip and must strip that again to compare). Nothing here needs a strong validator: there are no range
 * requests, and If-None-Match compares weakly anyway (§13.1.2).
 *
 * The tag is XXH3's 64 bits of the body, from `@node-rs/xxhash` (napi-rs's binding of the reference code), not a
 * cryptographic digest: a validator only has to change when the answer does, for one URL, and nobody gains by
 * forging one (a client that sends a made-up tag only gets the answer or a 304 of its own). 2^-64 is the chance that
 * a changed answer keeps its tag. SHA-1 through node:crypto ran at 2.1 GB/s here, 5 % of the server's CPU on the
 * bench's held 100-trace pages (the masterchain block's, 670 KB, over REST at c=16, perf); XXH3 runs at 24 GB/s,
 * so a held page (REST_HOLD_MAX_BYTES) or a v2 page is hashed in one go, where SHA-1 yielded every megabyte.
 */
export function entityTag(pieces: readonly Buffer[]): string {
  const hash = xxh3.Xxh3.withSeed();
  for (const piece of pieces) hash.update(piece);
  return tagOf(hash.digest());
}

/** The same validator for a small answer in one buffer. */
export function smallEntityTag(body: Buffer): string {
  return tagOf(xxh3.xxh64(body));
}

function tagOf(digest: bigint): string {
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeBigUInt64BE(digest);
  return `W/"${bytes.toString("base64url")}"`;
}

/**
 * Whether the client's If-None-Match names this answer's ETag (or is `*`): then a 304 without a body. Checked with
 * `fresh`, the validator check of Express's `req.fresh`: weak comparison, lists, `*`. Like Express, a request that
 * also sends `Cache-Control: no-cache` (a forced reload) gets the whole answer.
 */
export function notModified(requestHeaders: IncomingHttpHeaders, etag: string): boolean {
  return fresh(requestHeaders, { etag });
}

/**
 * A TraceSink that passes the page through to `inner` and tells, at the end, whether the page is final: looked up by
 * trace_id or tx_hash, every value asked for found on the page, and every trace on it complete (no pending message),
 * loaded in full (not over MAX_TRACE_TRANSACTIONS) and classified (its actions written: `classification_state` ok),
 * with every address's token metadata indexed. Not final, by design:
 * - an account, a block (mc_seqno) or no selector: a page of the newest matches, which new traces push along;
 * - msg_hash: an external message can be accepted again by a contract without replay protection (same hash, a new
 *   trace), and the normalised hash matches every such message;
 * - an empty page, or one missing a value asked for: it may fill as the indexer catches up;
 * - a pending or broken trace, one classified later or not at all, unindexed token metadata.
 */
export class TracePageFinality<T> implements TraceSink<T> {
  readonly #inner: TraceSink<T>;
  readonly #wanted: { kind: "trace" | "transaction"; values: Set<string> } | undefined;
  readonly #found = new Set<string>();
  #traces = 0;
  #final = true;

  constructor(request: GetTracesRequest, inner: TraceSink<T>) {
    this.#inner = inner;
    const traceIds = request.traceId.map(parseHash);
    const txHashes = request.txHash.map(parseHash);
    const byId = request.traceId.length > 0 && request.txHash.length === 0 && request.msgHash.length === 0 && request.account === undefined;
    const byTx = request.txHash.length > 0 && request.traceId.length === 0 && request.msgHash.length === 0 && request.account === undefined;
    const values = byId ? traceIds : byTx ? txHashes : [];
    this.#wanted =
      values.length > 0 && values.every((v) => v !== undefined)
        ? { kind: byId ? "trace" : "transaction", values: new Set(values as string[]) }
        : undefined;
  }

  trace(loaded: LoadedTrace): void | Promise<void> {
    const { row, transactions } = loaded;
    this.#traces++;
    const settled =
      transactions !== undefined && row.state === "complete" && BigInt(row.pending_edges_ || "0") === 0n && row.classification_state === "ok";
    if (!settled) this.#final = false;
    if (this.#wanted?.kind === "trace") this.#found.add(row.trace_id);
    else if (this.#wanted?.kind === "transaction") for (const tx of transactions ?? []) this.#found.add(tx.hash);
    return this.#inner.trace(loaded);
  }

  chunkEnd(): void {
    this.#inner.chunkEnd?.();
  }

  end(end: TracePageEnd): T {
    if (Object.values(end.metadata).some((entry) => !entry.isIndexed)) this.#final = false;
    return this.#inner.end(end);
  }

  /** The page's Cache-Control, once `end` has run. */
  cacheControl(): string {
    const wanted = this.#wanted;
    const final = wanted !== undefined && this.#final && this.#traces > 0 && [...wanted.values].every((v) => this.#found.has(v));
    return final ? cacheControl.finalTraces : cacheControl.revalidate;
  }
}
