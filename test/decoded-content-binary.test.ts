import { readdirSync, readFileSync } from "node:fs";
import { clone, create, fromBinary, type JsonObject, type JsonValue, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import { GetTracesResponseSchema } from "../gen/tonquery/v1/service_pb.ts";
import { type Trace, TraceSchema } from "../gen/tonquery/v1/trace_pb.ts";
import { type DecodedContent, DecodedContentSchema, type Message, type MessageBody } from "../gen/tonquery/v1/transaction_pb.ts";
import { MessageBodyDecoder } from "../src/decoding/message-body.ts";
import { encodeDecodedContent } from "../src/present/proto/decoded-content.ts";
import { TracesBinaryWriter } from "../src/present/proto/traces.ts";

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

function body(hash: string, decoded?: DecodedContent): MessageBody {
  return { $typeName: "tonquery.v1.MessageBody", hash, body: `te6${hash}`, decoded };
}

function message(hash: string, messageContent?: MessageBody, initState?: MessageBody): Message {
  return { $typeName: "tonquery.v1.Message", hash, source: "0:AA", createdLt: "12", opcode: 0x0f8a7ea5, messageContent, initState, hashNorm: hash };
}

function sampleTrace(): Trace {
  const transfer = content({ "@type": "jetton_transfer", query_id: "1", amount: "100", forward_payload: { "@type": "either_left", value: [] } });
  const comment = content({ "@type": "text_comment", comment: "gm" }, "gm");
  const withOtherUnknown = body("B5", comment);
  withOtherUnknown.$unknown = [{ no: 9, wireType: WireType.LengthDelimited, data: new Uint8Array([2, 0x68, 0x69]) }];
  return create(TraceSchema, {
    traceId: "T",
    startLt: "10",
    isIncomplete: false,
    actions: [{ traceId: "T", actionId: "A", type: "ton_transfer", details: { source: "0:AA", amount: "5", nested: { list: [1, null] } } }],
    transactions: [
      {
        account: "0:AA",
        hash: "X1",
        lt: "11",
        inMsg: message("M1", body("B1", transfer), body("I1", comment)),
        outMsgs: [message("M2", body("B2", transfer)), message("M3", body("B3")), message("M4")],
      },
      { account: "0:BB", hash: "X2", lt: "12", inMsg: message("M5", body("B4")), outMsgs: [] },
      { account: "0:CC", hash: "X3", lt: "13", inMsg: message("M6", withOtherUnknown), outMsgs: [message("M7", body("B6", comment))] },
    ],
  });
}

describe("TracesBinaryWriter", () => {
  it("writes traces with encoded decoded bodies that read back equal, without touching them", () => {
    const traces = [sampleTrace(), create(TraceSchema, { traceId: "empty" })];
    const before = traces.map((trace) => clone(TraceSchema, trace));
    const decodedBefore = traces[0]?.transactions[0]?.inMsg?.messageContent?.decoded;

    const writer = new TracesBinaryWriter();
    writer.traces(traces);
    const response = writer.end({ addressBook: {}, metadata: {}, nextPageToken: "" });
    const read = fromBinary(GetTracesResponseSchema, toBinary(GetTracesResponseSchema, response));

    expect(read.traces).toEqual(traces);
    expect(traces).toEqual(before);
    expect(traces[0]?.transactions[0]?.inMsg?.messageContent?.decoded).toBe(decodedBefore);
    expect(traces[0]?.transactions[0]?.inMsg?.messageContent?.$unknown).toBeUndefined();
    // Byte for byte what protobuf-es writes for the trace.
    expect(response.$unknown?.map(({ data }) => data)).toEqual(traces.map((trace) => new BinaryWriter().bytes(toBinary(TraceSchema, trace)).finish()));
  });

  it("writes a decoded body from its cached bytes, never reading it through protobuf-es", () => {
    const decoded = content({ "@type": "cached", a: [1, { b: null }] });
    const bytes = encodeDecodedContent(decoded);
    Object.defineProperty(decoded, "data", { get: () => expect.fail("data read again") });
    const writer = new TracesBinaryWriter();
    writer.traces([create(TraceSchema, { traceId: "T", transactions: [{ hash: "X", inMsg: message("M", body("B", decoded)) }] })]);
    const read = fromBinary(GetTracesResponseSchema, toBinary(GetTracesResponseSchema, writer.end({ addressBook: {}, metadata: {}, nextPageToken: "" })));
    expect(toBinary(DecodedContentSchema, read.traces[0]?.transactions[0]?.inMsg?.messageContent?.decoded ?? create(DecodedContentSchema))).toEqual(bytes);
  });

  it("writes every decoded body of the recordings in a trace that reads back equal", () => {
    const messages = recordedContents().map((decoded, i) => message(`M${i}`, body(`B${i}`, decoded)));
    const trace = create(TraceSchema, { traceId: "T", transactions: [{ hash: "X", inMsg: messages[0], outMsgs: messages.slice(1) }] });
    const writer = new TracesBinaryWriter();
    writer.traces([trace]);
    const response = writer.end({ addressBook: {}, metadata: {}, nextPageToken: "" });
    expect(fromBinary(GetTracesResponseSchema, toBinary(GetTracesResponseSchema, response)).traces).toEqual([trace]);
    expect(response.$unknown?.[0]?.data).toEqual(new BinaryWriter().bytes(toBinary(TraceSchema, trace)).finish());
  });
});
