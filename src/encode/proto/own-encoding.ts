import { create, type DescMessage, type DescMethodUnary, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createMethodSerializationLookup } from "@connectrpc/connect/protocol";
import { lengthDelimited, ProtoWriter, ReusedWriter } from "./writer.ts";

// A response message that carries its own protobuf binary: a page the encoders of this folder wrote straight from the
// rows. connect serialises a unary response with toBinary, which copied such a page twice more (into a writer that
// grows by doubling, then out of it): for the bench's cold 1000-trace page, 14.6 MB, 31 MB of growing buffers and
// a 14.6 MB copy on top of the page itself, before connect's own envelope. connect has no hook for bytes already
// encoded, so patches/@connectrpc+connect+2.2.0.patch adds one: its binary serialisation sends the bytes found
// under this key as they are. They are what toBinary prints for the message the page describes; the encoders'
// tests hold the two equal.

/** Where connect's patched binary serialisation looks for a message's own bytes (a registered symbol: one key for both). */
const ownEncoding = Symbol.for("tonquery.ownEncoding");

/**
 * Marks bytes that have room for gRPC's envelope (a flags byte and the length) in the 5 bytes of their buffer before
 * them: the patched connect writes the envelope there, where it would copy the message into a buffer 5 bytes longer
 * (the cold account's 1000-trace page: 14.6 MB more held, and copied, per answer over gRPC and gRPC-web).
 */
const envelopeRoom = Symbol.for("tonquery.envelopeRoom");
const envelopeHeaderBytes = 5;

/** The `length` bytes of `buffer` after its first 5, marked as having the envelope's room (see envelopeRoom). */
function afterEnvelopeRoom(buffer: ArrayBuffer, length: number): Uint8Array {
  const bytes = new Uint8Array(buffer, envelopeHeaderBytes, length);
  (bytes as { [envelopeRoom]?: boolean })[envelopeRoom] = true;
  return bytes;
}

/**
 * Address space reserved for one page's bytes (committed only as they are written). The bench's largest pages are
 * 15-30 MB; a page of a gigabyte is refused rather than held (gRPC cannot frame one of 4 GiB at all), and 47 bits of
 * address space hold over a hundred thousand such reservations at once.
 */
const maxPageBytes = 2 ** 30;

/**
 * What a page starts in: an ordinary buffer, which the allocator serves from memory it already has. A resizable
 * buffer reserves its address space from the kernel and faults its pages in, and gives them back when collected:
 * 50-65 us of CPU per answer, most of it in the kernel, for an adjacentTransactions answer of a few KB (6-9 us in an
 * ordinary one), where the answer's whole server CPU is 1.5 ms.
 */
const firstBufferBytes = 32 * 1024;

/**
 * First buffers of pages the transport is done with (see releaseOwnEncoding), or that grew out of them: a fresh one
 * cost the binary doors 50 us of CPU per adjacentTransactions answer under load (profiled at concurrency 16, where
 * the whole answer's server CPU was 1.8 ms), its 32 KB zeroed by the allocator and counted as external memory that
 * hastens the collector; one kept costs nothing. Enough for the answers in flight at once; each holds 32 KB.
 */
const spareFirstBuffers: ArrayBuffer[] = [];
const maxSpareFirstBuffers = 32;
/** The first buffers pages started in: no other answer's bytes (selfEncodedWithItems's, say) are ever kept. */
const firstBuffers = new WeakSet<ArrayBuffer>();

function newFirstBuffer(): ArrayBuffer {
  const buffer = new ArrayBuffer(firstBufferBytes);
  firstBuffers.add(buffer);
  return buffer;
}

function keepFirstBuffer(buffer: ArrayBuffer): void {
  if (spareFirstBuffers.length < maxSpareFirstBuffers && firstBuffers.has(buffer) && !spareFirstBuffers.includes(buffer)) spareFirstBuffers.push(buffer);
}

/**
 * Resizable buffers of pages the transport is done with, kept for the next pages (see releaseOwnEncoding). A fresh
 * one costs its pages' faults, and reserving and giving back its address space: 3.2-3.5 ms of CPU, half of it in the
 * kernel, for the 0.86 MB of a hot-account page of 100 traces, a sixth of what the binary doors spent on it beyond
 * reading its rows (bench/page-cost.ts), against nothing for one already committed. At most `maxSparePages`, each
 * shrunk to `spareBytes` (what a 100-trace page needs), so that what is kept stays a few MB.
 */
const sparePages: ArrayBuffer[] = [];
const maxSparePages = 4;
const spareBytes = 2 * 1024 * 1024;

/**
 * A binary page's bytes as they are written, with room for the envelope in front: a small page in an ordinary
 * buffer; past that, on one resizable buffer that grows in place (V8 reserves its address space and commits what is
 * written), a spare one when there is one, the first buffer's bytes copied into it once. The page is never copied
 * again nor joined from pieces: a cold 1000-trace page was 14.6 MB of traces held one by one, then a second 14.6 MB
 * while they were joined.
 */
export class PageBytes {
  #buffer = spareFirstBuffers.pop() ?? newFirstBuffer();
  #length = envelopeHeaderBytes;

  append(bytes: Uint8Array): void {
    const end = this.#length + bytes.length;
    if (end > this.#buffer.byteLength) this.#grow(end);
    new Uint8Array(this.#buffer, this.#length, bytes.length).set(bytes);
    this.#length = end;
  }

  #grow(end: number): void {
    if (end > maxPageBytes) throw new ConnectError(`the answer would be over ${maxPageBytes} bytes: ask for a smaller page`, Code.ResourceExhausted);
    const capacity = Math.min(maxPageBytes, Math.max(end, this.#buffer.byteLength * 2));
    if (this.#buffer.resizable) {
      this.#buffer.resize(capacity);
      return;
    }
    const grown = sparePages.pop() ?? new ArrayBuffer(capacity, { maxByteLength: maxPageBytes });
    if (grown.byteLength < capacity) grown.resize(capacity);
    new Uint8Array(grown).set(new Uint8Array(this.#buffer, 0, this.#length));
    keepFirstBuffer(this.#buffer);
    this.#buffer = grown;
  }

  /**
   * Each item, written by `write` with `context`, as an occurrence of the page's message field `field`, through one
   * writer. `write` is best a module function: a closure made per page is optimised again for each page under load.
   */
  appendOccurrences<T, C>(field: number, items: Iterable<T>, write: (w: ProtoWriter, item: T, context: C) => void, context: C): void {
    for (const item of items) {
      const w = occurrences.begin();
      w.fork(field);
      write(w, item, context);
      w.join();
      this.append(w.view());
      occurrences.end();
    }
  }

  /** The page's bytes as a message's own (see ownEncoding), with the envelope's room before them. */
  finish(): Uint8Array {
    return afterEnvelopeRoom(this.#buffer, this.#length - envelopeHeaderBytes);
  }
}

/** The writer every page's items are written with, one at a time (see appendOccurrences). */
const occurrences = new ReusedWriter();

type SelfEncoded = { [ownEncoding]?: Uint8Array };

/** `message`, its binary now `bytes`: the wire gets those, and nothing else of the object. */
export function selfEncoded<M extends object>(message: M, bytes: Uint8Array): M {
  (message as SelfEncoded)[ownEncoding] = bytes;
  return message;
}

/**
 * Gives the memory of `message`'s own bytes back, once the transport has taken all of them (see
 * AnswerDelivery.written): a page's resizable buffer is kept for the next page, shrunk to `spareBytes`, or, with
 * enough kept, shrunk to nothing, which returns its pages to the kernel at once. V8 does not count a resizable
 * buffer's memory as external, so nothing hurried the collector to a dead one: sent pages of megabytes stayed
 * committed until an unrelated full collection, and the binary doors' runs of the bench's cold 1000-trace page
 * peaked about 20 MB above REST's. A small answer's ordinary buffer starts a later page (see spareFirstBuffers).
 */
export function releaseOwnEncoding(message: object): void {
  const buffer = (message as SelfEncoded)[ownEncoding]?.buffer;
  if (!(buffer instanceof ArrayBuffer)) return;
  if (!buffer.resizable) {
    keepFirstBuffer(buffer);
    return;
  }
  if (sparePages.includes(buffer)) return;
  if (sparePages.length < maxSparePages) {
    if (buffer.byteLength > spareBytes) buffer.resize(spareBytes);
    sparePages.push(buffer);
  } else buffer.resize(0);
}

/** The bytes the RPC doors send for `message`: its own, or toBinary's. */
export function binaryOf<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Uint8Array {
  return (message as SelfEncoded)[ownEncoding] ?? toBinary(schema, message);
}

/**
 * Fails at start-up when connect would encode a self-encoded message again rather than send its bytes (the patch
 * not applied: `npm ci` runs patch-package), which would answer every binary page without its rows.
 */
export function assertSelfEncodingSupported(method: DescMethodUnary): void {
  const marker = new Uint8Array([0x0a, 0x00]);
  const serialization = createMethodSerializationLookup(method, undefined, undefined, { writeMaxBytes: 0xffffffff, readMaxBytes: 0xffffffff });
  if (serialization.getO(true).serialize(selfEncoded(create(method.output), marker)) !== marker) {
    throw new Error("@connectrpc/connect is not patched (patches/@connectrpc+connect+2.2.0.patch): run npm ci");
  }
}

/**
 * A message of `schema` with `fields`, and the already-encoded items of its repeated message field `no` (each its
 * length, then its bytes): its bytes are toBinary's of `fields`, then each item with the field's tag, which is how
 * toBinary writes a field it carries as unknown fields, after the known ones. Each item is copied once, into the
 * answer.
 */
export function selfEncodedWithItems<Desc extends DescMessage>(schema: Desc, fields: MessageInitShape<Desc>, no: number, items: readonly Uint8Array[]): MessageShape<Desc> {
  const tag = new ProtoWriter(16);
  tag.tag(no, lengthDelimited);
  const tagBytes = tag.finish();
  const message = create(schema, fields);
  const parts: Uint8Array[] = [toBinary(schema, message)];
  for (const item of items) parts.push(tagBytes, item);
  // Joined at their exact length: a page of megabytes through a writer that grows would be copied as it grew.
  return selfEncoded(message, joinBytes(parts));
}

/** Concatenation of `parts` into one buffer of exactly their length (with room for the envelope). */
function joinBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  // Nothing else uses the room before the bytes.
  const out = afterEnvelopeRoom(new ArrayBuffer(envelopeHeaderBytes + length), length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
