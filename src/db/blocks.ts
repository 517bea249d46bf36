import { create } from "@bufbuild/protobuf";
import { type Block, BlockSchema } from "../../gen/tonquery/v1/block_pb.ts";
import { noteIndexSeqno, runQuery, type Sql } from "./client.ts";
import { optional } from "./rows.ts";
import { SharedRead } from "./shared-read.ts";
import type { BlockIdRow, BlocksTableRow } from "./tables.ts";

/** A `blocks` row as selected below: prev_blocks rendered as JSON with the shard as text, to keep its 64 bits. */
type BlockRow = BlocksTableRow & { prev_blocks: BlockIdRow[]; edge: "first" | "last" };

export interface MasterchainRange {
  first: Block;
  last: Block;
}

/**
 * The lowest and the highest indexed masterchain blocks. Requests that want them at the same time share one read
 * (see SharedRead: never one started before the request arrived). Undefined when no masterchain block is indexed.
 */
export async function selectMasterchainRange(sql: Sql, signal: AbortSignal): Promise<MasterchainRange | undefined> {
  let reads = rangeReads.get(sql);
  if (reads === undefined) {
    let previous: MasterchainRange | undefined;
    reads = new SharedRead(async (shared) => (previous = await readMasterchainRange(sql, shared, previous)));
    rangeReads.set(sql, reads);
  }
  const range = await reads.read(signal);
  // The newest block, read after the request arrived: what its X-Index-Seqno needs, without another statement.
  if (range !== undefined) noteIndexSeqno(signal, range.last.seqno);
  return range;
}

const rangeReads = new WeakMap<Sql, SharedRead<MasterchainRange | undefined>>();

/**
 * One round trip; each side is a single probe of blocks_index_3 (seqno where workchain = -1). When it finds the two
 * blocks of the `previous` read (a block is known by its root hash), that range is returned again: a new block comes
 * every few seconds and reads come every millisecond under load, and what the doors make of a range (REST's JSON and
 * ETag) is made once per range object.
 */
async function readMasterchainRange(sql: Sql, signal: AbortSignal, previous: MasterchainRange | undefined): Promise<MasterchainRange | undefined> {
  const rows = await runQuery(
    signal,
    sql,
    "masterchain_range",
    (tx) => tx<BlockRow[]>`
      (select ${blockColumns(sql)}, 'first' as edge from blocks b where b.workchain = -1 order by b.seqno asc limit 1)
      union all
      (select ${blockColumns(sql)}, 'last' as edge from blocks b where b.workchain = -1 order by b.seqno desc limit 1)
    `,
  );
  const first = rows.find((r) => r.edge === "first");
  const last = rows.find((r) => r.edge === "last");
  if (first === undefined || last === undefined) return undefined;
  // Also what the member is known to hold, for routing later requests that ask for a minimum seqno.
  noteIndexSeqno(signal, last.seqno);
  if (previous !== undefined && isBlock(previous.first, first) && isBlock(previous.last, last)) return previous;
  return { first: scanBlock(first), last: scanBlock(last) };
}

function isBlock(block: Block, row: BlockRow): boolean {
  return row.root_hash !== null && block.rootHash === row.root_hash && block.seqno === row.seqno && block.workchain === row.workchain;
}

function blockColumns(sql: Sql) {
  return sql`
    b.workchain, b.shard, b.seqno, b.root_hash, b.file_hash, b.mc_block_workchain, b.mc_block_shard, b.mc_block_seqno,
    b.global_id, b.version, b.after_merge, b.before_split, b.after_split, b.want_merge, b.want_split, b.key_block,
    b.vert_seqno_incr, b.flags, b.gen_utime, b.start_lt, b.end_lt, b.validator_list_hash_short, b.gen_catchain_seqno,
    b.min_ref_mc_seqno, b.prev_key_block_seqno, b.vert_seqno, b.master_ref_seqno, b.rand_seed, b.created_by, b.tx_count,
    (select coalesce(json_agg(json_build_object('workchain', p.workchain, 'shard', p.shard::text, 'seqno', p.seqno) order by p.ord), '[]'::json)
       from unnest(b.prev_blocks) with ordinality as p(workchain, shard, seqno, ord)) as prev_blocks`;
}

function scanBlock(row: BlockRow): Block {
  return create(BlockSchema, {
    workchain: row.workchain,
    shard: row.shard,
    seqno: row.seqno,
    rootHash: optional(row.root_hash),
    fileHash: optional(row.file_hash),
    globalId: optional(row.global_id),
    version: optional(row.version),
    afterMerge: optional(row.after_merge),
    beforeSplit: optional(row.before_split),
    afterSplit: optional(row.after_split),
    wantMerge: optional(row.want_merge),
    wantSplit: optional(row.want_split),
    keyBlock: optional(row.key_block),
    vertSeqnoIncr: optional(row.vert_seqno_incr),
    flags: optional(row.flags),
    genUtime: optional(row.gen_utime),
    startLt: optional(row.start_lt),
    endLt: optional(row.end_lt),
    validatorListHashShort: optional(row.validator_list_hash_short),
    genCatchainSeqno: optional(row.gen_catchain_seqno),
    minRefMcSeqno: optional(row.min_ref_mc_seqno),
    prevKeyBlockSeqno: optional(row.prev_key_block_seqno),
    vertSeqno: optional(row.vert_seqno),
    masterRefSeqno: optional(row.master_ref_seqno),
    randSeed: optional(row.rand_seed),
    createdBy: optional(row.created_by),
    txCount: optional(row.tx_count),
    masterchainBlockRef:
      row.mc_block_workchain === null || row.mc_block_shard === null || row.mc_block_seqno === null
        ? undefined
        : { workchain: row.mc_block_workchain, shard: row.mc_block_shard, seqno: row.mc_block_seqno },
    prevBlocks: row.prev_blocks,
  });
}
