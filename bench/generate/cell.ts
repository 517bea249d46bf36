import { hash } from "node:crypto";

// Message bodies for the synthetic chain, built fast: the generator writes one or two million of them, too
// many to go through @ton/core. A body here is a single ordinary cell without references (up to 1023 bits),
// which covers every body the generator makes (wallet externals, comments, jetton messages, DEX calls). Its
// representation hash (what body_hash holds) and its bag of cells (what message_contents.body holds) are the
// real ones: the BOC is laid out as ton's std_boc_serialize(cell, WithCRC32C) lays out a one-cell bag, so
// @ton/core and the API's BOC readers parse it and find the same hash.

const maxBits = 1023;

export class CellBuilder {
  private readonly data = new Uint8Array(128);
  private bits = 0;

  reset(): this {
    this.data.fill(0);
    this.bits = 0;
    return this;
  }

  get length(): number {
    return this.bits;
  }

  bit(value: boolean): this {
    if (this.bits + 1 > maxBits) throw new Error("cell overflow");
    if (value) this.data[this.bits >> 3] = (this.data[this.bits >> 3] as number) | (0x80 >> (this.bits & 7));
    this.bits++;
    return this;
  }

  /** An unsigned integer of up to 32 bits (a negative number is written in two's complement). */
  uint(value: number, bits: number): this {
    if (this.bits + bits > maxBits) throw new Error("cell overflow");
    for (let i = bits - 1; i >= 0; i--) {
      if ((value >>> i) & 1) this.data[this.bits >> 3] = (this.data[this.bits >> 3] as number) | (0x80 >> (this.bits & 7));
      this.bits++;
    }
    return this;
  }

  /** An unsigned integer of up to 64 bits given as a safe JS integer. */
  uint64(value: number, bits = 64): this {
    const high = Math.floor(value / 0x100000000);
    const low = value - high * 0x100000000;
    if (bits > 32) this.uint(high, bits - 32);
    return this.uint(low >>> 0, Math.min(bits, 32));
  }

  /** VarUInteger 16 (Grams): 4-bit byte length, then the big-endian bytes. */
  coins(value: number): this {
    let length = 0;
    for (let v = value; v >= 1; v = Math.floor(v / 256)) length++;
    this.uint(length, 4);
    for (let i = length - 1; i >= 0; i--) this.uint(Math.floor(value / 2 ** (8 * i)) % 256, 8);
    return this;
  }

  bytes(bytes: Uint8Array): this {
    if ((this.bits & 7) === 0 && this.bits + bytes.length * 8 <= maxBits) {
      this.data.set(bytes, this.bits >> 3);
      this.bits += bytes.length * 8;
      return this;
    }
    for (const b of bytes) this.uint(b, 8);
    return this;
  }

  /** MsgAddressInt addr_std without anycast: 10 0 workchain:int8 address:bits256. */
  address(workchain: number, account: Uint8Array): this {
    this.uint(0b100, 3);
    this.uint(workchain & 0xff, 8);
    return this.bytes(account);
  }

  /** addr_none. */
  noAddress(): this {
    return this.uint(0, 2);
  }

  /** The finished cell: its representation hash and its one-cell bag of cells (with CRC32C), both base64. */
  finish(): BuiltCell {
    const bits = this.bits;
    const fullBytes = bits >> 3;
    const dataBytes = (bits + 7) >> 3;
    // Cell serialisation: d1 (no refs, ordinary, level 0), d2, the data with its completion tag.
    const cell = Buffer.allocUnsafe(2 + dataBytes);
    cell[0] = 0;
    cell[1] = fullBytes + dataBytes;
    for (let i = 0; i < dataBytes; i++) cell[2 + i] = this.data[i] as number;
    if (dataBytes > fullBytes) cell[1 + dataBytes] = (cell[1 + dataBytes] as number) | (0x80 >> (bits & 7));
    const cellHash = hash("sha256", cell, "base64");

    // One-cell bag: magic, flags (has_crc32c, 1-byte refs), 1-byte offsets, 1 cell, 1 root, 0 absent,
    // total cell bytes, root index 0, the cell, CRC32C (little-endian).
    const boc = Buffer.allocUnsafe(11 + cell.length + 4);
    boc.writeUInt32BE(0xb5ee9c72, 0);
    boc[4] = 0x41;
    boc[5] = 1;
    boc[6] = 1;
    boc[7] = 1;
    boc[8] = 0;
    boc[9] = cell.length;
    boc[10] = 0;
    cell.copy(boc, 11);
    boc.writeUInt32LE(crc32c(boc, 11 + cell.length), 11 + cell.length);
    return { hash: cellHash, boc: boc.toString("base64") };
  }
}

export interface BuiltCell {
  /** Representation hash, standard base64. */
  hash: string;
  /** Bag of cells, standard base64. */
  boc: string;
}

const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli) of the first `length` bytes. */
export function crc32c(bytes: Uint8Array, length = bytes.length): number {
  let crc = 0xffffffff;
  for (let i = 0; i < length; i++) crc = (crcTable[(crc ^ (bytes[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The representation hash of the empty cell: the body_hash of every message without a body. */
export const emptyCell = new CellBuilder().finish();
