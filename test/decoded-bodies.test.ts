import { readdirSync, readFileSync } from "node:fs";
import { beginCell, Cell, Dictionary, type Builder } from "@ton/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MessageBodyDecoder } from "../src/decoding/message-body.ts";
import { pageBodyDecoding } from "../src/decoding/page-bodies.ts";
import { TlbDecoder } from "../src/decoding/tlb-decoder.ts";
import { TlbSchema } from "../src/decoding/tlb-schema.ts";
import { fromCoreCell } from "../src/ton/raw-cell.ts";

const decoder = new MessageBodyDecoder();
const fixtures = new URL("../fixtures/toncenter/", import.meta.url);

type Json = Record<string, unknown>;
interface RecordedMessage {
  opcode?: string | null;
  decoded_opcode?: string | null;
  message_content?: { body?: string | null; decoded?: unknown } | null;
}

/** Every message object of every recording (transactions' in_msg and out_msgs, wherever they nest). */
function recordedMessages(): { file: string; message: RecordedMessage }[] {
  const found: { file: string; message: RecordedMessage }[] = [];
  const walk = (value: unknown, file: string) => {
    if (Array.isArray(value)) value.forEach((item) => walk(item, file));
    else if (typeof value === "object" && value !== null) {
      if ("message_content" in value && "opcode" in value) found.push({ file, message: value as RecordedMessage });
      Object.values(value).forEach((item) => walk(item, file));
    }
  };
  for (const file of readdirSync(fixtures).filter((f) => f.endsWith(".json"))) walk(JSON.parse(readFileSync(new URL(file, fixtures), "utf8")), file);
  return found;
}

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const base64 = (builder: Builder) => builder.endCell().toBoc().toString("base64");
const address = (hex: string) => ({ "@type": "addr_std", anycast: { "@type": "nothing_from_maybe" }, workchain_id: "0", address: hex });

describe("decoded bodies against every recording", () => {
  const messages = recordedMessages();

  it("decodes every current-form object exactly as toncenter did", () => {
    const current = messages.filter(({ message }) => isObject(message.message_content?.decoded) && "@type" in (message.message_content?.decoded as Json));
    const differing = current
      .filter(({ message }) => JSON.stringify(decoder.decodeBody(message.message_content?.body ?? "")) !== JSON.stringify(message.message_content?.decoded))
      .map(({ file, message }) => `${file}: ${String((message.message_content?.decoded as Json)["@type"])}`);
    // 157 non-comment objects of 24 types, and the comments recorded with "@type".
    expect(current.length).toBeGreaterThanOrEqual(157);
    expect(differing).toEqual([]);
  });

  it("names every recorded opcode as toncenter did", () => {
    const named = messages.filter(({ message }) => typeof message.decoded_opcode === "string" || message.decoded_opcode === null);
    const differing: string[] = [];
    let olderUnknown = 0;
    for (const { file, message } of named) {
      const ours = message.opcode ? (decoder.opcodeName(Number(message.opcode)) ?? null) : null;
      // Before 2025-10 toncenter wrote an opcode it did not know as "" rather than null.
      if (message.decoded_opcode === "" && ours === null) olderUnknown++;
      else if (ours !== message.decoded_opcode) differing.push(`${file}: ${message.opcode} ours ${ours} theirs ${message.decoded_opcode}`);
    }
    expect(named.length - olderUnknown).toBeGreaterThanOrEqual(338);
    expect(olderUnknown).toBe(21);
    expect(differing).toEqual([]);
  });

  it("decodes the 2024–25 older-form objects to the same constructors", () => {
    const older = messages.filter(({ message }) => {
      const decoded = message.message_content?.decoded;
      return isObject(decoded) && !("@type" in decoded) && decoded.type !== "text_comment" && decoded.type !== "@type";
    });
    let same = 0;
    const other: string[] = [];
    for (const { file, message } of older) {
      const recorded = message.message_content?.decoded as Json;
      const ours = decoder.decodeBody(message.message_content?.body ?? "");
      // A MyTonWallet capture keeps one key of the object instead of its type: the key must be one of ours.
      const matches = ours !== undefined && (ours["@type"] === recorded.type || (typeof recorded.type === "string" && recorded.type in ours));
      if (matches) same++;
      else other.push(`${file}: ${String(recorded.type)} → ${String(ours?.["@type"])}`);
    }
    expect(other).toEqual([]);
    expect(same).toBe(older.length);
  });
});

describe("the message body decoder", () => {
  it("keeps toncenter's two forms of a text comment at the top, and decodes nested ones as text", () => {
    const comment = base64(beginCell().storeUint(0, 32).storeStringTail("hello"));
    expect(decoder.decodeBody(comment)).toEqual({ "@type": "text_comment", comment: "hello", type: "text_comment" });
    const notify = beginCell()
      .storeUint(0x7362d09c, 32)
      .storeUint(1, 64)
      .storeCoins(5)
      .storeAddress(null)
      .storeBit(1)
      .storeRef(beginCell().storeUint(0, 32).storeStringTail("memo"));
    expect(decoder.decodeBody(base64(notify))).toMatchObject({ forward_payload: { "@type": "second_from_either", value: { "@type": "text_comment", text: "memo" } } });
  });

  it("gives an empty body as empty_cell, and null for short, unknown, truncated or broken ones", () => {
    expect(decoder.decodeBody(base64(beginCell()))).toEqual({ "@type": "empty_cell" });
    expect(decoder.decodeBody(base64(beginCell().storeUint(7, 16)))).toBeUndefined();
    expect(decoder.decodeBody(base64(beginCell().storeUint(0x12345678, 32).storeUint(1, 64)))).toBeUndefined();
    // A jetton transfer cut inside its destination address: no half object.
    expect(decoder.decodeBody(base64(beginCell().storeUint(0x0f8a7ea5, 32).storeUint(1, 64).storeCoins(10).storeUint(2, 2)))).toBeUndefined();
    expect(decoder.decodeBody("not a bag of cells")).toBeUndefined();
  });

  it("gives null for a body carrying a malformed exotic cell, which cannot be printed", () => {
    // A bounce whose payload refers to a "pruned branch" cell with a bad level.
    const root = Buffer.from([0x01, 0x08, 0xff, 0xff, 0xff, 0xff, 0x01]);
    const pruned = Buffer.from([0x08, 0x04, 0x01, 0x77]);
    const cells = Buffer.concat([root, pruned]);
    const boc = Buffer.concat([Buffer.from("b5ee9c72", "hex"), Buffer.from([0x01, 0x01, 0x02, 0x01, 0x00, cells.length, 0x00]), cells]);
    expect(decoder.decodeBody(boc.toString("base64"))).toBeUndefined();
  });

  it("names an opcode whether or not its body decodes", () => {
    expect(decoder.opcodeName(0x0f8a7ea5)).toBe("jetton_transfer");
    expect(decoder.opcodeName(0)).toBe("text_comment");
    expect(decoder.opcodeName(0xffffffff)).toBe("bounce");
    expect(decoder.opcodeName(0x12345678)).toBeUndefined();
  });

  it("decodes cells nested in a body eleven levels deep, as toncenter does, and leaves deeper ones encoded", () => {
    // Thirteen bounces, each carrying the next: the body and eleven nested levels decode, the twelfth does not.
    let body = beginCell().storeUint(0xd53276db, 32).storeUint(9, 64).endCell();
    for (let i = 0; i < 13; i++) body = beginCell().storeUint(0xffffffff, 32).storeSlice(body.beginParse()).endCell();
    let value = decoder.decodeBody(body.toBoc().toString("base64")) as Json;
    let depth = 0;
    while (isObject(value.payload)) {
      value = value.payload;
      depth++;
    }
    expect(depth).toBe(11);
    expect(typeof value.payload).toBe("string");
    expect(Cell.fromBase64(value.payload as string).beginParse().loadUint(32)).toBe(0xffffffff);
  });

  it("reads a dictionary through the schema's own Hashmap definition", () => {
    const schema = new TlbSchema();
    schema.add(readFileSync(new URL("../src/decoding/schema/core.tlb", import.meta.url), "utf8"), "core.tlb");
    schema.add("_ dict:(HashmapE 8 uint16) = Test;", "test");
    const dict = Dictionary.empty(Dictionary.Keys.Uint(8), Dictionary.Values.Uint(16));
    dict.set(1, 100).set(2, 200).set(200, 7);
    const value = new TlbDecoder(schema).decodeApplied("Test", [], fromCoreCell(beginCell().storeDict(dict).endCell())) as Json;
    const leaves: string[] = [];
    const walk = (v: unknown) => {
      if (!isObject(v)) return;
      if (v["@type"] === "hashmap_node_leaf") leaves.push(v.value as string);
      Object.values(v).forEach(walk);
    };
    walk(value);
    expect(leaves.sort()).toEqual(["100", "200", "7"]);
    expect(value.dict).toMatchObject({ "@type": "hashmap_root", root: { "@type": "hashmap_edge" } });
  });

  it("decodes a wallet v5 external request with its action list, and a wallet v3 one with two messages", () => {
    const message = (dest: string) =>
      beginCell()
        .storeUint(0, 1)
        .storeBit(1)
        .storeBit(1)
        .storeBit(0)
        .storeUint(0, 2)
        .storeUint(0b100, 3)
        .storeUint(0, 8)
        .storeBuffer(Buffer.from(dest, "hex"))
        .storeCoins(1000)
        .storeBit(0)
        .storeCoins(0)
        .storeCoins(0)
        .storeUint(0, 64)
        .storeUint(0, 32)
        .storeBit(0)
        .storeBit(0)
        .endCell();
    const dest = "11".repeat(32);
    const send = (prev: Cell) => beginCell().storeRef(prev).storeUint(0x0ec3c86d, 32).storeUint(3, 8).storeRef(message(dest)).endCell();
    const actions = send(send(beginCell().endCell()));
    const w5 = beginCell()
      .storeUint(0x7369676e, 32)
      .storeUint(2147483409, 32)
      .storeUint(1700000000, 32)
      .storeUint(5, 32)
      .storeBit(1)
      .storeRef(actions)
      .storeBit(0)
      .storeBuffer(Buffer.alloc(64, 0xab));
    const decoded = decoder.decodeBody(base64(w5)) as Json;
    expect(decoded).toMatchObject({ "@type": "w5_external_signed_request", msg_seqno: "5", signature: "AB".repeat(64) });
    const list = ((decoded[""] as Json).out_actions as Json).value as Json;
    expect(list).toMatchObject({ cell_reference: { "@type": "out_list", action: { "@type": "action_send_msg", mode: "3" } } });

    const v3 = beginCell()
      .storeBuffer(Buffer.alloc(64, 1))
      .storeUint(698983191, 32)
      .storeUint(1700000000, 32)
      .storeUint(7, 32)
      .storeUint(3, 8)
      .storeRef(message(dest))
      .storeUint(1, 8)
      .storeRef(message(dest));
    expect(decoder.decodeBody(base64(v3))).toMatchObject({
      "@type": "wallet_signed_v3",
      msgs: { "@type": "msgs_2", msg_1: { mode: "3", msg: { info: { dest: address(dest.toUpperCase()) } } }, msg_2: { mode: "1" } },
    });
  });

  it("never throws, whatever the bytes or cells", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        decoder.decodeBody(Buffer.from(bytes).toString("base64"));
      }),
    );
    const knownOpcodes = [0x0f8a7ea5, 0x178d4519, 0x7362d09c, 0xea06185d, 0x61ee542d, 0x7369676e, 0x4eb1f0f9, 0xffffffff, 0];
    // A small tree of random cells: each cell refers to up to two of the ones built after it.
    const cell = fc.array(fc.tuple(fc.uint8Array({ maxLength: 120 }), fc.nat(2)), { minLength: 1, maxLength: 7 }).map((parts) => {
      const built: Cell[] = [];
      for (let i = parts.length - 1; i >= 0; i--) {
        const [bytes, refs] = parts[i] as [Uint8Array, number];
        const builder = beginCell().storeBuffer(Buffer.from(bytes));
        for (const ref of refs === 0 ? [] : built.slice(-refs)) builder.storeRef(ref);
        built.push(builder.endCell());
      }
      return built[built.length - 1] as Cell;
    });
    fc.assert(
      fc.property(fc.constantFrom(...knownOpcodes), cell, (opcode, rest) => {
        const body = beginCell().storeUint(opcode, 32).storeSlice(rest.beginParse()).endCell();
        const decoded = decoder.decodeBody(body.toBoc().toString("base64"));
        if (decoded !== undefined) expect(typeof decoded["@type"]).toBe("string");
      }),
      { numRuns: 300 },
    );
  });
});

describe("a page's body decoding", () => {
  it("decodes a body once however many messages of the page carry it", () => {
    const bodies = pageBodyDecoding({ decodeBodies: true, decodedBodyCache: 0 });
    const excess = base64(beginCell().storeUint(0xd53276db, 32).storeUint(1, 64));
    const first = bodies.decode("hash-1", excess);
    expect(first?.type).toBe("excess");
    expect(bodies.decode("hash-1", excess)).toBe(first);
    expect(bodies.decode(null, excess)).toBeUndefined();
  });

  it("keeps the most recently used decoded bodies for later pages, up to DECODED_BODY_CACHE of them", () => {
    const settings = { decodeBodies: true, decodedBodyCache: 2 };
    const excess = (queryId: number) => base64(beginCell().storeUint(0xd53276db, 32).storeUint(queryId, 64));
    const first = pageBodyDecoding(settings).decode("h1", excess(1));
    expect(pageBodyDecoding(settings).decode("h1", excess(1))).toBe(first);
    const later = pageBodyDecoding(settings);
    later.decode("h2", excess(2));
    later.decode("h3", excess(3));
    // h1 was the least recently used of three: decoded afresh, equal but not the same object.
    const again = pageBodyDecoding(settings).decode("h1", excess(1));
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });

  it("decodes nothing when decoding is turned off", () => {
    const bodies = pageBodyDecoding({ decodeBodies: false, decodedBodyCache: 10 });
    expect(bodies.decode("hash-1", base64(beginCell().storeUint(0xd53276db, 32).storeUint(1, 64)))).toBeUndefined();
    expect(bodies.opcodeName(0x0f8a7ea5)).toBeUndefined();
  });
});
