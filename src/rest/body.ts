import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";
import { constants as http2Constants } from "node:http2";
import type { Transform } from "node:stream";
import vary from "vary";
import { log } from "../runtime/log.ts";
import type { PieceSink } from "../encode/v3-json/traces.ts";
import { chooseCoding, type CompressionSettings, type ContentCoding, createCompressor, flushCompressor, noCompression } from "./compression.ts";

// The bytes of the REST door's answers on their way to the client: the one place where the door writes a body.
//
// Most answers are held whole before they are sent (sendBody): their ETag is a hash of the whole JSON and their
// Content-Length its size, both in the headers. A page of traces can be 25 MB of JSON, though, and sixteen of them
// held at once were most of the server's memory; so an answer that is written as it is made (ResponseBody, the traces
// pages) is held only up to REST_HOLD_MAX_BYTES, and past that sent as it comes, at the pace the client reads it.

/**
 * REST_HOLD_MAX_BYTES' default: an answer of up to 1 MiB of JSON is held, sent with its ETag (and 304 on a matching
 * If-None-Match) and the Cache-Control that its finality earns; a larger one is streamed. What the ETag and a final
 * Cache-Control are for is a lookup asked again and again (a trace by id or by transaction hash, typically 5-100 KB,
 * a trace of 400 transactions about 1 MiB), not a page of an account's newest traces, which is never final and
 * which clients page through rather than ask again. Held answers of that size cost at most 16 MiB at concurrency 16,
 * where a held 1000-trace page was 25 MB each.
 */
export const defaultHoldMaxBytes = 1024 * 1024;

/**
 * Writes are joined into batches of about 64 KB, each one write of the connection (see Outflow.writeAll): one socket
 * write per piece (a trace each) cost more than copying them into one buffer, and the compressors put out 64 KB
 * chunks too. A batch is written once the client has taken the one before.
 */
const batchBytes = 64 * 1024;

/**
 * How a door sends bodies: its compression, and REST_HOLD_MAX_BYTES, the most of an answer held before it is
 * streamed, which is also the most of one that may wait unsent in Node's buffers (the response's, its socket's or
 * stream's, a compressor's input) before the writer waits for the client, held or streamed: what one response keeps
 * in the server's memory stays within that either way. Waiting for 'drain' after every batch that filled the
 * socket's 16 KB buffer cost a turn of the event loop and a round trip to the client each 64 KB: the hot 100-trace
 * page (1.6 MB) at concurrency 1 took 35-64 ms with it, 35-38 ms with up to 1 MiB unsent (four alternated pairs;
 * the cold one 44-65 against 45-49 ms).
 */
export interface BodySettings {
  compression: CompressionSettings;
  holdMaxBytes: number;
}

/** A body sent outside any door's settings (a response that did not pass the REST door). */
export const plainBody: BodySettings = { compression: noCompression, holdMaxBytes: defaultHoldMaxBytes };

/** Why a wait for the client failed when the request's signal gives no reason (it always does in the router). */
const connectionClosed = new Error("the client's connection closed");

/** The part of an HTTP/1.1 or HTTP/2 response that writing a JSON body needs. */
export interface ResponseSink {
  /** The request answered: its Accept-Encoding and method choose the body's coding. */
  readonly req: { readonly headers: IncomingHttpHeaders; readonly method?: string | undefined };
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly destroyed: boolean;
  getHeader(name: string): number | string | string[] | undefined;
  setHeader(name: string, value: string): unknown;
  writeHead(status: number, headers: OutgoingHttpHeaders): unknown;
  /** Bytes written and not yet handed to the connection (the response's and its socket's or stream's buffers). */
  readonly writableLength: number;
  write(chunk: Buffer): boolean;
  /** Writes until uncork go out together (HTTP/1.1: one writev of the socket). */
  cork(): void;
  uncork(): void;
  end(chunk: string | Buffer): unknown;
  destroy(): unknown;
  once(event: "drain" | "close" | "finish", listener: () => void): unknown;
  on(event: "drain", listener: () => void): unknown;
  off(event: "drain" | "close" | "finish", listener: () => void): unknown;
  /** HTTP/2: the response's stream, which an answer cut short resets (an HTTP/2 response has no `destroyed`). */
  readonly stream?: { readonly closed: boolean; close(code?: number): void };
}

/** Whether nothing more can be written to the response: its connection (HTTP/1.1) or its stream (HTTP/2) is closed. */
function gone(res: Pick<ResponseSink, "destroyed" | "stream">): boolean {
  return res.destroyed === true || res.stream?.closed === true;
}

/**
 * Sends a held answer: `status`, its headers, then `body` in batches, each after the client has taken the one before
 * (a 25 MB page written at once held the event loop for 15-40 ms copying it into the socket's buffer, and kept a
 * second copy of it there for as long as the client took to read it). Uncoded it has a Content-Length; coded
 * (compression.ts) it goes through the compressor batch by batch, without one: its coded size is known only at its
 * end. HEAD gets the headers GET would, and no body. Never rejects.
 */
export async function sendBody(
  res: ResponseSink,
  status: number,
  body: Buffer | readonly Buffer[],
  headOnly: boolean,
  extraHeaders: Record<string, string>,
  { compression, holdMaxBytes }: BodySettings,
): Promise<void> {
  if (res.headersSent || res.writableEnded) return;
  const pieces = Buffer.isBuffer(body) ? [body] : body;
  const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
  const coding = chooseCoding(res.req.headers, length, compression);
  if (compression.enabled) varyOnAcceptEncoding(res);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    ...(coding === undefined ? { "content-length": length } : { "content-encoding": coding }),
    ...extraHeaders,
  });
  if (headOnly || res.req.method === "HEAD") {
    res.end("");
    return;
  }
  // A small uncoded answer (masterchainInfo, an error) goes out with its head in one write, and nothing waits for its
  // end: no outflow, batches, nor listeners for 'finish' and 'close', on the cheapest and most frequent requests.
  if (coding === undefined && length <= batchBytes) {
    // Copied into one buffer: for a few small pieces, that costs less than a write of each (alternated, traces by
    // tx_hash at c=16: 1.15 against 1.18 ms of server CPU per request).
    res.end(pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces, length));
    return;
  }
  const out = new Outflow(res, coding);
  for (const batch of writeBatches(pieces)) {
    if (gone(res)) return;
    if (!out.write(batch) && out.unsent > holdMaxBytes) await drained(out.head, res);
  }
  await out.end();
}

/** 304: the validator and caching headers a 200 would carry (RFC 9110 §15.4.5), no body. */
export function sendNotModified(res: ResponseSink, headers: Record<string, string>, compression: CompressionSettings): void {
  if (compression.enabled) varyOnAcceptEncoding(res);
  res.writeHead(304, headers);
  res.end("");
}

/** Adds Accept-Encoding to whatever Vary the response has already (CORS adds Origin). */
function varyOnAcceptEncoding(res: ResponseSink): void {
  const current = res.getHeader("vary");
  res.setHeader("vary", vary.append(Array.isArray(current) ? current.join(", ") : String(current ?? ""), "Accept-Encoding"));
}

/**
 * Small pieces (a trace each) joined into writes of about 64 KB. Copied, unlike a streamed answer's batches (see
 * Outflow.writeAll): alternated, the hot account's 10-trace page (160 KB, held) cost 2.67-2.76 ms of server CPU per
 * page copied and 2.81-2.84 written piece by piece.
 */
function* writeBatches(pieces: readonly Buffer[]): Generator<Buffer> {
  let run: Buffer[] = [];
  let size = 0;
  for (const piece of pieces) {
    run.push(piece);
    size += piece.length;
    if (size >= batchBytes) {
      yield run.length === 1 ? piece : Buffer.concat(run, size);
      run = [];
      size = 0;
    }
  }
  if (run.length > 0) yield run.length === 1 ? (run[0] as Buffer) : Buffer.concat(run, size);
}

type Listenable = Pick<ResponseSink, "once" | "off">;

/** Resolves at the first of these events, and stops listening to the others. */
function firstEvent(...events: readonly [Listenable, "drain" | "close" | "finish"][]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      for (const [emitter, name] of events) emitter.off(name, done);
      resolve();
    };
    for (const [emitter, name] of events) emitter.once(name, done);
  });
}

/** Resolves when `head` has taken what was written, or the response is over (the client has gone). */
export function drained(head: Listenable, res: Listenable = head): Promise<void> {
  return firstEvent([head, "drain"], [res, "close"]);
}

/**
 * Ends a response whose headers are out without passing it off as complete: HTTP/1.1 loses its connection before the
 * chunked body's terminating chunk, HTTP/2 resets the stream with INTERNAL_ERROR. Either way the client sees an
 * error, not an answer that merely ends early (a JSON cut anywhere before its last byte does not parse, and a coded
 * one does not decode, but a client that read it as it came must be told too).
 */
export function abortResponse(res: Pick<ResponseSink, "stream" | "destroy" | "destroyed">): void {
  if (gone(res)) return;
  if (res.stream !== undefined) res.stream.close(http2Constants.NGHTTP2_INTERNAL_ERROR);
  else res.destroy();
}

/**
 * A response body on its way out: into the response as it is, or through a stream compressor whose chunks are
 * written to the response as the client takes them (the compressor pauses while the response is full, and its input
 * then fills: backpressure reaches whoever writes into it). A client that goes away destroys the compressor (its
 * zlib handle is freed once the thread pool is done with it).
 */
class Outflow {
  readonly #res: ResponseSink;
  readonly #coding: ContentCoding | undefined;
  readonly #compressor: Transform | undefined;

  constructor(res: ResponseSink, coding: ContentCoding | undefined) {
    this.#res = res;
    this.#coding = coding;
    if (coding === undefined) return;
    const compressor = createCompressor(coding);
    this.#compressor = compressor;
    const resume = () => compressor.resume();
    compressor.on("data", (chunk: Buffer) => {
      if (!gone(res) && !res.write(chunk)) compressor.pause();
    });
    res.on("drain", resume);
    compressor.once("end", () => {
      res.off("drain", resume);
      if (!gone(res)) res.end("");
    });
    compressor.once("error", (err) => {
      // Headers are out: ending the response normally would pass a truncated answer off as complete.
      log.error("compressing a response failed", { coding, error: err });
      abortResponse(res);
    });
    res.once("close", () => {
      res.off("drain", resume);
      compressor.destroy();
    });
  }

  /** What the body is written into: full when `write` has said false, until its 'drain'. */
  get head(): Pick<ResponseSink, "once" | "off"> {
    return (this.#compressor as Pick<ResponseSink, "once" | "off"> | undefined) ?? this.#res;
  }

  /** What has been written into `head` and has not left it yet. */
  get unsent(): number {
    return (this.#compressor ?? this.#res).writableLength;
  }

  /** Writes a batch; false: `head` is past its own mark, and will say 'drain' once it has emptied. */
  write(batch: Buffer): boolean {
    if (gone(this.#res)) return true;
    if (this.#compressor === undefined) return this.#res.write(batch);
    if (this.#compressor.destroyed) return true;
    return this.#compressor.write(batch);
  }

  /**
   * Writes a batch of `bytes` made of `pieces`. Uncompressed, the pieces go out together as they are, in one write
   * of the connection, rather than copied into one buffer first (a streamed page's every byte once more, 64 KB at a
   * time, as external memory that hastens the collector): alternated at c=16, the hot account's 100-trace page over
   * REST (1.6 MB, streamed) 17.6 -> 15.6 and 17.6 -> 17.1 ms of server CPU per page. A compressor takes one buffer.
   */
  writeAll(pieces: readonly Buffer[], bytes: number): boolean {
    if (pieces.length === 1 || this.#compressor !== undefined || gone(this.#res)) return this.write(pieces.length === 1 ? (pieces[0] as Buffer) : Buffer.concat(pieces, bytes));
    const res = this.#res;
    res.cork();
    let room = true;
    for (const piece of pieces) room = res.write(piece);
    res.uncork();
    return room;
  }

  /** What the compressor holds goes out now (see flushCompressor). */
  flush(): void {
    if (this.#compressor !== undefined && !this.#compressor.destroyed) flushCompressor(this.#compressor, this.#coding as ContentCoding);
  }

  /** Ends the body; resolves once the response is finished or closed. */
  end(): Promise<void> {
    const res = this.#res;
    const over = gone(res) ? Promise.resolve() : firstEvent([res, "finish"], [res, "close"]);
    if (this.#compressor === undefined) {
      if (!gone(res)) res.end("");
    } else if (!this.#compressor.destroyed) this.#compressor.end();
    return over;
  }
}

export interface ResponseBodyOptions extends BodySettings {
  /** The request's signal: a wait for the client ends with it (deadline, shutdown, the client gone). */
  signal: AbortSignal;
  /** Response headers set while the answer is made (X-Index-Seqno), sent in a streamed answer's head. */
  responseHeader: Headers;
  /** Cache-Control of a streamed answer: its finality is not known when its head goes out. */
  cacheControl: string;
}

/**
 * The body of a REST answer that is written as it is made (a page of traces, see TracesJsonEncoder), as a PieceSink.
 *
 * Its pieces are held while they add up to at most `holdMaxBytes`: an answer that ends there is sent as a held one
 * (the router hashes `held()` for its ETag and sends it with sendBody). The piece that takes it past the bound
 * sends the head at once (200, no ETag, no Content-Length, the Cache-Control given, chunked transfer over HTTP/1.1,
 * DATA frames over HTTP/2, coded as Accept-Encoding asks) and the body from then on goes out in batches as it
 * comes: `write` answers with a promise whenever more than `holdMaxBytes` of it waits unsent (see BodySettings),
 * which the writer awaits before it writes more (and the page's reading waits with it, see streamTraces). A HEAD
 * gets the head alone.
 *
 * Once the head is out (`sent`), nothing can be taken back: the request cannot run again from the start (see
 * `admitted` in service.ts), and a failure can only end the response abnormally (`abort`).
 */
export class ResponseBody implements PieceSink {
  readonly #res: ResponseSink;
  readonly #options: ResponseBodyOptions;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #state: "holding" | "starting" | "streaming" | "ended" = "holding";
  /** Bumped by `begin`: a head being prepared for an earlier run is not sent. */
  #run = 0;
  #prepare: (() => Promise<void>) | undefined;
  #out: Outflow | undefined;
  #batch: Buffer[] = [];
  #batchBytes = 0;
  /** While the client is behind (or the head is being prepared): what the writer awaits. */
  #ready: Promise<void> | undefined;

  constructor(res: ResponseSink, options: ResponseBodyOptions) {
    this.#res = res;
    this.#options = options;
  }

  /** Whether the head has gone out: the answer is streamed, and what was sent cannot be taken back. */
  get sent(): boolean {
    return this.#state === "streaming" || this.#state === "ended";
  }

  /**
   * A run of the answer begins: pieces held from an earlier run (its request is run again from the start) are
   * dropped. `prepare` runs before a streamed answer's head goes out, to set the response headers known by then.
   */
  begin(prepare?: () => Promise<void>): void {
    if (this.sent) throw new Error("a streamed answer cannot be begun again");
    this.#run++;
    this.#held = [];
    this.#heldBytes = 0;
    this.#state = "holding";
    this.#ready = undefined;
    this.#prepare = prepare;
  }

  write(piece: Buffer): void | Promise<void> {
    switch (this.#state) {
      case "holding":
        this.#held.push(piece);
        this.#heldBytes += piece.length;
        return this.#heldBytes > this.#options.holdMaxBytes ? this.#start() : undefined;
      case "starting":
        this.#held.push(piece);
        return this.#ready;
      case "streaming":
        if (this.#out === undefined) return undefined;
        // A piece of a batch's size or more goes out as it is, not copied into one.
        if (piece.length >= batchBytes && this.#batchBytes > 0) this.#writeBatch();
        this.#batch.push(piece);
        this.#batchBytes += piece.length;
        if (this.#batchBytes >= batchBytes) this.#writeBatch();
        return this.#ready;
      case "ended":
        return undefined;
    }
  }

  /** What has been written goes out now, partial batch and what the compressor holds included. */
  flush(): void {
    if (this.#state !== "streaming" || this.#out === undefined) return;
    if (this.#batchBytes > 0) this.#writeBatch();
    this.#out.flush();
  }

  /**
   * The answer's last piece. An answer still held stays held whatever its size: it is complete, and goes out whole
   * (so its head, sent after its end, can carry its ETag and finality after all).
   */
  end(piece: Buffer): void {
    if (this.#state === "holding" || this.#state === "starting") {
      this.#held.push(piece);
      this.#heldBytes += piece.length;
    } else void this.write(piece);
  }

  /** The answer's pieces while it is held (not `sent`). */
  held(): Buffer[] {
    return this.#held;
  }

  /**
   * The answer is complete. Streamed: the last batch goes out and the response ends, and this resolves true once it
   * has; held: nothing is done, false (the router sends `held()`).
   */
  async finish(): Promise<boolean> {
    if (this.#state === "starting") await this.#ready;
    if (this.#state !== "streaming") return this.#state === "ended";
    this.#state = "ended";
    const out = this.#out;
    if (out === undefined) return true;
    if (this.#batchBytes > 0) this.#writeBatch();
    await out.end();
    return true;
  }

  /** A streamed answer failed: the response ends abnormally (see abortResponse). */
  abort(): void {
    this.#state = "ended";
    this.#batch = [];
    abortResponse(this.#res);
  }

  #start(): Promise<void> {
    this.#state = "starting";
    const run = this.#run;
    const started = (async () => {
      await this.#prepare?.();
      if (run !== this.#run) return;
      this.#options.signal.throwIfAborted();
      const res = this.#res;
      if (res.headersSent || gone(res)) throw new Error("the response is no longer open");
      const { compression } = this.#options;
      const coding = chooseCoding(res.req.headers, this.#heldBytes, compression);
      if (compression.enabled) varyOnAcceptEncoding(res);
      this.#options.responseHeader.forEach((value, name) => res.setHeader(name, value));
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        ...(coding !== undefined && { "content-encoding": coding }),
        "cache-control": this.#options.cacheControl,
      });
      this.#state = "streaming";
      const held = this.#held;
      this.#held = [];
      this.#heldBytes = 0;
      this.#ready = undefined;
      if (res.req.method === "HEAD") {
        res.end("");
        return;
      }
      this.#out = new Outflow(res, coding);
      for (const piece of held) this.write(piece);
      await this.#ready;
    })();
    // Awaited by the writer; a writer that ignores it (a piece written after another) must not leave it unhandled.
    started.catch(() => {});
    this.#ready = started;
    return started;
  }

  #writeBatch(): void {
    const batch = this.#batch;
    const bytes = this.#batchBytes;
    this.#batch = [];
    this.#batchBytes = 0;
    const out = this.#out as Outflow;
    if (!out.writeAll(batch, bytes) && out.unsent > this.#options.holdMaxBytes && this.#ready === undefined) this.#ready = this.#drained(out);
  }

  /** Resolves when the client has taken what was written; rejects when the request's signal fires first. */
  #drained(out: Outflow): Promise<void> {
    const { signal } = this.#options;
    const res = this.#res;
    const waiting = new Promise<void>((resolve, reject) => {
      // A failed wait stays the body's `#ready`: whatever is written after it fails too.
      const settle = (fail: boolean) => {
        out.head.off("drain", onDrain);
        res.off("close", onClose);
        signal.removeEventListener("abort", onClose);
        if (fail) reject(signal.reason ?? connectionClosed);
        else {
          this.#ready = undefined;
          resolve();
        }
      };
      const onDrain = () => settle(false);
      const onClose = () => settle(true);
      if (signal.aborted || gone(res)) {
        reject(signal.reason ?? connectionClosed);
        return;
      }
      out.head.once("drain", onDrain);
      res.once("close", onClose);
      signal.addEventListener("abort", onClose, { once: true });
    });
    waiting.catch(() => {});
    return waiting;
  }
}
