import { Cell, type Slice } from "@ton/core";

// tonlib's reading of a message body for v2's msg_data: a text comment (op 0) or an encrypted comment
// (op 0x2167da4b) is returned as the base64 of its snake-encoded bytes; anything else as the raw body BOC.

export type MessageDataKind =
  | { kind: "text"; text: string }
  | { kind: "encrypted_text"; text: string }
  | { kind: "raw"; body: string; initState: string };

const encryptedCommentOp = 0x2167da4b;

/** `opcode` is the index's opcode column (the body's first 32 bits, signed; NULL for a shorter body). */
export function readMessageData(bodyBoc: string | null, initStateBoc: string | null, opcode: number | null): MessageDataKind {
  const raw: MessageDataKind = { kind: "raw", body: bodyBoc ?? "", initState: initStateBoc ?? "" };
  // Only comments need the body parsed; the opcode column tells them apart without doing so.
  if (bodyBoc === null || opcode === null || (opcode !== 0 && opcode >>> 0 !== encryptedCommentOp)) return raw;
  try {
    const slice = Cell.fromBase64(bodyBoc).beginParse();
    if (slice.remainingBits < 32) return raw;
    const op = slice.loadUint(32);
    if (op !== 0 && op !== encryptedCommentOp) return raw;
    const bytes = snakeBytes(slice);
    if (bytes === undefined) return raw;
    return { kind: op === 0 ? "text" : "encrypted_text", text: bytes.toString("base64") };
  } catch {
    return raw;
  }
}

/** The bytes of a snake string (whole bytes in each cell, continued in its first reference). */
function snakeBytes(first: Slice): Buffer | undefined {
  const parts: Buffer[] = [];
  let slice: Slice | undefined = first;
  while (slice !== undefined) {
    if (slice.remainingBits % 8 !== 0) return undefined;
    parts.push(slice.loadBuffer(slice.remainingBits / 8));
    slice = slice.remainingRefs > 0 ? slice.loadRef().beginParse() : undefined;
  }
  return Buffer.concat(parts);
}
