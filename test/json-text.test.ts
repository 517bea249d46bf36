import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonPieces } from "../src/encode/json-pieces.ts";
import { jsonBytes, JsonText } from "../src/present/json-text.ts";

/** The value with some of its objects and arrays replaced by their pre-printed text (every third, by position). */
function withTexts(value: unknown, counter = { n: 0 }): unknown {
  if (typeof value !== "object" || value === null) return value;
  const inner = Array.isArray(value)
    ? value.map((item) => withTexts(item, counter))
    : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withTexts(item, counter)]));
  return counter.n++ % 3 === 0 ? JsonText.of(value) : inner;
}

describe("jsonBytes", () => {
  it("writes pre-printed JSON where it stands, byte for byte what JSON.stringify of the plain value gives", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const expected = Buffer.from(JSON.stringify(value) ?? "null");
        expect(jsonBytes(withTexts(value)).equals(expected)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("keeps non-ASCII text, a string that looks like a placeholder, and texts at the edges intact", () => {
    const decoded = { "@type": "text_comment", text: "Привет 👋 \u0000" };
    const value = [JsonText.of(decoded), { comment: "\u0000abc:", body: JsonText.of({ a: "é" }) }, JsonText.of([])];
    expect(jsonBytes(value).toString("utf8")).toBe(JSON.stringify([decoded, { comment: "\u0000abc:", body: { a: "é" } }, []]));
    expect(jsonBytes(JsonText.of(decoded)).toString("utf8")).toBe(JSON.stringify(decoded));
  });

  it("prints the value itself outside jsonBytes", () => {
    expect(JSON.stringify({ decoded: JsonText.of({ "@type": "excess", query_id: "1" }) })).toBe('{"decoded":{"@type":"excess","query_id":"1"}}');
  });
});

describe("JsonText in the REST encoder's pieces", () => {
  it("joins pre-printed texts, ASCII (as strings) or not (as bytes), between plain text, byte for byte", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.jsonValue())), (parts) => {
        const pieces = new JsonPieces();
        let expected = "";
        for (const [text, value] of parts) {
          const printed = JsonText.of(value);
          pieces.text(text);
          pieces.json(printed);
          expected += text + JSON.stringify(value);
          expect(printed.bytes.equals(Buffer.from(JSON.stringify(value)))).toBe(true);
          expect(printed.value()).toEqual(JSON.parse(JSON.stringify(value)));
        }
        expect(pieces.take().equals(Buffer.from(expected))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("holds an ASCII text as a string and any other as UTF-8 bytes", () => {
    expect(JsonText.of({ "@type": "excess", query_id: "1" }).ascii).toBe('{"@type":"excess","query_id":"1"}');
    const comment = JsonText.of({ comment: "Привет" });
    expect(comment.ascii).toBeUndefined();
    expect(comment.byteLength).toBe(Buffer.byteLength('{"comment":"Привет"}'));
  });
});
