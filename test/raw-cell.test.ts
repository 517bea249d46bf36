import { beginCell, Cell } from "@ton/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { serializeBoc } from "../src/ton/boc.ts";
import { fromCoreCell, leafBagOfCells, parseRawBoc, restOfRawCell, toCoreCell } from "../src/ton/raw-cell.ts";

/** A small tree of cells with any bit lengths (completion tags included), from fast-check's bytes. */
const cellTree = fc
  .array(fc.tuple(fc.uint8Array({ maxLength: 127 }), fc.nat(7), fc.nat(2)), { minLength: 1, maxLength: 6 })
  .map((parts) => {
    const built: Cell[] = [];
    for (const [bytes, dropBits, refs] of parts) {
      const bits = Math.max(0, bytes.length * 8 - dropBits);
      const builder = beginCell().storeBits(beginCell().storeBuffer(Buffer.from(bytes)).endCell().bits.substring(0, bits));
      for (const ref of refs === 0 ? [] : built.slice(-refs)) builder.storeRef(ref);
      built.push(builder.endCell());
    }
    return built[built.length - 1] as Cell;
  });

describe("RawCell", () => {
  it("reads every layout of bag of cells into the same cells, bit for bit", () => {
    fc.assert(
      fc.property(cellTree, fc.boolean(), fc.boolean(), (cell, idx, crc32) => {
        const raw = parseRawBoc(cell.toBoc({ idx, crc32 }));
        expect(raw).toBeDefined();
        expect(toCoreCell(raw!).hash().toString("hex")).toBe(cell.hash().toString("hex"));
        expect(serializeBoc(toCoreCell(raw!))).toEqual(serializeBoc(cell));
      }),
      { numRuns: 200 },
    );
  });

  it("reads integers, bits and the rest of a cell at any offset", () => {
    const cell = beginCell().storeUint(5, 3).storeInt(-7, 9).storeUint(0xabcdef, 24).storeUint(2n ** 70n + 3n, 72).storeBits(beginCell().storeUint(0b101, 3).endCell().bits).endCell();
    const raw = fromCoreCell(cell);
    expect(raw.uint(0, 3)).toBe(5);
    expect(raw.bigint(3, 9, true)).toBe(-7n);
    expect(raw.hex(12, 24)).toBe("ABCDEF");
    expect(raw.bigint(36, 72, false)).toBe(2n ** 70n + 3n);
    // TON's notation for a bit string whose length is not a multiple of 4: completed with 1 then 0s, marked "_".
    expect(raw.hex(108, 3)).toBe(cell.bits.substring(108, 3).toString());
    expect(toCoreCell(restOfRawCell(raw, 12, 0)).bits.toString()).toBe(cell.bits.substring(12, cell.bits.length - 12).toString());
  });

  it("reads bit strings and cell remainders at every offset as @ton/core does", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 127 }), fc.nat(1015), fc.nat(1015), (bytes, a, b) => {
        const cell = beginCell().storeBuffer(Buffer.from(bytes)).endCell();
        const raw = parseRawBoc(cell.toBoc())!;
        const offset = Math.min(a, raw.bitLength);
        const width = Math.min(b, raw.bitLength - offset);
        const bits = cell.bits.substring(offset, width);
        expect(raw.hex(offset, width)).toBe(width === 0 ? "" : bits.toString());
        const rest = restOfRawCell(raw, offset, 0);
        expect(toCoreCell(rest).bits.toString()).toBe(cell.bits.substring(offset, raw.bitLength - offset).toString());
      }),
      { numRuns: 300 },
    );
  });

  it("writes a leaf cell's bag of cells as the general writer does, and leaves other cells to it", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 127 }), fc.nat(1016), (bytes, cut) => {
        const cell = beginCell().storeBuffer(Buffer.from(bytes)).endCell();
        const raw = restOfRawCell(parseRawBoc(cell.toBoc())!, Math.min(cut, cell.bits.length), 0);
        expect(leafBagOfCells(raw)).toEqual(serializeBoc(toCoreCell(raw), { crc32c: false }));
      }),
      { numRuns: 300 },
    );
    const parent = parseRawBoc(beginCell().storeRef(beginCell().endCell()).endCell().toBoc())!;
    expect(leafBagOfCells(parent)).toBeUndefined();
  });

  it("refuses what is not a bag of cells, without throwing", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        parseRawBoc(bytes);
      }),
    );
    expect(parseRawBoc(Buffer.from("not a boc"))).toBeUndefined();
    const boc = beginCell().storeUint(1, 32).storeRef(beginCell().storeUint(2, 8)).endCell().toBoc();
    expect(parseRawBoc(boc.subarray(0, boc.length - 3))).toBeUndefined();
  });
});
