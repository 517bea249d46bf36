import Negotiator from "negotiator";
import type { IncomingHttpHeaders } from "node:http";
import type { Transform } from "node:stream";
import { constants, createBrotliCompress, createGzip } from "node:zlib";

// Compression of the REST door's JSON answers (Connect, gRPC and gRPC-web negotiate their own, in connect-node).
//
// Not a middleware such as Express's `compression`: the server is plain node:http / node:http2 (see
// single-port.ts), and those middlewares work by patching res.write/res.end, which would hide the batched,
// backpressured writes of the door's bodies (body.ts) behind a buffer of their own. Instead body.ts asks
// `chooseCoding` what to send and, for a coded answer, pushes its batches through one of node:zlib's stream
// compressors made here, whose work runs on libuv's thread pool: the event loop only hands buffers over. Accept-Encoding
// is read with `negotiator` (the parser behind Express's `accepts`), which honours q-values, `*` and `identity`.

/** The content codings the REST door can send; `undefined` stands for identity (the JSON as it is). */
export type ContentCoding = "br" | "gzip";

export interface CompressionSettings {
  /** false: every answer goes out uncoded and without Vary (COMPRESSION). */
  enabled: boolean;
  /** Smaller bodies go out uncoded when the client accepts that (COMPRESSION_MIN_BYTES). */
  minBytes: number;
}

/** Answers outside the REST door's handler (none today) are sent uncoded. */
export const noCompression: CompressionSettings = { enabled: false, minBytes: 0 };

/**
 * What we offer, and our order among codings the client weighs equally: brotli first (at the levels below it
 * makes a third fewer bytes than gzip for a little less CPU), then gzip, then the JSON as it is.
 */
const offered = ["br", "gzip", "identity"];

/**
 * The coding of a body of `bytes` bytes for a request with these headers, by RFC 9110 §12.5.3:
 * - no Accept-Encoding, or an empty one: identity (a client that says nothing may not decode anything);
 * - otherwise the acceptable coding with the highest q-value, ties broken in the order of `offered`
 *   (`gzip;q=0.5, identity` gets identity; `*` accepts br and gzip; `q=0` refuses);
 * - a body under `minBytes` goes uncoded unless the client refused identity (`identity;q=0`, `*;q=0`): the
 *   threshold is our preference, a refusal is the client's;
 * - when nothing we offer is acceptable (`identity;q=0` alone, `zstd, *;q=0`), identity all the same rather than a
 *   406: §12.1 lets the server disregard the header, every HTTP client reads an uncoded body, and a 406 would turn
 *   a preference into a failed request (whose own body would be uncoded anyway).
 */
export function chooseCoding(headers: IncomingHttpHeaders, bytes: number, settings: CompressionSettings): ContentCoding | undefined {
  if (!settings.enabled) return undefined;
  const accept = headers["accept-encoding"];
  const negotiator = new Negotiator({ headers: { "accept-encoding": Array.isArray(accept) ? accept.join(", ") : accept } });
  const acceptable = preferredEncodings(negotiator, offered);
  const best = acceptable[0];
  if (best === undefined || best === "identity") return undefined;
  if (bytes < settings.minBytes && acceptable.includes("identity")) return undefined;
  return best as ContentCoding;
}

/** negotiator 1.x takes our preference for ties as a second argument, which its published types (0.6) lack. */
function preferredEncodings(negotiator: Negotiator, available: readonly string[]): string[] {
  const encodings = negotiator.encodings.bind(negotiator) as (available: readonly string[], options: { preferred: readonly string[] }) => string[];
  return encodings(available, { preferred: available });
}

/**
 * Levels for JSON made per request, measured as the server runs them (64 KB batches through the stream compressor,
 * one core of this machine) on the bench index's hot-account page of 100 traces, 2.46 MB; CPU per page, coded size:
 *   gzip 1: 10.5 ms, 16.8%    gzip 4: 14 ms, 15.1%     gzip 6 (zlib's default): 17.5 ms, 14.0%    gzip 9: 22 ms, 13.8%
 *   br 3: 8.5 ms, 10.6%       br 4: 11.5 ms, 10.2%     br 5: 18 ms, 9.4%     br 11 (brotli's default): 2.7 s, 8.5%
 * Both codings get about the same budget, 5 ms per MB, so that what a client asks for costs the same: gzip 4, the
 * first level of its slower, better matcher (9 buys 1% for half again the time); brotli 4, past which a level costs
 * half again for 8% fewer bytes. Brotli's size hint (BROTLI_PARAM_SIZE_HINT) is left out: with it, quality 4 took
 * 16 ms for 4% fewer bytes. The work runs on the thread pool, not the event loop, but the two cores are shared with
 * PostgreSQL.
 */
export const gzipLevel = 4;

/**
 * Brotli at quality 4 (above), in text mode, with a window of 256 KB (lgwin 18) where brotli's default is 4 MB: the
 * window is what the encoder keeps of the text behind it, so with the default each coded answer held 3.2 MB of native
 * memory for as long as it was being sent (1.55 MB at 18; gzip's is 0.6 MB), and the decoder holds as much in every
 * client. Node reports a compressor's memory to V8 as external memory, which starts full collections of its own: on
 * the bench's hot 100-trace page over REST at c=16, alternated, 133 full collections in 20 s against 70 (each at a
 * 35-37 MB heap, where the uncompressed page's come at 44-55 MB), 55.8 against 40.6 ms of server CPU, 21.3 against
 * 26.2 pages per second. The coded page is 11.4% of its JSON instead of 10.8% (the 1000-trace page, 20 MB: 11.2%
 * instead of 10.1%); lgwin 16 cost another 1% of size for no more speed.
 */
export const brotliParams: Readonly<Record<number, number>> = {
  [constants.BROTLI_PARAM_QUALITY]: 4,
  [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
  [constants.BROTLI_PARAM_LGWIN]: 18,
};

/** Output chunks of 64 KB, the size of the bodies' batches (body.ts): fewer, larger writes to the socket. */
const chunkSize = 64 * 1024;

/** A stream compressor for `coding` at the levels above. */
export function createCompressor(coding: ContentCoding): Transform {
  if (coding === "gzip") return createGzip({ level: gzipLevel, chunkSize });
  return createBrotliCompress({ chunkSize, params: brotliParams });
}

/**
 * Makes `compressor` put out everything it has taken so far, so that it can be decoded up to there: gzip's sync
 * flush (a byte-aligned empty block; the window is kept, so later data still refers back to earlier data), brotli's
 * flush of its current metablock. Not zlib's default for gzip, Z_FULL_FLUSH, which also forgets the window. Once per
 * chunk of a streamed page it costs nothing that shows: the bench's hot 1000-trace page (27.9 MB, 11 chunks) came
 * to 4,264,506 bytes of gzip streamed against 4,265,179 held, 2,725,304 of br against 2,724,777.
 */
export function flushCompressor(compressor: Transform, coding: ContentCoding): void {
  (compressor as Transform & { flush(kind: number): void }).flush(coding === "gzip" ? constants.Z_SYNC_FLUSH : constants.BROTLI_OPERATION_FLUSH);
}
