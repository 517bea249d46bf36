import http from "node:http";
import http2 from "node:http2";

/** Where a response adds the body bytes written to it (the request's RequestRecord). */
export interface BodyByteCount {
  bytes: number;
}

/**
 * The response classes the port's servers make (see single-port.ts), which count the body bytes written to them
 * by whoever writes them (connect's adapter, the REST door, a compressing writer): Node keeps no such count per
 * response (HTTP/2 streams share their session's socket), and a Content-Length is absent from gRPC and streamed
 * answers.
 *
 * Counting methods on the class rather than wrappers stored on each response as its own `write` and `end` (as
 * before): Node's HTTP/2 response ends by writing its last chunk through `this.write`, which the wrappers counted
 * twice; and the wrappers, a new pair of closures per response, were among the objects whose death at a full
 * collection deoptimised the code that had met them (V8's --trace-deopt: "embedded weak objects cleared"): 150-200
 * recompilations per 8 s of traces by hash over REST at c=16 on the bench index, fewer without them (see README,
 * "Twenty-first stop").
 */
export class CountedHttp1Response extends http.ServerResponse {
  bodyCount: BodyByteCount | undefined = undefined;

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    if (this.bodyCount !== undefined) this.bodyCount.bytes += byteLength(chunk, rest[0]);
    return (super.write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  }

  override end(chunk?: unknown, ...rest: unknown[]): this {
    if (this.bodyCount !== undefined) this.bodyCount.bytes += byteLength(chunk, rest[0]);
    return (super.end as (...args: unknown[]) => this).call(this, chunk, ...rest);
  }
}

/** HTTP/2's response, counted as CountedHttp1Response is; its end writes a last chunk through write, counted once. */
export class CountedHttp2Response extends http2.Http2ServerResponse {
  bodyCount: BodyByteCount | undefined = undefined;
  #ending = false;

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    if (this.bodyCount !== undefined && !this.#ending) this.bodyCount.bytes += byteLength(chunk, rest[0]);
    return (super.write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  }

  override end(chunk?: unknown, ...rest: unknown[]): this {
    if (this.bodyCount !== undefined) this.bodyCount.bytes += byteLength(chunk, rest[0]);
    this.#ending = true;
    try {
      return (super.end as (...args: unknown[]) => this).call(this, chunk, ...rest);
    } finally {
      this.#ending = false;
    }
  }
}

/** Has `res`'s body bytes added to `count` from now on, if it is one of the counted responses. */
export function countBodyBytes(res: object, count: BodyByteCount): void {
  if (res instanceof CountedHttp1Response || res instanceof CountedHttp2Response) res.bodyCount = count;
}

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === "string") return Buffer.byteLength(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return 0;
}
