import type { Block, BlockRef } from "../../../gen/tonquery/v1/block_pb.ts";
import type { GetMasterchainInfoResponse } from "../../../gen/tonquery/v1/service_pb.ts";
import { shardToUnsignedHex } from "../../ton/shard.ts";

// Field order follows toncenter's responses so that a byte diff against it stays readable.

export function presentBlockRef(ref: BlockRef) {
  return { workchain: ref.workchain, shard: shardToUnsignedHex(ref.shard), seqno: ref.seqno };
}

export function presentBlock(block: Block) {
  return {
    workchain: block.workchain,
    shard: shardToUnsignedHex(block.shard),
    seqno: block.seqno,
    root_hash: block.rootHash ?? null,
    file_hash: block.fileHash ?? null,
    global_id: block.globalId ?? null,
    version: block.version ?? null,
    after_merge: block.afterMerge ?? null,
    before_split: block.beforeSplit ?? null,
    after_split: block.afterSplit ?? null,
    want_merge: block.wantMerge ?? null,
    want_split: block.wantSplit ?? null,
    key_block: block.keyBlock ?? null,
    vert_seqno_incr: block.vertSeqnoIncr ?? null,
    flags: block.flags ?? null,
    gen_utime: block.genUtime ?? null,
    start_lt: block.startLt ?? null,
    end_lt: block.endLt ?? null,
    validator_list_hash_short: block.validatorListHashShort ?? null,
    gen_catchain_seqno: block.genCatchainSeqno ?? null,
    min_ref_mc_seqno: block.minRefMcSeqno ?? null,
    prev_key_block_seqno: block.prevKeyBlockSeqno ?? null,
    vert_seqno: block.vertSeqno ?? null,
    master_ref_seqno: block.masterRefSeqno ?? null,
    rand_seed: block.randSeed ?? null,
    created_by: block.createdBy ?? null,
    tx_count: block.txCount ?? null,
    masterchain_block_ref: block.masterchainBlockRef ? presentBlockRef(block.masterchainBlockRef) : null,
    prev_blocks: block.prevBlocks.map(presentBlockRef),
  };
}

export function presentMasterchainInfo(response: GetMasterchainInfoResponse) {
  return {
    last: response.last ? presentBlock(response.last) : null,
    first: response.first ? presentBlock(response.first) : null,
  };
}
