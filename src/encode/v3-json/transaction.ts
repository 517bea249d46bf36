import {
  type AccountStateRow,
  computeGas,
  extraCurrencies,
  hasBlockRef,
  hasCreditPhase,
  hasExtraCurrencies,
  hasMessageSize,
  inMsgTxHash,
  type MessageRow,
  messageOpcode,
  messagesOf,
  outMsgTxHash,
  type TransactionRow,
  type TransactionRowSet,
} from "../../db/transactions.ts";
import type { ExtraCurrenciesJson } from "../../db/tables.ts";
import { type BodyDecoding, DecodedBody } from "../../decoding/page-bodies.ts";
import { presentExtraCurrencies, presentOpcode } from "../../present/v3/transaction.ts";
import { shardToUnsignedHex } from "../../ton/shard.ts";
import type { JsonPieces } from "../json-pieces.ts";

// toncenter's v3 JSON of a transaction, written straight from the rows the data layer read: the one place where
// REST v3 prints a transaction's fields. Byte for byte what src/present/v3/transaction.ts prints for the
// Transaction the typed API scans from the same rows (test/v3-json-encoder.test.ts holds them equal): keys in
// toncenter's order, an absent value null, except inside the description, where toncenter leaves a missing phase
// or phase field out.

function extraCurrenciesValue(json: ExtraCurrenciesJson): string {
  if (json === null) return "null";
  // Through the typed form, so that ids print (and order) as they do there.
  return hasExtraCurrencies(json) ? JSON.stringify(presentExtraCurrencies(extraCurrencies(json))) : "{}";
}

/** Cells and bits, both known (see hasMessageSize). */
function messageSize(out: JsonPieces, cells: string | null, bits: string | null): void {
  out.field('{"cells":', cells as string);
  out.field(',"bits":', bits as string);
  out.text("}");
}

function description(out: JsonPieces, row: TransactionRow): void {
  out.field('{"type":', row.descr ?? "");
  out.member(',"aborted":', row.aborted);
  out.member(',"destroyed":', row.destroyed);
  out.member(',"credit_first":', row.credit_first);
  out.member(',"is_tock":', row.is_tock);
  out.member(',"installed":', row.installed);
  if (row.storage_status_change !== null) {
    out.text(',"storage_ph":');
    out.objectStart();
    out.member(',"storage_fees_collected":', row.storage_fees_collected);
    out.member(',"storage_fees_due":', row.storage_fees_due);
    out.member(',"status_change":', row.storage_status_change);
    out.objectEnd();
  }
  if (hasCreditPhase(row)) {
    out.text(',"credit_ph":');
    out.objectStart();
    out.member(',"due_fees_collected":', row.credit_due_fees_collected);
    out.member(',"credit":', row.credit);
    // toncenter leaves credit_extra_currencies out when it is empty.
    if (hasExtraCurrencies(row.credit_extra_currencies)) {
      out.key(',"credit_extra_currencies":');
      out.text(extraCurrenciesValue(row.credit_extra_currencies));
    }
    out.objectEnd();
  }
  if (row.compute_skipped !== null) {
    const { gasFees, gasUsed } = computeGas(row);
    out.text(',"compute_ph":');
    out.objectStart();
    out.member(',"skipped":', row.compute_skipped);
    out.member(',"reason":', row.skipped_reason);
    out.member(',"success":', row.compute_success);
    out.member(',"msg_state_used":', row.compute_msg_state_used);
    out.member(',"account_activated":', row.compute_account_activated);
    out.member(',"gas_fees":', gasFees);
    out.member(',"gas_used":', gasUsed);
    out.member(',"gas_limit":', row.compute_gas_limit);
    out.member(',"gas_credit":', row.compute_gas_credit);
    out.member(',"mode":', row.compute_mode);
    out.member(',"exit_code":', row.compute_exit_code);
    out.member(',"exit_arg":', row.compute_exit_arg);
    out.member(',"vm_steps":', row.compute_vm_steps === null ? null : Number(row.compute_vm_steps));
    out.member(',"vm_init_state_hash":', row.compute_vm_init_state_hash);
    out.member(',"vm_final_state_hash":', row.compute_vm_final_state_hash);
    out.objectEnd();
  }
  if (row.action_success !== null) {
    out.text(',"action":');
    out.objectStart();
    out.member(',"success":', row.action_success);
    out.member(',"valid":', row.action_valid);
    out.member(',"no_funds":', row.action_no_funds);
    out.member(',"status_change":', row.action_status_change);
    out.member(',"total_fwd_fees":', row.action_total_fwd_fees);
    out.member(',"total_action_fees":', row.action_total_action_fees);
    out.member(',"result_code":', row.action_result_code);
    out.member(',"result_arg":', row.action_result_arg);
    out.member(',"tot_actions":', row.action_tot_actions);
    out.member(',"spec_actions":', row.action_spec_actions);
    out.member(',"skipped_actions":', row.action_skipped_actions);
    out.member(',"msgs_created":', row.action_msgs_created);
    out.member(',"action_list_hash":', row.action_action_list_hash);
    if (hasMessageSize(row.action_tot_msg_size_cells, row.action_tot_msg_size_bits)) {
      out.key(',"tot_msg_size":');
      messageSize(out, row.action_tot_msg_size_cells, row.action_tot_msg_size_bits);
    }
    out.objectEnd();
  }
  if (row.bounce !== null) {
    out.text(',"bounce":');
    out.objectStart();
    out.member(',"type":', row.bounce);
    if (hasMessageSize(row.bounce_msg_size_cells, row.bounce_msg_size_bits)) {
      out.key(',"msg_size":');
      messageSize(out, row.bounce_msg_size_cells, row.bounce_msg_size_bits);
    }
    out.member(',"req_fwd_fees":', row.bounce_req_fwd_fees);
    out.member(',"msg_fees":', row.bounce_msg_fees);
    out.member(',"fwd_fees":', row.bounce_fwd_fees);
    out.objectEnd();
  }
  if (row.split_info_cur_shard_pfx_len !== null) {
    out.text(',"split_info":');
    out.objectStart();
    out.member(',"cur_shard_pfx_len":', row.split_info_cur_shard_pfx_len);
    out.member(',"acc_split_depth":', row.split_info_acc_split_depth);
    out.member(',"this_addr":', row.split_info_this_addr);
    out.member(',"sibling_addr":', row.split_info_sibling_addr);
    out.objectEnd();
  }
  out.text("}");
}

/** An account state as its v3 JSON value. A state the index did not keep (the worker skips nonexist states) still prints its hash. */
export function writeAccountState(out: JsonPieces, hash: string | null, states: ReadonlyMap<string, AccountStateRow>): void {
  if (hash === null) {
    out.text("null");
    return;
  }
  const row = states.get(hash);
  out.field('{"hash":', hash);
  out.field(',"balance":', row?.balance);
  out.text(',"extra_currencies":');
  out.text(row === undefined ? "null" : extraCurrenciesValue(row.balance_extra_currencies));
  out.field(',"account_status":', row?.account_status);
  out.field(',"frozen_hash":', row?.frozen_hash);
  out.field(',"data_hash":', row?.data_hash);
  out.field(',"code_hash":', row?.code_hash);
  out.text(',"code_boc":null,"data_boc":null}');
}

function message(out: JsonPieces, row: MessageRow, bodies: BodyDecoding): void {
  const opcode = messageOpcode(row);
  out.field('{"hash":', row.msg_hash);
  out.field(',"source":', row.source);
  out.field(',"destination":', row.destination);
  out.field(',"value":', row.value);
  out.text(',"value_extra_currencies":');
  out.text(extraCurrenciesValue(row.value_extra_currencies));
  out.field(',"fwd_fee":', row.fwd_fee);
  out.field(',"ihr_fee":', row.ihr_fee);
  out.field(',"extra_flags":', row.extra_flags);
  out.field(',"created_lt":', row.created_lt);
  out.field(',"created_at":', row.created_at);
  out.field(',"opcode":', presentOpcode(opcode));
  out.field(',"decoded_opcode":', opcode === undefined ? null : bodies.opcodeName(opcode));
  out.field(',"ihr_disabled":', row.ihr_disabled);
  out.field(',"bounce":', row.bounce);
  out.field(',"bounced":', row.bounced);
  out.field(',"import_fee":', row.import_fee);
  out.text(',"message_content":');
  if (row.body_hash === null) out.text("null");
  else {
    out.field('{"hash":', row.body_hash);
    out.field(',"body":', row.body);
    out.text(',"decoded":');
    // Toncenter decodes message bodies, never state inits. A decoded body is JSON text printed once per body.
    const decoded = bodies.decode(row.body_hash, row.body);
    if (decoded instanceof DecodedBody) out.json(decoded.text);
    else out.text(JSON.stringify(decoded?.data ?? null));
    out.text("}");
  }
  out.text(',"init_state":');
  if (row.init_state_hash === null) out.text("null");
  else {
    out.field('{"hash":', row.init_state_hash);
    out.field(',"body":', row.init_state_body);
    out.text(',"decoded":null}');
  }
  out.member(',"hash_norm":', row.msg_hash_norm);
  out.field(',"in_msg_tx_hash":', inMsgTxHash(row));
  out.field(',"out_msg_tx_hash":', outMsgTxHash(row));
  out.text("}");
}

/** One of the set's transactions as toncenter's v3 JSON object. */
export function writeTransaction(out: JsonPieces, set: TransactionRowSet, row: TransactionRow, bodies: BodyDecoding): void {
  out.field('{"account":', row.account);
  out.field(',"hash":', row.hash);
  out.field(',"lt":', row.lt);
  out.field(',"now":', row.now);
  out.field(',"mc_block_seqno":', row.mc_block_seqno);
  out.member(',"trace_id":', row.trace_id);
  out.field(',"prev_trans_hash":', row.prev_trans_hash);
  out.field(',"prev_trans_lt":', row.prev_trans_lt);
  out.field(',"orig_status":', row.orig_status);
  out.field(',"end_status":', row.end_status);
  out.field(',"total_fees":', row.total_fees);
  out.text(',"total_fees_extra_currencies":');
  out.text(extraCurrenciesValue(row.total_fees_extra_currencies));
  out.text(',"description":');
  description(out, row);
  out.text(',"block_ref":');
  if (!hasBlockRef(row)) out.text("null");
  else {
    out.text('{"workchain":');
    out.text(String(row.block_workchain));
    out.field(',"shard":', shardToUnsignedHex(row.block_shard as string));
    out.text(',"seqno":');
    out.text(String(row.block_seqno));
    out.text("}");
  }
  out.text(',"in_msg":');
  const own = messagesOf(set, row);
  if (own.inMsg === undefined) out.text("null");
  else message(out, own.inMsg, bodies);
  out.text(',"out_msgs":[');
  own.outMsgs.forEach((outMsg, index) => {
    if (index > 0) out.text(",");
    message(out, outMsg, bodies);
  });
  out.text('],"account_state_before":');
  writeAccountState(out, row.account_state_hash_before, set.stateByHash);
  out.text(',"account_state_after":');
  writeAccountState(out, row.account_state_hash_after, set.stateByHash);
  out.field(',"emulated":false,"finality":"finalized","trace_external_hash":', row.trace_external_hash);
  out.text("}");
}
