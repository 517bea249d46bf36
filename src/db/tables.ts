// The columns of the index tables that several modules read or write, named exactly as in schema.sql.
// int8 and numeric columns travel as decimal strings, so no 64-bit value passes through a JS number; jsonb as
// parsed JSON.

/** Extra-currency amounts by currency id, as the worker stores them in jsonb columns. */
export type ExtraCurrenciesJson = Record<string, string | number> | null;

export type BlockIdRow = {
  workchain: number;
  shard: string;
  seqno: number;
};

export type BlocksTableRow = BlockIdRow & {
  root_hash: string | null;
  file_hash: string | null;
  mc_block_workchain: number | null;
  mc_block_shard: string | null;
  mc_block_seqno: number | null;
  global_id: number | null;
  version: number | null;
  after_merge: boolean | null;
  before_split: boolean | null;
  after_split: boolean | null;
  want_merge: boolean | null;
  want_split: boolean | null;
  key_block: boolean | null;
  vert_seqno_incr: boolean | null;
  flags: number | null;
  gen_utime: string | null;
  start_lt: string | null;
  end_lt: string | null;
  validator_list_hash_short: number | null;
  gen_catchain_seqno: number | null;
  min_ref_mc_seqno: number | null;
  prev_key_block_seqno: number | null;
  vert_seqno: number | null;
  master_ref_seqno: number | null;
  rand_seed: string | null;
  created_by: string | null;
  tx_count: number | null;
  prev_blocks: BlockIdRow[] | null;
};

export type TransactionsTableRow = {
  account: string;
  hash: string;
  lt: string;
  block_workchain: number | null;
  block_shard: string | null;
  block_seqno: number | null;
  mc_block_seqno: number | null;
  trace_id: string | null;
  prev_trans_hash: string | null;
  prev_trans_lt: string | null;
  now: number | null;
  orig_status: string | null;
  end_status: string | null;
  total_fees: string | null;
  total_fees_extra_currencies: ExtraCurrenciesJson;
  account_state_hash_before: string | null;
  account_state_hash_after: string | null;
  descr: string | null;
  aborted: boolean | null;
  destroyed: boolean | null;
  credit_first: boolean | null;
  is_tock: boolean | null;
  installed: boolean | null;
  storage_fees_collected: string | null;
  storage_fees_due: string | null;
  storage_status_change: string | null;
  credit_due_fees_collected: string | null;
  credit: string | null;
  credit_extra_currencies: ExtraCurrenciesJson;
  compute_skipped: boolean | null;
  skipped_reason: string | null;
  compute_success: boolean | null;
  compute_msg_state_used: boolean | null;
  compute_account_activated: boolean | null;
  compute_gas_fees: string | null;
  compute_gas_used: string | null;
  compute_gas_limit: string | null;
  compute_gas_credit: string | null;
  compute_mode: number | null;
  compute_exit_code: number | null;
  compute_exit_arg: number | null;
  compute_vm_steps: string | null;
  compute_vm_init_state_hash: string | null;
  compute_vm_final_state_hash: string | null;
  action_success: boolean | null;
  action_valid: boolean | null;
  action_no_funds: boolean | null;
  action_status_change: string | null;
  action_total_fwd_fees: string | null;
  action_total_action_fees: string | null;
  action_result_code: number | null;
  action_result_arg: number | null;
  action_tot_actions: number | null;
  action_spec_actions: number | null;
  action_skipped_actions: number | null;
  action_msgs_created: number | null;
  action_action_list_hash: string | null;
  action_tot_msg_size_cells: string | null;
  action_tot_msg_size_bits: string | null;
  bounce: string | null;
  bounce_msg_size_cells: string | null;
  bounce_msg_size_bits: string | null;
  bounce_req_fwd_fees: string | null;
  bounce_msg_fees: string | null;
  bounce_fwd_fees: string | null;
  split_info_cur_shard_pfx_len: number | null;
  split_info_acc_split_depth: number | null;
  split_info_this_addr: string | null;
  split_info_sibling_addr: string | null;
};

export type MessagesTableRow = {
  tx_hash: string;
  tx_lt: string;
  mc_seqno: number | null;
  msg_hash: string;
  msg_hash_norm: string | null;
  direction: "in" | "out";
  trace_id: string | null;
  source: string | null;
  destination: string | null;
  value: string | null;
  value_extra_currencies: ExtraCurrenciesJson;
  fwd_fee: string | null;
  ihr_fee: string | null;
  extra_flags: string | null;
  created_lt: string | null;
  created_at: string | null;
  opcode: number | null;
  ihr_disabled: boolean | null;
  bounce: boolean | null;
  bounced: boolean | null;
  import_fee: string | null;
  body_hash: string | null;
  init_state_hash: string | null;
};

export type MessageContentsTableRow = {
  hash: string;
  body: string;
};
