import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { DecodedContent } from "../../../gen/tonquery/v1/transaction_pb.ts";
import { type ProtoWriter, ReusedWriter } from "./writer.ts";

/*
 * DecodedContent written by hand. Its `data` is a google.protobuf.Struct, which protobuf-es keeps as a plain
 * JsonObject and, on every toBinary, first converts into Struct, Value and ListValue messages, one object per JSON
 * value: about 10 µs for an average decoded body (350 bytes), as much as decoding the body. The bytes are the ones
 * toBinary writes (fields in number order, map entries in Object.keys order, an empty type left out, empty structs
 * and lists kept), and since the decoding layer shares one immutable DecodedContent per body, they are computed
 * once per object. writeStruct writes the actions' Structs the same way (see traces.ts).
 */

const delimited = new WeakMap<DecodedContent, Uint8Array>();
// One writer for every content: its buffer is kept from one content to the next.
const shared = new ReusedWriter();

/** The bytes of the DecodedContent message, as `toBinary(DecodedContentSchema, content)` writes them. */
export function encodeDecodedContent(content: DecodedContent): Uint8Array {
  const bytes = delimitedDecodedContent(content);
  let prefix = 0;
  while (bytes[prefix]! >= 0x80) prefix++;
  return bytes.subarray(prefix + 1);
}

/** The message preceded by its length: the value of a length-delimited field, as a trace carries it. */
export function delimitedDecodedContent(content: DecodedContent): Uint8Array {
  let bytes = delimited.get(content);
  if (bytes === undefined) {
    // Started over each time: a content too deep to write (its stack overflowed) leaves the writer half-written.
    const writer = shared.begin();
    writer.forkBare();
    if (content.type !== "") writer.string(1, content.type);
    if (content.comment !== undefined) writer.string(2, content.comment);
    if (content.data !== undefined) {
      writer.fork(3);
      writeStruct(writer, content.data);
      writer.join();
    }
    writer.join();
    bytes = writer.finish();
    shared.end();
    delimited.set(content, bytes);
  }
  return bytes;
}

/** The fields of a google.protobuf.Struct holding `object`, as protobuf-es writes a JsonObject field. */
export function writeStruct(writer: ProtoWriter, object: JsonObject): void {
  for (const key of Object.keys(object)) {
    writer.fork(1);
    writer.string(1, key);
    writer.fork(2);
    writeValue(writer, object[key]);
    writer.join();
    writer.join();
  }
}

// A value that is no JSON (undefined, a bigint) is an empty Value, as protobuf-es writes it.
function writeValue(writer: ProtoWriter, value: JsonValue | undefined): void {
  switch (typeof value) {
    case "number":
      writer.double(2, value);
      return;
    case "string":
      writer.string(3, value);
      return;
    case "boolean":
      writer.bool(4, value);
      return;
    case "object":
      if (value === null) writer.int32(1, 0);
      else if (Array.isArray(value)) {
        writer.fork(6);
        for (const item of value) {
          writer.fork(1);
          writeValue(writer, item);
          writer.join();
        }
        writer.join();
      } else {
        writer.fork(5);
        writeStruct(writer, value);
        writer.join();
      }
      return;
    default:
      return;
  }
}
