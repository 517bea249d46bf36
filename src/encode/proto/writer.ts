import { protoInt64 } from "@bufbuild/protobuf";

/*
 * Protobuf binary written field by field into one reused buffer: the byte writer of src/encode/proto/.
 *
 * Hand-written rather than @bufbuild/protobuf/wire's BinaryWriter, which it resembles (one growing buffer, a
 * length prefix reserved as one byte and widened by moving the payload when it is longer), because it costs less:
 * the same encoder on BinaryWriter took 127-137 CPU µs per trace of the 2M index's hot account where this one took
 * 99-109 (bench/proto-writer.ts, 300 traces of 12.6 kB, the same bytes; 122 with BinaryWriter given this int64
 * path). What differs:
 * - int64: BinaryWriter parses every value through BigInt, and the index's int64 columns are decimal strings, about
 *   twenty per transaction. Here a string of at most 15 digits (below 2^53) is read as a number and written from
 *   it; anything else goes through protoInt64 as BinaryWriter does, so values and errors are the same.
 * - a field is one call, its tag and its value, without a range check of the tag and a capacity check per part.
 * - strings of more than 32 characters (every hash, address and body) go to Buffer#write, without the subarray and
 *   result object TextEncoder#encodeInto takes per string.
 *
 * Values are written as protobuf-es writes them (toBinary): negative int32 as ten bytes, strings as UTF-8 with
 * lone surrogates replaced, int64 as two's complement varints. Unlike toBinary, ints are not range-checked: the
 * values come from the index's int4 columns or are computed (opcodes, tree positions), within range by type.
 */

/** Capacity of a fresh writer's buffer; it doubles as needed and is kept for the next message. */
const initialSize = 64 * 1024;
const twoPow32 = 4294967296;
/** Longest string written a character at a time when it is ASCII; past it, a native write is cheaper. */
const asciiLoopMax = 32;

/** Wire types (WireType of @bufbuild/protobuf/wire, as plain numbers). */
export const varint = 0;
export const bit64 = 1;
export const lengthDelimited = 2;

export class ProtoWriter {
  buf: Buffer;
  pos = 0;
  /** Positions of the length prefixes of the messages being written (see fork). */
  readonly #forks: number[] = [];
  /** The last int64 written through protoInt64, and its halves: a page's shards are one or two values. */
  #slowValue: unknown = undefined;
  #slowLo = 0;
  #slowHi = 0;

  /** `initialBytes`: a writer for a few bytes (a tag) need not take a fresh writer's 64 KB. */
  constructor(initialBytes = initialSize) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  /** Starts over, keeping the buffer. */
  reset(): void {
    this.pos = 0;
    this.#forks.length = 0;
  }

  /** Bytes the buffer holds, written or not. */
  capacity(): number {
    return this.buf.length;
  }

  /** The bytes written since the last reset, in the writer's buffer: valid until it writes again. */
  view(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  /** A copy of the bytes written since the last reset. */
  finish(): Uint8Array {
    const out = new Uint8Array(this.pos);
    out.set(this.buf.subarray(0, this.pos));
    return out;
  }

  ensure(bytes: number): void {
    const required = this.pos + bytes;
    if (required <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < required) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** An unsigned varint of at most 32 bits; room for it must have been ensured. */
  #varint32(value: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (value > 0x7f) {
      buf[pos++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    buf[pos++] = value;
    this.pos = pos;
  }

  /** A 64-bit varint from its two's complement halves (BinaryWriter's writeVarint64); room must have been ensured. */
  #varint64(lo: number, hi: number): void {
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < 28; i += 7) {
      const shift = lo >>> i;
      const more = !(shift >>> 7 === 0 && hi === 0);
      buf[pos++] = (more ? shift | 0x80 : shift) & 0xff;
      if (!more) {
        this.pos = pos;
        return;
      }
    }
    const split = ((lo >>> 28) & 0x0f) | ((hi & 0x07) << 4);
    const moreHi = !(hi >> 3 === 0);
    buf[pos++] = (moreHi ? split | 0x80 : split) & 0xff;
    if (moreHi) {
      for (let i = 3; i < 31; i += 7) {
        const shift = hi >>> i;
        const more = !(shift >>> 7 === 0);
        buf[pos++] = (more ? shift | 0x80 : shift) & 0xff;
        if (!more) {
          this.pos = pos;
          return;
        }
      }
      buf[pos++] = (hi >>> 31) & 0x01;
    }
    this.pos = pos;
  }

  tag(no: number, wire: number): void {
    this.ensure(5);
    this.#varint32(((no << 3) | wire) >>> 0);
  }

  string(no: number, value: string): void {
    const length = value.length;
    // Tag, length prefix, and at most three bytes per UTF-16 unit.
    this.ensure(10 + 3 * length);
    this.#varint32(((no << 3) | lengthDelimited) >>> 0);
    const buf = this.buf;
    const start = this.pos;
    if (length <= asciiLoopMax) {
      let pos = start + 1;
      let i = 0;
      for (; i < length; i++) {
        const code = value.charCodeAt(i);
        if (code > 0x7f) break;
        buf[pos++] = code;
      }
      if (i === length) {
        buf[start] = length;
        this.pos = pos;
        return;
      }
    }
    // The prefix is guessed from the length in characters, and moved should the bytes need a longer one.
    const guess = varintSize(length);
    const written = buf.write(value, start + guess);
    const size = varintSize(written);
    if (size !== guess) buf.copyWithin(start + size, start + guess, start + guess + written);
    this.#varint32(written);
    this.pos += written;
  }

  bool(no: number, value: boolean): void {
    this.ensure(6);
    this.#varint32(no << 3);
    this.buf[this.pos++] = value ? 1 : 0;
  }

  int32(no: number, value: number): void {
    this.ensure(15);
    this.#varint32(no << 3);
    if (value >= 0) this.#varint32(value);
    else this.#varint64(value | 0, -1);
  }

  uint32(no: number, value: number): void {
    this.ensure(10);
    this.#varint32(no << 3);
    this.#varint32(value >>> 0);
  }

  /** An int64 as protobuf-es takes it: a decimal string (the driver's int8 and numeric), a number or a bigint. */
  int64(no: number, value: string | number | bigint): void {
    this.ensure(15);
    this.#varint32(no << 3);
    if (typeof value === "string") {
      const n = smallDecimal(value);
      if (n === n) {
        if (n >= 0 && n < 0x80000000) this.#varint32(n);
        else this.#varint64(n >>> 0, Math.floor(n / twoPow32) | 0);
        return;
      }
    }
    if (value !== this.#slowValue) {
      const { lo, hi } = protoInt64.enc(value);
      this.#slowValue = value;
      this.#slowLo = lo;
      this.#slowHi = hi;
    }
    this.#varint64(this.#slowLo, this.#slowHi);
  }

  double(no: number, value: number): void {
    this.ensure(13);
    this.#varint32((no << 3) | bit64);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** Bytes already encoded as they go after a tag: a length-delimited value with its length (see decoded-content.ts). */
  raw(no: number, wire: number, bytes: Uint8Array): void {
    this.ensure(5 + bytes.length);
    this.#varint32(((no << 3) | wire) >>> 0);
    this.encoded(bytes);
  }

  /** Fields already encoded, tags included (those toBinary wrote for a message's other fields), as they are. */
  encoded(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Starts field `no`, a message (or any length-delimited value) whose length is written by the matching join. */
  fork(no: number): void {
    this.ensure(6);
    this.#varint32(((no << 3) | lengthDelimited) >>> 0);
    this.#forks.push(this.pos);
    // Room for a length under 128, the most common; join moves the payload if it needs more.
    this.pos++;
  }

  /** Starts a length-delimited value without a tag: one that goes after a tag written elsewhere (see raw). */
  forkBare(): void {
    this.ensure(1);
    this.#forks.push(this.pos);
    this.pos++;
  }

  join(): void {
    const start = this.#forks.pop() as number;
    const length = this.pos - start - 1;
    if (length < 0x80) {
      this.buf[start] = length;
      return;
    }
    const size = varintSize(length);
    this.ensure(size - 1);
    this.buf.copyWithin(start + size, start + 1, this.pos);
    this.pos = start;
    this.#varint32(length);
    this.pos += length;
  }
}

function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/**
 * The value of a decimal string of at most 15 digits, optionally negative (exact as a number), else NaN: a value
 * the caller passes on to protoInt64, which reads every form BigInt reads, and rejects the rest, as toBinary does.
 */
function smallDecimal(text: string): number {
  const length = text.length;
  let i = 0;
  let negative = false;
  if (length > 0 && text.charCodeAt(0) === 0x2d) {
    negative = true;
    i = 1;
  }
  if (length === i || length - i > 15) return Number.NaN;
  let n = 0;
  for (; i < length; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return Number.NaN;
    n = n * 10 + digit;
  }
  return negative ? -n : n;
}

/** Past this, a reused writer's buffer is let go after a write rather than kept for the next. */
const keptBufferBytes = 4 * 1024 * 1024;

/**
 * One writer for writes made one after another, each in one go (synchronously), so that they share its buffer: a
 * fresh writer's 64 KB per page, counted as external memory, hastened the collector (see PageBytes).
 */
export class ReusedWriter {
  #writer = new ProtoWriter();

  /** The writer, started over: what it writes stays valid until the next write begins. */
  begin(): ProtoWriter {
    this.#writer.reset();
    return this.#writer;
  }

  /** After a write: a buffer that grew past keptBufferBytes is let go (the writer returned by begin stays valid). */
  end(): void {
    if (this.#writer.capacity() > keptBufferBytes) this.#writer = new ProtoWriter();
  }
}
