import type { JsonObject } from "@bufbuild/protobuf";
import type { DecodedContent } from "../../gen/tonquery/v1/transaction_pb.ts";
import { JsonText } from "../present/json-text.ts";
import { MessageBodyDecoder } from "./message-body.ts";

// Built on first use: a service with DECODE_BODIES=false, and every test that never decodes, need not hold the
// schema (read from schema/compiled.json in about 2 ms, where parsing the .tlb files took 0.6 s).
let compiled: MessageBodyDecoder | undefined;
function decoder(): MessageBodyDecoder {
  compiled ??= new MessageBodyDecoder();
  return compiled;
}

/** How the messages of one page get their `decoded` and `decoded_opcode`. */
export interface BodyDecoding {
  opcodeName(opcode: number): string | undefined;
  decode(hash: string | null, body: string | null): DecodedContent | undefined;
}

export interface BodyDecodingSettings {
  decodeBodies: boolean;
  decodedBodyCache: number;
}

/**
 * Decoded bodies of recent pages by body hash. A body never changes under its hash, and pages of the same account
 * or block are asked for again and again, so their bodies are decoded once, not once per response. Entries are
 * shared, immutable, and bounded in number (least recently used go first).
 */
class RecentBodies {
  readonly #entries = new Map<string, DecodedBody | null>();
  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get(hash: string): DecodedBody | null | undefined {
    const entry = this.#entries.get(hash);
    if (entry !== undefined) {
      this.#entries.delete(hash);
      this.#entries.set(hash, entry);
    }
    return entry;
  }

  set(hash: string, entry: DecodedBody | null): void {
    if (this.capacity === 0) return;
    this.#entries.set(hash, entry);
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value as string);
  }
}

let recent = new RecentBodies(0);

/** Loads the schema now if bodies are to be decoded, so that no request waits for it. */
export function prepareBodyDecoding(settings: BodyDecodingSettings): void {
  if (settings.decodeBodies) decoder();
}

/** A fresh decoding scope for one page, or one that decodes nothing when decoding is turned off. */
export function pageBodyDecoding(settings: BodyDecodingSettings): BodyDecoding {
  if (!settings.decodeBodies) return withoutDecoding;
  if (recent.capacity !== settings.decodedBodyCache) recent = new RecentBodies(settings.decodedBodyCache);
  return new PageBodyDecoding(recent);
}

const withoutDecoding: BodyDecoding = {
  opcodeName: () => undefined,
  decode: () => undefined,
};

/**
 * The decoded bodies of one page of messages: a body is decoded once per page however many messages carry it
 * (a jetton transfer's payload, an excess, a comment repeated across a trace), and only if it is returned.
 */
class PageBodyDecoding implements BodyDecoding {
  readonly #byHash = new Map<string, DecodedBody | undefined>();
  readonly #recent: RecentBodies;

  constructor(recent: RecentBodies) {
    this.#recent = recent;
  }

  opcodeName(opcode: number): string | undefined {
    return decoder().opcodeName(opcode);
  }

  decode(hash: string | null, body: string | null): DecodedContent | undefined {
    if (hash === null || body === null) return undefined;
    if (this.#byHash.has(hash)) return this.#byHash.get(hash);
    let decoded = this.#recent.get(hash);
    if (decoded === undefined) {
      decoded = decodedContent(body) ?? null;
      this.#recent.set(hash, decoded);
    }
    this.#byHash.set(hash, decoded ?? undefined);
    return decoded ?? undefined;
  }
}

/**
 * A decoded body as pages hand it out: its JSON text, printed once, and the value parsed back from it only where a
 * consumer asks for `data` (the typed API's encoders; REST writes the text). Kept as text, not as the tree the
 * decoder built, because pages hold thousands and the cache tens of thousands of them: a tree of a few dozen
 * objects each would be carried from one garbage collection to the next for nothing.
 */
export class DecodedBody implements DecodedContent {
  readonly $typeName = "tonquery.v1.DecodedContent";
  readonly type: string;
  readonly comment?: string;
  readonly text: JsonText;
  declare readonly data: JsonObject;

  constructor(data: JsonObject) {
    this.type = data["@type"] as string;
    if (this.type === "text_comment") this.comment = data.comment as string;
    this.text = JsonText.of(data);
    // Own and enumerable, as protobuf-es requires of a set field (it reads presence with hasOwnProperty).
    Object.defineProperty(this, "data", parsedData);
  }
}
const parsedData: PropertyDescriptor = {
  enumerable: true,
  get(this: DecodedBody) {
    return this.text.value();
  },
};

function decodedContent(body: string): DecodedBody | undefined {
  const data = decoder().decodeBody(body);
  return data === undefined ? undefined : new DecodedBody(data);
}
