import { Cell, type Slice } from "@ton/core";
import { decodeTextComment } from "../ton/comment.ts";

// toncenter's ParseCommentFromPayload (ton-index-go index/parse/tlb.go), used for the comment of NFT transfers:
// the forward payload BOC either is a text comment (op 0), an encrypted comment (op 0x2167da4b, returned as the
// base64 of its bytes), something else (no comment, not encrypted), or not a BOC at all (the caller then leaves
// both fields unset).

export type PayloadComment =
  | { ok: true; comment: string | null; encrypted: boolean }
  /** The payload is not base64 or not a bag of cells. */
  | { ok: false };

const encryptedCommentOp = 0x2167da4b;
const strictBase64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Bytes of a snake-encoded tail, as tonutils-go's LoadBinarySnake: a partial last byte is padded with zeros. */
function loadBinarySnake(start: Slice): Buffer | undefined {
  const chunks: Buffer[] = [];
  let slice: Slice | undefined = start;
  while (slice !== undefined) {
    const bits = slice.remainingBits;
    const bytes = Buffer.alloc(Math.ceil(bits / 8));
    for (let i = 0; i < Math.floor(bits / 8); i++) bytes[i] = slice.loadUint(8);
    const rest = bits % 8;
    if (rest > 0) bytes[bytes.length - 1] = slice.loadUint(rest) << (8 - rest);
    chunks.push(bytes);
    if (slice.remainingRefs > 1) return undefined;
    slice = slice.remainingRefs === 1 ? slice.loadRef().beginParse() : undefined;
  }
  return Buffer.concat(chunks);
}

export function parseCommentFromPayload(payload: string): PayloadComment {
  if (payload === "") return { ok: true, comment: null, encrypted: false };
  if (!strictBase64.test(payload)) return { ok: false };
  let root: Cell | undefined;
  try {
    root = Cell.fromBoc(Buffer.from(payload, "base64"))[0];
  } catch {
    return { ok: false };
  }
  if (root === undefined) return { ok: false };
  const slice = root.beginParse();
  if (slice.remainingBits < 32) return { ok: true, comment: null, encrypted: false };
  const op = slice.loadUint(32);
  if (op === 0) {
    const text = decodeTextComment(payload);
    return { ok: true, comment: text ?? null, encrypted: false };
  }
  if (op === encryptedCommentOp) {
    const bytes = loadBinarySnake(slice);
    return bytes === undefined ? { ok: true, comment: null, encrypted: false } : { ok: true, comment: bytes.toString("base64"), encrypted: true };
  }
  return { ok: true, comment: null, encrypted: false };
}
