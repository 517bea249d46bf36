import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { serializeBoc } from "../ton/boc.ts";
import { leafBagOfCells, parseRawBoc, RawCell, toCoreCell } from "../ton/raw-cell.ts";
import { type Decoded, TlbDecoder } from "./tlb-decoder.ts";
import { type CompiledSchema, type Constructor, readCompiledSchema } from "./compiled-schema.ts";

// What toncenter returns as a message's `decoded` and `decoded_opcode` (facts: ton-indexer's ton-marker and its
// Go caller), computed from our TL-B schema:
// - a body is tried against the constructors whose 32-bit tag is its first 32 bits: message bodies first, then
//   forward payloads, in schema order; the first that decodes wins; bits or references left after its last
//   field are ignored, as tlbc's printer ignores them;
// - a body whose opcode no message body has is tried as a wallet's signed external request (highload v3, then
//   wallets v4, v3 and v1/v2, with as many messages as the body has references), which must use the whole body;
// - every cell in the result (a `Cell` field, a `^Cell`, a forward payload) is decoded the same way, eleven
//   levels below the body at most, and left as a base64 bag of cells where it does not decode;
// - an empty body is {"@type":"empty_cell"}; a top-level text comment keeps toncenter's older form beside the
//   new one; anything else that does not decode is null.
// `decoded_opcode` is the name of the first message body with the opcode, whether or not the body decodes.

/** The schema files, in the order constructors are tried. */
export const schemaFiles: readonly string[] = [
  "core.tlb",
  "common.tlb",
  "jettons.tlb",
  "nfts.tlb",
  "dns.tlb",
  "wallets.tlb",
  "dedust.tlb",
  "stonfi.tlb",
  "bidask.tlb",
  "staking.tlb",
  "swap-coffee.tlb",
  "multisig.tlb",
  "vesting.tlb",
  "nominators.tlb",
  "payments.tlb",
  "storage.tlb",
  "staking-more.tlb",
  "dex-more.tlb",
  "markets.tlb",
];

/** ton-marker replaces nested bags of cells at recursion depths 0 to 10: eleven levels below the body. */
const maxNesting = 10;
const walletMessagesMax = 4;

/**
 * The schema of the given files, tried in their order, from schema/compiled.json (`npm run generate:tlb`): the
 * service never parses TL-B text, nor loads the parser.
 */
export function loadSchema(files: readonly string[] = schemaFiles): CompiledSchema {
  return readCompiledSchema(files);
}

function byOpcode(constructors: readonly Constructor[]): Map<number, Constructor[]> {
  const map = new Map<number, Constructor[]>();
  for (const constructor of constructors) {
    if (constructor.tagBits !== 32) continue;
    const opcode = Number(constructor.tag);
    const list = map.get(opcode);
    if (list) list.push(constructor);
    else map.set(opcode, [constructor]);
  }
  return map;
}

/** A cell carried by a body that cannot be printed: the whole body then decodes to null, never to half an object. */
class UnprintableCell extends Error {}

function bagOfCells(cell: RawCell): string {
  const leaf = leafBagOfCells(cell);
  if (leaf !== undefined) return leaf.toString("base64");
  let core;
  try {
    core = toCoreCell(cell);
  } catch (error) {
    // @ton/core refuses to build a malformed exotic cell (a pruned branch or library cell with bad data).
    throw new UnprintableCell(String(error));
  }
  return serializeBoc(core, { crc32c: false }).toString("base64");
}

export class MessageBodyDecoder {
  readonly #decoder: TlbDecoder;
  readonly #bodies: Map<number, Constructor[]>;
  readonly #payloads: Map<number, Constructor[]>;
  readonly #names = new Map<number, string>();

  constructor(schema: CompiledSchema = loadSchema()) {
    this.#decoder = new TlbDecoder(schema);
    this.#bodies = byOpcode(schema.constructors("InternalMsgBody"));
    this.#payloads = byOpcode(schema.constructors("ForwardPayload"));
    for (const [opcode, constructors] of this.#bodies) this.#names.set(opcode, (constructors[0] as Constructor).name);
  }

  /** The name toncenter gives the opcode (`decoded_opcode`), or undefined for one no message body has. */
  opcodeName(opcode: number): string | undefined {
    return this.#names.get(opcode >>> 0);
  }

  /** A message body (a base64 bag of cells) as toncenter's `decoded`, or undefined where it gives null. */
  decodeBody(bodyBoc: string): JsonObject | undefined {
    const cell = parseRawBoc(Buffer.from(bodyBoc, "base64"));
    if (cell === undefined) return undefined;
    let value: JsonObject | undefined;
    try {
      value = this.#decodeCell(cell, 0);
    } catch (error) {
      if (error instanceof UnprintableCell) return undefined;
      throw error;
    }
    if (value === undefined) return undefined;
    if (value["@type"] === "text_comment" && typeof value.text === "string") {
      // Toncenter's Go layer keeps the pre-2025 form of a comment for the clients that read it.
      return { "@type": "text_comment", comment: value.text, type: "text_comment" };
    }
    return value;
  }

  #decodeCell(cell: RawCell, depth: number): JsonObject | undefined {
    if (cell.exotic) return undefined;
    if (cell.bitLength === 0 && cell.refs.length === 0) return { "@type": "empty_cell" };
    if (cell.bitLength < 32) return undefined;
    const opcode = cell.uint(0, 32);
    const candidates = [...(this.#bodies.get(opcode) ?? []), ...(this.#payloads.get(opcode) ?? [])];
    let value = this.#decoder.decodeAs(candidates, cell, false);
    if (value === undefined && !this.#names.has(opcode)) value = this.#decodeWalletRequest(cell);
    if (value === undefined) return undefined;
    return this.#print(value, depth) as JsonObject;
  }

  #decodeWalletRequest(cell: RawCell): Decoded | undefined {
    const messages = cell.refs.length;
    const attempts: Array<[string, number[]]> = [["HighloadV3Body", []]];
    if (messages <= walletMessagesMax) {
      attempts.push(["WalletV4Body", [messages]], ["WalletV3Body", [messages]], ["WalletV1V2Body", [messages]]);
    }
    for (const [type, args] of attempts) {
      const value = this.#decoder.decodeApplied(type, args, cell);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /**
   * Turns the cells left in a decoded value into what toncenter prints for them, in place: the value was built
   * by this decode and nothing else holds it.
   */
  #print(value: Decoded, depth: number): JsonValue {
    if (value instanceof RawCell) {
      const nested = depth <= maxNesting ? this.#decodeCell(value, depth + 1) : undefined;
      return nested ?? bagOfCells(value);
    }
    if (typeof value !== "object") return value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = this.#print(value[i] as Decoded, depth) as Decoded;
    } else {
      for (const key in value) {
        const field = value[key] as Decoded;
        if (typeof field === "object") value[key] = this.#print(field, depth) as Decoded;
      }
    }
    return value as JsonValue;
  }
}
