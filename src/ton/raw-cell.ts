import { BitString, Cell } from "@ton/core";

// Cells read straight from a bag of cells, for reading message bodies many times per page.
//
// We do not use @ton/core's Cell.fromBoc here: it checks the CRC and computes every cell's SHA-256 hash and
// depth as it builds it, which was over half of the time of decoding a body (measured on the bench index), and a
// decoder needs neither (the bodies come from the index, hashes and all). A RawCell is the cell's data and its
// references, nothing else; `toCoreCell` turns one into a @ton/core Cell where a hash or a bag of cells is needed.

export class RawCell {
  /** The data bits, left-aligned, without the completion tag. */
  readonly data: Uint8Array;
  readonly bitLength: number;
  readonly refs: readonly RawCell[];
  readonly exotic: boolean;

  constructor(data: Uint8Array, bitLength: number, refs: readonly RawCell[], exotic: boolean) {
    this.data = data;
    this.bitLength = bitLength;
    this.refs = refs;
    this.exotic = exotic;
  }

  bit(index: number): boolean {
    return (((this.data[index >> 3] as number) >> (7 - (index & 7))) & 1) === 1;
  }

  /** The unsigned integer of `width` bits (at most 48) at `offset`. */
  uint(offset: number, width: number): number {
    let value = 0;
    let at = offset;
    for (let left = width; left > 0; ) {
      const inByte = at & 7;
      const take = Math.min(8 - inByte, left);
      const bits = ((this.data[at >> 3] as number) >> (8 - inByte - take)) & ((1 << take) - 1);
      value = value * (1 << take) + bits;
      at += take;
      left -= take;
    }
    return value;
  }

  /** The integer of `width` bits at `offset`, of any width, signed or not. */
  bigint(offset: number, width: number, signed: boolean): bigint {
    let value = 0n;
    let at = offset;
    for (let left = width; left > 0; ) {
      const chunk = Math.min(left, 32);
      value = (value << BigInt(chunk)) | BigInt(this.uint(at, chunk));
      at += chunk;
      left -= chunk;
    }
    return signed && width > 0 && this.bit(offset) ? value - (1n << BigInt(width)) : value;
  }

  /** `width` bits at `offset` as uppercase hex, TON's way: a length not a multiple of 4 is completed with 1 then 0s and marked "_". */
  hex(offset: number, width: number): string {
    // A byte at a time through a table: addresses (256 bits at any offset) are most of what is printed.
    let out = "";
    const bytes = width >> 3;
    const shift = offset & 7;
    const first = offset >> 3;
    const data = this.data;
    for (let i = 0; i < bytes; i++) {
      const high = (data[first + i] as number) << shift;
      const low = shift === 0 ? 0 : (data[first + i + 1] ?? 0) >> (8 - shift);
      out += hexBytes[(high | low) & 0xff];
    }
    let at = offset + bytes * 8;
    let left = width - bytes * 8;
    if (left >= 4) {
      out += hexDigits[this.uint(at, 4)];
      at += 4;
      left -= 4;
    }
    if (left === 0) return out;
    const nibble = (this.uint(at, left) << (4 - left)) | (1 << (3 - left));
    return `${out}${hexDigits[nibble]}_`;
  }
}

const hexDigits = "0123456789ABCDEF";
const hexBytes = Array.from({ length: 256 }, (_, byte) => `${hexDigits[byte >> 4]}${hexDigits[byte & 15]}`);

const bocMagic = 0xb5ee9c72;

function readSize(bytes: Uint8Array, at: number, size: number): number {
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + (bytes[at + i] as number);
  return value;
}

/** The root cell of a bag of cells, or undefined if the bytes are not one. Only the standard layout (b5ee9c72). */
export function parseRawBoc(bytes: Uint8Array): RawCell | undefined {
  if (bytes.length < 6 || readSize(bytes, 0, 4) !== bocMagic) return undefined;
  const flags = bytes[4] as number;
  const hasIndex = (flags & 0x80) !== 0;
  const crcBytes = (flags & 0x40) !== 0 ? 4 : 0;
  const size = flags & 0x07;
  const offBytes = bytes[5] as number;
  if (size < 1 || size > 4 || offBytes < 1 || offBytes > 8) return undefined;
  let at = 6;
  const header = (n: number) => {
    const value = readSize(bytes, at, n);
    at += n;
    return value;
  };
  if (bytes.length < at + 3 * size + offBytes) return undefined;
  const cellCount = header(size);
  const rootCount = header(size);
  header(size); // absent cells
  const totalSize = header(offBytes);
  if (rootCount < 1 || cellCount < 1 || cellCount > bytes.length) return undefined;
  const root = header(size);
  at += (rootCount - 1) * size;
  if (hasIndex) at += cellCount * offBytes;
  const end = at + totalSize;
  // The checksum is not verified (the bags come from the index), but a bag cut short is refused.
  if (end + crcBytes > bytes.length) return undefined;

  const raw: { data: Uint8Array; bitLength: number; refs: number[]; exotic: boolean }[] = [];
  for (let i = 0; i < cellCount; i++) {
    if (at + 2 > end) return undefined;
    const d1 = bytes[at++] as number;
    const d2 = bytes[at++] as number;
    const refCount = d1 & 7;
    const exotic = (d1 & 8) !== 0;
    if (refCount > 4) return undefined;
    if ((d1 & 16) !== 0) {
      // Stored hashes and depths: one of each per level present in the level mask, plus the base one.
      const levelMask = d1 >> 5;
      const levels = 1 + ((levelMask & 1) + ((levelMask >> 1) & 1) + ((levelMask >> 2) & 1));
      at += levels * (32 + 2);
    }
    const byteLength = (d2 + 1) >> 1;
    if (at + byteLength + refCount * size > end) return undefined;
    const data = bytes.subarray(at, at + byteLength);
    at += byteLength;
    let bitLength = byteLength * 8;
    if (d2 % 2 === 1) {
      // The last byte ends with a completion tag: a 1 bit, then zeros.
      const last = data[byteLength - 1] as number;
      if (last === 0) return undefined;
      bitLength -= 1 + Math.log2(last & -last);
    }
    const refs: number[] = [];
    for (let r = 0; r < refCount; r++) {
      const index = header(size);
      if (index <= i || index >= cellCount) return undefined;
      refs.push(index);
    }
    raw.push({ data, bitLength, refs, exotic });
  }
  if (root >= cellCount) return undefined;
  const cells: RawCell[] = new Array(cellCount);
  for (let i = cellCount - 1; i >= 0; i--) {
    const { data, bitLength, refs, exotic } = raw[i] as (typeof raw)[number];
    cells[i] = new RawCell(data, bitLength, refs.map((index) => cells[index] as RawCell), exotic);
  }
  return cells[root];
}

/** The cell made of `cell`'s bits from `bit` on and references from `ref` on. */
export function restOfRawCell(cell: RawCell, bit: number, ref: number): RawCell {
  if (bit === 0 && ref === 0) return cell;
  const bitLength = cell.bitLength - bit;
  const data = new Uint8Array((bitLength + 7) >> 3);
  const shift = bit & 7;
  const first = bit >> 3;
  const source = cell.data;
  for (let i = 0; i < data.length; i++) {
    const high = (source[first + i] as number) << shift;
    const low = shift === 0 ? 0 : (source[first + i + 1] ?? 0) >> (8 - shift);
    data[i] = (high | low) & 0xff;
  }
  // Bits past the end stay zero, as a cell's padding is.
  if (bitLength & 7) data[data.length - 1] = (data[data.length - 1] as number) & (0xff << (8 - (bitLength & 7)));
  return new RawCell(data, bitLength, cell.refs.slice(ref), false);
}

/** A @ton/core Cell with the same content, for its hash or its bag of cells. */
export function toCoreCell(cell: RawCell): Cell {
  return new Cell({
    exotic: cell.exotic,
    bits: new BitString(Buffer.from(cell.data.buffer, cell.data.byteOffset, cell.data.byteLength), 0, cell.bitLength),
    refs: cell.refs.map(toCoreCell),
  });
}

/** A RawCell with the same content as a @ton/core Cell. */
export function fromCoreCell(cell: Cell): RawCell {
  const bytes = Buffer.alloc((cell.bits.length + 7) >> 3);
  for (let i = 0; i < cell.bits.length; i++) if (cell.bits.at(i)) bytes[i >> 3] = (bytes[i >> 3] as number) | (0x80 >> (i & 7));
  return new RawCell(bytes, cell.bits.length, cell.refs.map(fromCoreCell), cell.isExotic);
}

/**
 * The bag of cells (tonlib's layout, no CRC) of an ordinary cell without references, written directly: most cells
 * a decoded body prints whole are such remainders, and going through toCoreCell would hash them for nothing.
 * Undefined for any other cell (serializeBoc handles those).
 */
export function leafBagOfCells(cell: RawCell): Buffer | undefined {
  if (cell.refs.length > 0 || cell.exotic) return undefined;
  const fullBytes = cell.bitLength >> 3;
  const dataBytes = (cell.bitLength + 7) >> 3;
  const out = Buffer.alloc(11 + 2 + dataBytes);
  out.writeUInt32BE(bocMagic, 0);
  // Index size 1, offset size 1; one cell, one root, none absent; the cells' size; the root is cell 0.
  out.set([1, 1, 1, 1, 0, 2 + dataBytes, 0, 0, fullBytes + dataBytes], 4);
  out.set(cell.data.subarray(0, dataBytes), 13);
  if (dataBytes > fullBytes) {
    const rest = cell.bitLength & 7;
    out[12 + dataBytes] = ((out[12 + dataBytes] as number) & (0xff << (8 - rest))) | (0x80 >> rest);
  }
  return out;
}
