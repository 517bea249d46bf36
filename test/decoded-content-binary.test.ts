import { readdirSync, readFileSync } from "node:fs";
import { create, type JsonObject, type JsonValue, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type DecodedContent, DecodedContentSchema } from "../gen/tonquery/v1/transaction_pb.ts";
import { MessageBodyDecoder } from "../src/decoding/message-body.ts";
import { encodeDecodedContent } from "../src/encode/proto/decoded-content.ts";

const fixtures = new URL("../fixtures/toncenter/", import.meta.url);

/** Every distinct string recorded under "body" in the recordings (message bodies and state inits). */
function recordedBodies(): string[] {
  const found = new Set<string>();
  const walk = (value: unknown) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (key === "body" && typeof item === "string") found.add(item);
        else walk(item);
      }
    }
  };
  for (const file of readdirSync(fixtures).filter((f) => f.endsWith(".json"))) walk(JSON.parse(readFileSync(new URL(file, fixtures), "utf8")));
  return [...found];
}

let recorded: DecodedContent[] | undefined;

/** The recordings' decoded bodies as the decoding layer hands them out, decoded once for the tests that need them. */
function recordedContents(): DecodedContent[] {
  if (recorded === undefined) {
    const decoder = new MessageBodyDecoder();
    recorded = recordedBodies().flatMap((boc) => {
      const data = decoder.decodeBody(boc);
      return data === undefined ? [] : [content(data, data["@type"] === "text_comment" ? (data.comment as string) : undefined)];
    });
  }
  return recorded;
}

/** As the decoding layer builds it. */
function content(data: JsonObject, comment?: string): DecodedContent {
  return { $typeName: "tonquery.v1.DecodedContent", type: String(data["@type"] ?? ""), comment, data };
}

const handMade: [string, DecodedContent][] = [
  ["a comment", content({ "@type": "text_comment", comment: "hello" }, "hello")],
  ["an empty comment", content({ "@type": "text_comment", comment: "" }, "")],
  ["unicode keys and strings", content({ "@type": "text_comment", comment: "привет 🚀", "ключ ✓": "日本語 \u0000 \uffff" }, "привет 🚀")],
  ["numbers", content({ "@type": "n", zero: 0, negativeZero: -0, int: 42, negative: -7, fraction: 1.5, big: 2 ** 60, tiny: 5e-324, nan: Number.NaN, inf: -Infinity })],
  ["booleans and null", content({ "@type": "b", yes: true, no: false, nothing: null })],
  ["empty object, array and string", content({ "@type": "e", object: {}, array: [], string: "" })],
  ["nested objects and arrays", content({ "@type": "x", a: { b: { c: [1, "two", [true, null, {}], { d: [] }] } }, list: [{ e: 1 }, { e: 2 }] })],
  ["integer-like keys, ordered as JavaScript orders them", content({ "@type": "k", b: 1, 10: 2, a: 3, 2: 4, "": 5 })],
  ["an own __proto__ key", content(JSON.parse('{"@type": "p", "__proto__": {"x": 1}}') as JsonObject)],
  ["an empty data object", content({})],
  ["a long string, longer than one length byte can say", content({ "@type": "l", s: "x".repeat(20_000) })],
  ["no data", create(DecodedContentSchema, { type: "t" })],
  ["nothing set", create(DecodedContentSchema)],
  ["a comment but no data", create(DecodedContentSchema, { type: "text_comment", comment: "hi" })],
];

describe("encodeDecodedContent", () => {
  it.each(handMade)("writes the bytes toBinary writes: %s", (_, decoded) => {
    expect(encodeDecodedContent(decoded)).toEqual(toBinary(DecodedContentSchema, decoded));
  });

  it("writes the bytes toBinary writes for every decoded body of the recordings", () => {
    const decoded = recordedContents();
    expect(decoded.length).toBeGreaterThanOrEqual(150);
    const differing = decoded.filter((c) => !Buffer.from(encodeDecodedContent(c)).equals(toBinary(DecodedContentSchema, c))).map((c) => c.type);
    expect(differing).toEqual([]);
  });

  it("still writes correct bytes after a value too deep to write", () => {
    let deep: JsonValue = [];
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    expect(() => encodeDecodedContent(content({ "@type": "deep", deep }))).toThrow(RangeError);
    const after = content({ "@type": "after", a: { b: [1, "two", {}] } });
    expect(encodeDecodedContent(after)).toEqual(toBinary(DecodedContentSchema, after));
  });

  it("encodes an object once, and returns the same bytes after", () => {
    const decoded = content({ "@type": "once", a: [1] });
    expect(encodeDecodedContent(decoded).buffer).toBe(encodeDecodedContent(decoded).buffer);
  });
});
