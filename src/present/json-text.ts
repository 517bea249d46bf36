import { randomBytes } from "node:crypto";

// JSON text already encoded as UTF-8, placed in a presented value and written verbatim by jsonBytes.
//
// Why: a decoded message body is the same JSON every time the body is returned. Stringified inside each trace
// it cost five times what decoding it did (measured on the bench's cold account, 100 traces: +51 ms of
// JSON.stringify per page, mostly because one non-ASCII comment turns the whole trace's string two-byte, which
// V8 then builds and encodes on its slow paths). V8's JSON.rawJSON takes primitives only, so the text goes
// through JSON.stringify as a placeholder string, and its bytes replace the placeholder afterwards. The
// placeholder carries a per-process random nonce: no string from the index can imitate it.

const marker = `\u0000${randomBytes(12).toString("hex")}:`;
/** The placeholder as JSON.stringify prints it, up to its closing quote. */
const printedMarker = JSON.stringify(marker).slice(0, -1);

let collecting: JsonText[] | undefined;

export class JsonText {
  /**
   * The text itself when it is ASCII, as most decoded bodies are: one byte per character in V8 as in UTF-8, so the
   * REST encoder joins it to the page's string like any other value, where a buffer would split the page's text
   * into pieces to be encoded and concatenated (in a profile of the bench's hot 100-trace page, the JSON encoder's
   * time fell by a quarter).
   */
  readonly ascii: string | undefined;
  /** The text as UTF-8, when it is not ASCII. */
  readonly #utf8: Buffer | undefined;

  private constructor(ascii: string | undefined, utf8: Buffer | undefined) {
    this.ascii = ascii;
    this.#utf8 = utf8;
  }

  /**
   * The value's JSON, held once. Bytes in a buffer of their own, not Buffer.from's: a short string lands in a
   * slice of Node's shared 64 KB pool, and a text kept for long (the decoded-body cache keeps thousands) would keep
   * the whole slab alive with it: after one page of the bench's cold account the cache held 1,453 slabs, 90 MB, for
   * a few MB of text.
   */
  static of(value: unknown): JsonText {
    const text = JSON.stringify(value);
    const length = Buffer.byteLength(text);
    if (length === text.length) return new JsonText(text, undefined);
    const bytes = Buffer.allocUnsafeSlow(length);
    bytes.write(text);
    return new JsonText(undefined, bytes);
  }

  /** The text as UTF-8 (a new buffer for an ASCII text). */
  get bytes(): Buffer {
    return this.#utf8 ?? Buffer.from(this.ascii as string, "latin1");
  }

  get byteLength(): number {
    return this.#utf8?.length ?? (this.ascii as string).length;
  }

  /** Writes the text's UTF-8 into `out` at `offset`; returns the number of bytes written. */
  copyInto(out: Buffer, offset: number): number {
    return this.#utf8 === undefined ? out.write(this.ascii as string, offset, "latin1") : this.#utf8.copy(out, offset);
  }

  /** The value, parsed afresh. */
  value<T = unknown>(): T {
    return JSON.parse(this.ascii ?? (this.#utf8 as Buffer).toString("utf8")) as T;
  }

  /** Inside jsonBytes a placeholder; anywhere else (a test's JSON.stringify) the value itself. */
  toJSON(): unknown {
    if (collecting === undefined) return this.value();
    collecting.push(this);
    return marker;
  }
}

/** JSON.stringify(value) as UTF-8, with every JsonText in it written as its bytes. */
export function jsonBytes(value: unknown): Buffer {
  const texts: JsonText[] = [];
  collecting = texts;
  let text: string;
  try {
    text = JSON.stringify(value);
  } finally {
    collecting = undefined;
  }
  if (texts.length === 0) return Buffer.from(text);
  // JSON.stringify calls toJSON in output order: the n-th placeholder is the n-th text.
  const between: string[] = [];
  let from = 0;
  for (let i = 0; i < texts.length; i++) {
    const at = text.indexOf(printedMarker, from);
    between.push(text.slice(from, at));
    from = at + printedMarker.length + 1;
  }
  between.push(text.slice(from));
  let length = 0;
  for (const piece of between) length += Buffer.byteLength(piece);
  for (const piece of texts) length += piece.byteLength;
  const out = Buffer.allocUnsafe(length);
  let offset = out.write(between[0] as string);
  for (let i = 0; i < texts.length; i++) {
    offset += (texts[i] as JsonText).copyInto(out, offset);
    offset += out.write(between[i + 1] as string, offset);
  }
  return out;
}
