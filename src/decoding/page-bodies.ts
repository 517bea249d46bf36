import type { DecodedContent } from "../../gen/tonquery/v1/transaction_pb.ts";
import { MessageBodyDecoder } from "./message-body.ts";

const decoder = new MessageBodyDecoder();

/** How the messages of one page get their `decoded` and `decoded_opcode`. */
export interface BodyDecoding {
  opcodeName(opcode: number): string | undefined;
  decode(hash: string | null, body: string | null): DecodedContent | undefined;
}

/** A fresh decoding scope for one page, or one that decodes nothing when decoding is turned off. */
export function pageBodyDecoding(enabled: boolean): BodyDecoding {
  return enabled ? new PageBodyDecoding() : withoutDecoding;
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
  readonly #byHash = new Map<string, DecodedContent | undefined>();

  opcodeName(opcode: number): string | undefined {
    return decoder.opcodeName(opcode);
  }

  decode(hash: string | null, body: string | null): DecodedContent | undefined {
    if (hash === null || body === null) return undefined;
    if (this.#byHash.has(hash)) return this.#byHash.get(hash);
    const decoded = decodedContent(body);
    this.#byHash.set(hash, decoded);
    return decoded;
  }
}

function decodedContent(body: string): DecodedContent | undefined {
  const data = decoder.decodeBody(body);
  if (data === undefined) return undefined;
  const type = data["@type"] as string;
  const comment = type === "text_comment" ? (data.comment as string) : undefined;
  return { $typeName: "tonquery.v1.DecodedContent", type, comment, data };
}
