import { type Cell, crc32c } from "@ton/core";

// Bag-of-cells writer with the exact byte layout of the TON node's `std_boc_serialize(root, mode)`
// (ton-blockchain/ton crypto/vm/boc.cpp, BagOfCells::import_cells + reorder_cells + revisit + serialize_to_impl),
// which is what tonlib (toncenter v2 `data`, `msg_data.body`) and ton-index-worker (`message_contents.body`) emit.
// @ton/core's toBoc gives the same cells, hence the same hashes, but often in another order, so the bytes differ.
//
// Only the modes those producers use are supported: no index, no cache bits, no stored hashes, one root, with or
// without the CRC32C trailer.

const bocMagic = 0xb5ee9c72;
/** BagOfCells::max_cell_whs: the weight budget of a cell with its whole subtree. */
const maxCellWeight = 64;
/** BagOfCells::max_depth. */
const maxDepth = 1024;

interface CellInfo {
  cell: Cell;
  /** Children as indices into the import list, then (once the cell is visited) into the output order. */
  refs: number[];
  /** Subtree weight, capped at 255; 0 after reordering marks a "special" (heavy) cell that is visited early. */
  wt: number;
  /** -1 fresh, -2 previsited, -3 visited, >= 0 the allocated position. */
  newIdx: number;
}

export interface BocOptions {
  /** Append the CRC32C trailer (Mode::WithCRC32C). Default true, as tonlib and the indexer write it. */
  crc32c?: boolean;
}

/** Serialises `root` byte for byte as `vm::std_boc_serialize(root, WithCRC32C)` does (or without CRC32C). */
export function serializeBoc(root: Cell, options: BocOptions = {}): Buffer {
  const withCrc = options.crc32c ?? true;
  const list: CellInfo[] = [];
  const byHash = new Map<string, number>();
  let internalRefs = 0;
  let cellBytes = 0;

  // import_cell: children first (post-order), one entry per distinct representation hash.
  const importCell = (cell: Cell, depth: number): number => {
    if (depth > maxDepth) throw new Error("cell depth too large for a bag of cells");
    const key = cell.hash().toString("latin1");
    const known = byHash.get(key);
    if (known !== undefined) return known;
    const refs: number[] = [];
    let weight = 1;
    for (const child of cell.refs) {
      const index = importCell(child, depth + 1);
      refs.push(index);
      weight += (list[index] as CellInfo).wt;
      internalRefs++;
    }
    byHash.set(key, list.length);
    list.push({ cell, refs, wt: Math.min(0xff, weight), newIdx: -1 });
    cellBytes += 2 + Math.ceil(cell.bits.length / 8);
    return list.length - 1;
  };
  const rootIndex = importCell(root, 0);
  const count = list.length;

  // reorder_cells, first pass (parents before children): share the weight budget among the children.
  for (let i = count - 1; i >= 0; i--) {
    const info = list[i] as CellInfo;
    const s = info.refs.length;
    let c = s;
    let sum = maxCellWeight - 1;
    let mask = 0;
    for (let j = 0; j < s; j++) {
      const child = list[info.refs[j] as number] as CellInfo;
      const limit = Math.floor((maxCellWeight - 1 + j) / s);
      if (child.wt <= limit) {
        sum -= child.wt;
        c--;
        mask |= 1 << j;
      }
    }
    if (c > 0) {
      for (let j = 0; j < s; j++) {
        if (mask & (1 << j)) continue;
        const child = list[info.refs[j] as number] as CellInfo;
        const limit = Math.floor(sum / c);
        sum++;
        if (child.wt > limit) child.wt = limit;
      }
    }
  }
  // Second pass (children before parents): a cell whose subtree no longer fits its weight becomes special (0).
  for (const info of list) {
    let sum = 1;
    for (const ref of info.refs) sum += (list[ref] as CellInfo).wt;
    info.wt = sum <= info.wt ? sum : 0;
  }

  // revisit: force 0 previsits (visiting special cells on the way), 1 visits (allocating all children, last child
  // first), 2 allocates. The output is the allocation order reversed, so the root comes first.
  const order: CellInfo[] = [];
  const revisit = (index: number, force: 0 | 1 | 2): number => {
    const info = list[index] as CellInfo;
    if (info.newIdx >= 0) return info.newIdx;
    if (force === 0) {
      if (info.newIdx !== -1) return info.newIdx;
      for (let j = info.refs.length - 1; j >= 0; j--) {
        const child = info.refs[j] as number;
        revisit(child, (list[child] as CellInfo).wt === 0 ? 1 : 0);
      }
      return (info.newIdx = -2);
    }
    if (force === 2) {
      info.newIdx = order.length;
      order.push(info);
      return info.newIdx;
    }
    if (info.newIdx === -3) return -3;
    if (info.wt === 0) revisit(index, 0);
    for (let j = info.refs.length - 1; j >= 0; j--) revisit(info.refs[j] as number, 1);
    for (let j = info.refs.length - 1; j >= 0; j--) info.refs[j] = revisit(info.refs[j] as number, 2);
    return (info.newIdx = -3);
  };
  revisit(rootIndex, 0);
  revisit(rootIndex, 1);
  const rootNewIndex = revisit(rootIndex, 2);

  // compute_sizes: the smallest byte widths for cell indices and for offsets.
  let refSize = 0;
  while (count >= 2 ** (refSize * 8)) refSize++;
  const dataSize = cellBytes + internalRefs * refSize;
  let offsetSize = 0;
  while (dataSize >= 2 ** (offsetSize * 8)) offsetSize++;
  if (refSize > 4 || offsetSize > 8) throw new Error("bag of cells too large");

  const headerSize = 4 + 1 + 1 + 3 * refSize + offsetSize + refSize;
  const out = Buffer.alloc(headerSize + dataSize + (withCrc ? 4 : 0));
  let pos = 0;
  const writeUint = (value: number, bytes: number) => {
    for (let b = bytes - 1; b >= 0; b--) out[pos + bytes - 1 - b] = Math.floor(value / 2 ** (b * 8)) & 0xff;
    pos += bytes;
  };
  writeUint(bocMagic, 4);
  writeUint((withCrc ? 0x40 : 0) | refSize, 1);
  writeUint(offsetSize, 1);
  writeUint(count, refSize);
  writeUint(1, refSize);
  writeUint(0, refSize);
  writeUint(dataSize, offsetSize);
  writeUint(count - 1 - rootNewIndex, refSize);
  for (let i = 0; i < count; i++) {
    const info = order[count - 1 - i] as CellInfo;
    pos += writeCellData(info.cell, out, pos);
    for (const ref of info.refs) writeUint(count - 1 - ref, refSize);
  }
  if (withCrc) {
    crc32c(out.subarray(0, pos)).copy(out, pos);
    pos += 4;
  }
  if (pos !== out.length) throw new Error("bag of cells size mismatch");
  return out;
}

/** serializeBoc as base64, the form the index and toncenter carry BOCs in. */
export function serializeBocBase64(root: Cell, options?: BocOptions): string {
  return serializeBoc(root, options).toString("base64");
}

/** d1, d2, then the data bits with the completion tag when they do not fill the last byte. Returns bytes written. */
function writeCellData(cell: Cell, out: Buffer, pos: number): number {
  const bits = cell.bits;
  const length = bits.length;
  const fullBytes = length >> 3;
  const dataBytes = Math.ceil(length / 8);
  out[pos] = cell.refs.length + (cell.isExotic ? 8 : 0) + cell.mask.value * 32;
  out[pos + 1] = fullBytes + dataBytes;
  if (fullBytes > 0) {
    const head = bits.subbuffer(0, fullBytes * 8);
    if (head !== null) head.copy(out, pos + 2);
    else for (let i = 0; i < fullBytes * 8; i++) if (bits.at(i)) out[pos + 2 + (i >> 3)] |= 0x80 >> (i & 7);
  }
  if (dataBytes > fullBytes) {
    let last = 0;
    const rest = length - fullBytes * 8;
    for (let i = 0; i < rest; i++) if (bits.at(fullBytes * 8 + i)) last |= 0x80 >> i;
    last |= 0x80 >> rest;
    out[pos + 2 + fullBytes] = last;
  }
  return 2 + dataBytes;
}
