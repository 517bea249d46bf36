import type { JsonText } from "../present/json-text.ts";

/**
 * A string without a character JSON.stringify escapes (surrogates: the lone ones; any sends the string to it).
 * Anchored and negated, so V8 runs one tight loop over the string: half the time of searching for such a character
 * from every position on the 44-1500-character values here (hashes, addresses, bodies' BOCs), level on short ones.
 */
const needsNoEscaping = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * A string as JSON.stringify prints it, for JSON built as a string (the live streams' events, v2's addresses printed
 * once per page); JsonPieces.string writes one as bytes.
 */
export function quote(text: string): string {
  return needsNoEscaping.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** Longer text is copied by Buffer's writer (a native call) rather than character by character. */
const longText = 64;

/**
 * The encoders' keys (`,"name":`, literals of theirs: a fixed set) as UTF-8, made once. Copying a key's bytes costs a
 * fifth of reading its characters (charCodeAt is a few nanoseconds a character); keys were a quarter of what the v3
 * encoder spent on a page of traces.
 */
const keyBytes = new Map<string, Uint8Array>();
const maxKeys = 1024;

/**
 * JSON written as UTF-8 bytes straight into buffers of `chunkSize`, piece by piece: what `take` returns is a view of
 * the bytes written since the last take, with no string built for it.
 *
 * Why bytes and not strings: building a transaction's JSON as strings (a template per object, a string per member,
 * then Buffer.from of the joined text) allocated four times the bytes it printed: on the bench's hot 100-trace page
 * the REST encoder made 45 % of everything the process allocated (a sampling allocation profile), which the
 * collector then had to clear (now 57 % less is allocated per page). Here a short value's characters are copied into
 * the chunk as they are checked for JSON escaping, in one pass, a long one's by Buffer's writer (see #longString);
 * only a string that needs escaping, or is not ASCII, goes through JSON.stringify. Node has no JSON writer onto bytes
 * (JSON.stringify only makes strings), hence this one.
 *
 * Pieces share a chunk until it is full: a taken piece stays valid (the chunk is never written over), and the
 * chunk lives as long as any piece of it does, so memory follows the pieces in flight, not the page.
 */
export class JsonPieces {
  readonly #chunkSize: number;
  #chunk: Buffer;
  #pos = 0;
  /** Where the piece being written starts in the current chunk. */
  #start = 0;
  /** The piece's parts in earlier chunks, when it outgrew one. */
  readonly #earlier: Buffer[] = [];
  /** An object was opened by objectStart and has no member yet. */
  #firstMember = false;

  constructor(chunkSize = 64 * 1024) {
    this.#chunkSize = chunkSize;
    this.#chunk = Buffer.allocUnsafeSlow(chunkSize);
  }

  /** Text that is JSON already (punctuation, keys, printed values): copied as it is, as UTF-8. */
  text(text: string, from = 0): void {
    const length = text.length;
    if (length - from > longText) {
      this.#utf8(from === 0 ? text : text.slice(from));
      return;
    }
    if (this.#chunk.length - this.#pos < length) this.#room(length);
    const chunk = this.#chunk;
    let pos = this.#pos;
    for (let i = from; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c > 127) {
        this.#pos = pos;
        this.#utf8(text.slice(i));
        return;
      }
      chunk[pos++] = c;
    }
    this.#pos = pos;
  }

  /** A string as JSON.stringify prints it. */
  string(text: string): void {
    const length = text.length;
    if (length > longText) {
      this.#longString(text);
      return;
    }
    if (this.#chunk.length - this.#pos < length + 2) this.#room(length + 2);
    const chunk = this.#chunk;
    let pos = this.#pos;
    chunk[pos++] = 34;
    for (let i = 0; i < length; i++) {
      const c = text.charCodeAt(i);
      // A quote, a backslash or a control character is escaped, anything past ASCII is more than one byte (and a
      // lone surrogate is escaped): JSON.stringify prints those.
      if (c < 32 || c === 34 || c === 92 || c > 127) {
        this.#utf8(JSON.stringify(text));
        return;
      }
      chunk[pos++] = c;
    }
    chunk[pos++] = 34;
    this.#pos = pos;
  }

  /**
   * A long string (a body's or a transaction's BOC): copied by Buffer's writer, then checked as bytes, which costs a
   * third of reading its characters one by one. As many bytes as characters is ASCII, where only a quote, a
   * backslash or a control character needs escaping; anything else is printed by JSON.stringify.
   */
  #longString(text: string): void {
    const length = text.length;
    if (this.#chunk.length - this.#pos < 3 * length + 2) this.#room(3 * length + 2);
    const chunk = this.#chunk;
    const start = this.#pos + 1;
    const end = start + chunk.write(text, start, "utf8");
    let plain = end - start === length;
    for (let i = start; plain && i < end; i++) {
      const c = chunk[i] as number;
      if (c < 32 || c === 34 || c === 92) plain = false;
    }
    if (!plain) {
      this.#utf8(JSON.stringify(text));
      return;
    }
    chunk[start - 1] = 34;
    chunk[end] = 34;
    this.#pos = end + 1;
  }

  /** A JSON value: null for an absent one. */
  value(v: string | number | boolean | null | undefined): void {
    if (v === null || v === undefined) this.text("null");
    else if (typeof v === "string") this.string(v);
    // Numbers from the driver are finite; JSON prints the others as null.
    else if (typeof v === "number") this.text(Number.isFinite(v) ? String(v) : "null");
    else this.text(v ? "true" : "false");
  }

  /** `text` (a key, with what comes before it: `,"name":`) and the value, null for an absent one. */
  field(text: string, v: string | number | boolean | null | undefined): void {
    this.#key(text, 0);
    this.value(v);
  }

  /** `key` (`,"name":`, written as given) and the value, or nothing for an absent value (a member toncenter leaves out). */
  member(key: string, v: string | number | boolean | null | undefined): void {
    if (v === null || v === undefined) return;
    this.key(key);
    this.value(v);
  }

  /** A member's `key` (`,"name":`), its value to follow. */
  key(key: string): void {
    // The first member of an object opened by objectStart goes without its comma.
    this.#key(key, this.#firstMember ? 1 : 0);
    this.#firstMember = false;
  }

  /** A key's bytes from the `from`th on (a key is ASCII up to its name: its leading `,` or `{` is one byte). */
  #key(key: string, from: number): void {
    let bytes = keyBytes.get(key);
    if (bytes === undefined) {
      bytes = Buffer.from(key);
      // Keys are literals; should a caller ever pass made-up ones, they are written without being kept.
      if (keyBytes.size < maxKeys) keyBytes.set(key, bytes);
    }
    const length = bytes.length;
    if (this.#chunk.length - this.#pos < length) this.#room(length);
    const chunk = this.#chunk;
    let pos = this.#pos;
    for (let i = from; i < length; i++) chunk[pos++] = bytes[i] as number;
    this.#pos = pos;
  }

  /** Opens an object of members written by `member`; `{}` when none is. Not nested: one such object is open at a time. */
  objectStart(): void {
    this.text("{");
    this.#firstMember = true;
  }

  objectEnd(): void {
    this.#firstMember = false;
    this.text("}");
  }

  /** JSON already printed: its text when it is ASCII, else its UTF-8. */
  json(printed: JsonText): void {
    if (printed.ascii !== undefined) this.text(printed.ascii);
    else this.raw(printed.bytes);
  }

  /** JSON already printed as UTF-8. */
  raw(printed: Buffer): void {
    if (this.#chunk.length - this.#pos < printed.length) this.#room(printed.length);
    this.#pos += printed.copy(this.#chunk, this.#pos);
  }

  /** Everything written since the last take, as one buffer. */
  take(): Buffer {
    const last = this.#chunk.subarray(this.#start, this.#pos);
    this.#start = this.#pos;
    this.#firstMember = false;
    if (this.#earlier.length === 0) return last;
    this.#earlier.push(last);
    const whole = Buffer.concat(this.#earlier);
    this.#earlier.length = 0;
    return whole;
  }

  #utf8(text: string): void {
    const length = Buffer.byteLength(text);
    if (this.#chunk.length - this.#pos < length) this.#room(length);
    this.#pos += this.#chunk.write(text, this.#pos, "utf8");
  }

  /** Moves the piece on to a new chunk with at least `needed` bytes free. */
  #room(needed: number): void {
    if (this.#pos > this.#start) this.#earlier.push(this.#chunk.subarray(this.#start, this.#pos));
    this.#chunk = Buffer.allocUnsafeSlow(Math.max(this.#chunkSize, needed));
    this.#pos = 0;
    this.#start = 0;
  }
}

const shared = new JsonPieces();
let sharedBusy = false;

/**
 * What `write` writes, as one buffer: written by the process's one writer, whose chunks then hold the pieces of
 * every answer in turn (a writer of its own would take a chunk for a few bytes). `write` must not wait: the piece is
 * taken before anything else runs. A failed write's bytes are dropped with it.
 */
export function printJson(write: (out: JsonPieces) => void): Buffer {
  if (sharedBusy) {
    const own = new JsonPieces(1024);
    write(own);
    return own.take();
  }
  sharedBusy = true;
  try {
    write(shared);
  } catch (error) {
    shared.take();
    throw error;
  } finally {
    sharedBusy = false;
  }
  return shared.take();
}
