import type { JsonText } from "../../present/json-text.ts";

/**
 * JSON text built piece by piece as UTF-8: strings are joined as they come, and JSON already printed as bytes (a
 * decoded body's non-ASCII text) goes in as it is, without being read back into a string (which would turn
 * two-byte for a whole trace). A piece of text stays one-byte per character in V8 as long as it is ASCII, which
 * everything but some decoded bodies (comments) is here.
 */
export class JsonPieces {
  readonly #pieces: Buffer[] = [];
  #text = "";

  text(text: string): void {
    this.#text += text;
  }

  /** JSON already printed: joined to the text when it is ASCII, else placed as its UTF-8. */
  json(printed: JsonText): void {
    if (printed.ascii !== undefined) this.text(printed.ascii);
    else this.raw(printed.bytes);
  }

  /** JSON already printed as UTF-8. */
  raw(printed: Buffer): void {
    this.#flush();
    this.#pieces.push(printed);
  }

  /** Everything written so far, as one buffer; the pieces start over. */
  take(): Buffer {
    this.#flush();
    const out = this.#pieces.length === 1 ? (this.#pieces[0] as Buffer) : Buffer.concat(this.#pieces);
    this.#pieces.length = 0;
    return out;
  }

  #flush(): void {
    if (this.#text === "") return;
    this.#pieces.push(Buffer.from(this.#text));
    this.#text = "";
  }
}
