// The tables the generator fills, with the columns it writes in COPY order, and the text-format encoders for
// COPY FROM STDIN (tab-separated, \N for NULL, backslash escapes) and for the composite and array literals some
// columns hold.

export const tables = {
  blocks: [
    "workchain", "shard", "seqno", "root_hash", "file_hash", "mc_block_workchain", "mc_block_shard", "mc_block_seqno",
    "global_id", "version", "after_merge", "before_split", "after_split", "want_merge", "want_split", "key_block",
    "vert_seqno_incr", "flags", "gen_utime", "start_lt", "end_lt", "validator_list_hash_short", "gen_catchain_seqno",
    "min_ref_mc_seqno", "prev_key_block_seqno", "vert_seqno", "master_ref_seqno", "rand_seed", "created_by", "tx_count",
    "prev_blocks",
  ],
  shard_state: ["mc_seqno", "workchain", "shard", "seqno"],
  transactions: [
    "account", "hash", "lt", "block_workchain", "block_shard", "block_seqno", "mc_block_seqno", "trace_id",
    "prev_trans_hash", "prev_trans_lt", "now", "orig_status", "end_status", "total_fees", "total_fees_extra_currencies",
    "account_state_hash_before", "account_state_hash_after", "descr", "aborted", "destroyed", "credit_first", "is_tock",
    "installed", "storage_fees_collected", "storage_fees_due", "storage_status_change", "credit_due_fees_collected",
    "credit", "credit_extra_currencies", "compute_skipped", "skipped_reason", "compute_success", "compute_msg_state_used",
    "compute_account_activated", "compute_gas_fees", "compute_gas_used", "compute_gas_limit", "compute_gas_credit",
    "compute_mode", "compute_exit_code", "compute_exit_arg", "compute_vm_steps", "compute_vm_init_state_hash",
    "compute_vm_final_state_hash", "action_success", "action_valid", "action_no_funds", "action_status_change",
    "action_total_fwd_fees", "action_total_action_fees", "action_result_code", "action_result_arg", "action_tot_actions",
    "action_spec_actions", "action_skipped_actions", "action_msgs_created", "action_action_list_hash",
    "action_tot_msg_size_cells", "action_tot_msg_size_bits", "bounce", "bounce_msg_size_cells", "bounce_msg_size_bits",
    "bounce_req_fwd_fees", "bounce_msg_fees", "bounce_fwd_fees", "split_info_cur_shard_pfx_len",
    "split_info_acc_split_depth", "split_info_this_addr", "split_info_sibling_addr",
  ],
  messages: [
    "tx_hash", "tx_lt", "mc_seqno", "msg_hash", "msg_hash_norm", "direction", "trace_id", "source", "destination", "value",
    "value_extra_currencies", "fwd_fee", "ihr_fee", "extra_flags", "created_lt", "created_at", "opcode", "ihr_disabled",
    "bounce", "bounced", "import_fee", "body_hash", "init_state_hash",
  ],
  message_contents: ["hash", "body"],
  account_states: [
    "hash", "account", "balance", "balance_extra_currencies", "account_status", "frozen_hash", "data_hash", "code_hash",
  ],
  latest_account_states: [
    "account", "account_friendly", "hash", "balance", "balance_extra_currencies", "account_status", "timestamp",
    "last_trans_hash", "last_trans_lt", "frozen_hash", "data_hash", "code_hash", "data_boc", "code_boc",
  ],
  traces: [
    "trace_id", "external_hash", "external_hash_norm", "mc_seqno_start", "mc_seqno_end", "start_lt", "start_utime",
    "end_lt", "end_utime", "state", "pending_edges_", "edges_", "nodes_", "classification_state",
  ],
  actions: [
    "trace_id", "action_id", "start_lt", "end_lt", "start_utime", "end_utime", "source", "source_secondary",
    "destination", "destination_secondary", "asset", "asset_secondary", "asset2", "asset2_secondary", "opcode",
    "tx_hashes", "type", "ton_transfer_data", "value", "amount", "jetton_transfer_data", "jetton_swap_data", "success",
    "trace_end_lt", "trace_external_hash", "trace_external_hash_norm", "trace_end_utime", "mc_seqno_end",
    "trace_mc_seqno_end", "parent_action_id", "ancestor_type", "value_extra_currencies",
  ],
  contract_methods: ["code_hash", "methods"],
  jetton_masters: [
    "address", "total_supply", "mintable", "admin_address", "jetton_content", "jetton_wallet_code_hash",
    "last_transaction_lt", "code_hash", "data_hash",
  ],
  jetton_wallets: ["address", "balance", "owner", "jetton", "last_transaction_lt", "code_hash", "data_hash"],
  address_metadata: [
    "address", "type", "valid", "name", "description", "extra", "symbol", "image", "updated_at", "expires_at",
    "reindex_allowed",
  ],
  dns_entries: ["nft_item_address", "nft_item_owner", "domain", "dns_next_resolver", "dns_wallet", "last_transaction_lt"],
} as const satisfies Record<string, readonly string[]>;

export type TableName = keyof typeof tables;
export const tableNames = Object.keys(tables) as TableName[];

/** Where generated rows go: one COPY text line (with its trailing newline) at a time. */
export interface RowSink {
  write(table: TableName, line: string): void;
}

/** COPY text NULL. */
export const NULL = "\\N";

const copySpecial = /[\\\t\n\r]/;

/** A text value escaped for COPY's text format (backslash, tab, newline, carriage return). */
export function copyText(value: string | null): string {
  if (value === null) return NULL;
  if (!copySpecial.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r"));
}

/**
 * One attribute of a composite literal "(a,b,...)": empty for NULL, else double-quoted with " and \ escaped, so
 * any text survives. The literal as a whole still goes through copyText.
 */
export function compositeAttr(value: string | number | boolean | null): string {
  if (value === null) return "";
  if (typeof value === "boolean") return value ? "t" : "f";
  if (typeof value === "number") return String(value);
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

export function composite(values: readonly (string | number | boolean | null)[]): string {
  return `(${values.map(compositeAttr).join(",")})`;
}

/** An array literal of values that need no quoting (base64 hashes, numbers). */
export function plainArray(values: readonly (string | number)[]): string {
  return `{${values.join(",")}}`;
}

export function bool(value: boolean | null): string {
  return value === null ? NULL : value ? "t" : "f";
}

export function num(value: number | null): string {
  return value === null ? NULL : String(value);
}
