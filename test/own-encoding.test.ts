import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { createMethodSerializationLookup, encodeEnvelope } from "@connectrpc/connect/protocol";
import { describe, expect, it } from "vitest";
import { GetTracesResponseSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { TraceSchema } from "../gen/tonquery/v1/trace_pb.ts";
import { assertSelfEncodingSupported, binaryOf, PageBytes, releaseOwnEncoding, selfEncoded, selfEncodedWithItems } from "../src/encode/proto/own-encoding.ts";

// The binary doors' pages reach connect as messages carrying their own bytes (src/encode/proto/own-encoding.ts), which
// connect, patched (patches/@connectrpc+connect+2.2.0.patch), sends without encoding them again.

const traces = ["trace one", "trace two"].map((traceId) => create(TraceSchema, { traceId, isIncomplete: true }));
/** A trace as the encoders hand it over: its length, then its bytes. */
const delimited = (bytes: Uint8Array) => new BinaryWriter().bytes(bytes).finish();

describe("a self-encoded response", () => {
  it("holds the bytes toBinary writes for the message with its items in the repeated field", () => {
    const fields = { nextPageToken: "next", addressBook: { "0:AB": { userFriendly: "EQ..", domain: "" } } };
    const message = selfEncodedWithItems(GetTracesResponseSchema, fields, GetTracesResponseSchema.field.traces.number, traces.map((t) => delimited(toBinary(TraceSchema, t))));
    const ours = binaryOf(GetTracesResponseSchema, message);
    // The message's fields as toBinary writes them, then the traces as toBinary writes the field alone.
    const head = toBinary(GetTracesResponseSchema, create(GetTracesResponseSchema, fields));
    const tail = toBinary(GetTracesResponseSchema, create(GetTracesResponseSchema, { traces }));
    expect(Buffer.from(ours).equals(Buffer.concat([head, tail]))).toBe(true);
    expect(fromBinary(GetTracesResponseSchema, ours)).toEqual(create(GetTracesResponseSchema, { ...fields, traces }));
  });

  it("is sent by connect as those very bytes, not encoded again", () => {
    assertSelfEncodingSupported(TonQueryService.method.getTraces);
    const message = selfEncodedWithItems(GetTracesResponseSchema, {}, GetTracesResponseSchema.field.traces.number, [delimited(toBinary(TraceSchema, traces[0]!))]);
    const serialization = createMethodSerializationLookup(TonQueryService.method.getTraces, undefined, undefined, { writeMaxBytes: 1 << 20, readMaxBytes: 1 << 20 });
    const sent = serialization.getO(true).serialize(message);
    expect(sent).toBe(binaryOf(GetTracesResponseSchema, message));
    expect(serialization.getO(true).parse(sent).traces).toEqual([traces[0]]);
  });

  it("is framed for gRPC in place: connect writes its envelope into the room left before the bytes, not into a copy", () => {
    const message = selfEncodedWithItems(GetTracesResponseSchema, { nextPageToken: "next" }, GetTracesResponseSchema.field.traces.number, traces.map((t) => delimited(toBinary(TraceSchema, t))));
    const own = binaryOf(GetTracesResponseSchema, message);
    const copy = Uint8Array.from(own);
    const framed = encodeEnvelope(0, own);
    expect(framed.buffer).toBe(own.buffer);
    expect(Buffer.from(framed).equals(Buffer.from(encodeEnvelope(0, copy)))).toBe(true);
    expect(Buffer.from(framed.subarray(5)).equals(Buffer.from(copy))).toBe(true);
  });

  it.each([
    ["a small page, in its first buffer", 3],
    ["a large page, grown past its first buffer into one that grows in place", 300],
  ])("is built in one buffer and framed there: %s", (_name, count) => {
    const parts = Array.from({ length: count }, (_, i) => new Uint8Array(1000 + i).fill(i & 0xff));
    const page = new PageBytes();
    for (const part of parts) page.append(part);
    const bytes = page.finish();
    expect(Buffer.from(bytes).equals(Buffer.concat(parts))).toBe(true);
    expect((bytes.buffer as ArrayBuffer).resizable).toBe(count > 3);
    const framed = encodeEnvelope(0, bytes);
    expect(framed.buffer).toBe(bytes.buffer);
    expect(Buffer.from(framed).equals(Buffer.from(encodeEnvelope(0, Buffer.concat(parts))))).toBe(true);
  });

  /** A page of `count` parts of about 1 KB (each filled with its own byte, `salt` apart from another page's), its parts, and its bytes. */
  function pageOf(count: number, salt = 0) {
    const parts = Array.from({ length: count }, (_, i) => new Uint8Array(1000 + i).fill((i + salt) & 0xff));
    const page = new PageBytes();
    for (const part of parts) page.append(part);
    return { parts, bytes: page.finish() };
  }

  it("gives a sent page's buffer to the next large page, shrunk to 2 MB, and at most four of them; a second release of one page keeps it once", () => {
    // Drain whatever earlier tests of this process left kept.
    const drained = Array.from({ length: 4 }, () => pageOf(300).bytes.buffer);
    const first = pageOf(3000);
    const firstBuffer = first.bytes.buffer as ArrayBuffer;
    expect(firstBuffer.byteLength).toBeGreaterThan(2 * 1024 * 1024);
    const message = selfEncoded({}, first.bytes);
    releaseOwnEncoding(message);
    releaseOwnEncoding(message);
    expect(firstBuffer.byteLength).toBe(2 * 1024 * 1024);

    // The next page past its first buffer is written into it, from its start, and is right.
    const next = pageOf(300, 7);
    expect(next.bytes.buffer).toBe(firstBuffer);
    expect(Buffer.from(next.bytes).equals(Buffer.concat(next.parts))).toBe(true);
    // Released twice, it was kept once: the page after that gets a buffer of its own.
    const after = pageOf(300, 9);
    expect(after.bytes.buffer).not.toBe(firstBuffer);
    expect(Buffer.from(next.bytes).equals(Buffer.concat(next.parts))).toBe(true);

    // Four are kept; a fifth is given back to the kernel at once.
    const pages = Array.from({ length: 5 }, () => pageOf(300));
    for (const page of pages) releaseOwnEncoding(selfEncoded({}, page.bytes));
    expect(pages.map((page) => (page.bytes.buffer as ArrayBuffer).byteLength > 0)).toEqual([true, true, true, true, false]);
    expect(drained).toHaveLength(4);
  });

  it("starts a later small page in a sent small page's buffer, and in the first buffer a large page grew out of; never in another answer's", () => {
    // Drain whatever earlier tests of this process left kept.
    Array.from({ length: 40 }, () => pageOf(3));
    const small = pageOf(3);
    const smallBuffer = small.bytes.buffer as ArrayBuffer;
    expect(smallBuffer.resizable).toBe(false);
    const message = selfEncoded({}, small.bytes);
    releaseOwnEncoding(message);
    releaseOwnEncoding(message);
    // The next small page is written into it from its start, and is right; released twice, it was kept once.
    const next = pageOf(3, 5);
    expect(next.bytes.buffer).toBe(smallBuffer);
    expect(Buffer.from(next.bytes).equals(Buffer.concat(next.parts))).toBe(true);
    expect(pageOf(3).bytes.buffer).not.toBe(smallBuffer);

    // A page that grew past its first buffer left that buffer to the next page at once.
    const started = pageOf(3);
    releaseOwnEncoding(selfEncoded({}, started.bytes));
    const startedBuffer = started.bytes.buffer;
    const large = new PageBytes();
    large.append(new Uint8Array(1000).fill(2));
    large.append(new Uint8Array(40_000).fill(3));
    const largeBytes = large.finish();
    expect((largeBytes.buffer as ArrayBuffer).resizable).toBe(true);
    expect(pageOf(3).bytes.buffer).toBe(startedBuffer);
    expect(Buffer.from(largeBytes).equals(Buffer.concat([new Uint8Array(1000).fill(2), new Uint8Array(40_000).fill(3)]))).toBe(true);

    // Bytes joined for selfEncodedWithItems are that message's alone: released, they start no page.
    const joined = selfEncodedWithItems(GetTracesResponseSchema, {}, GetTracesResponseSchema.field.traces.number, [new Uint8Array(32 * 1024 - 8)]);
    const joinedBuffer = binaryOf(GetTracesResponseSchema, joined).buffer;
    releaseOwnEncoding(joined);
    expect(pageOf(3).bytes.buffer).not.toBe(joinedBuffer);
  });
});
