import { Cell } from "@ton/core";

/**
 * The text of a message body that is a text comment (32 zero bits, then a snake-encoded string), or
 * undefined for any other body, including one that is not a valid bag of cells.
 */
export function decodeTextComment(bodyBoc: string): string | undefined {
  try {
    const slice = Cell.fromBase64(bodyBoc).beginParse();
    if (slice.remainingBits < 32 || slice.loadUint(32) !== 0) return undefined;
    return slice.loadStringTail();
  } catch {
    return undefined;
  }
}
