import {
  type AccountStateRow,
  computeGas,
  extraCurrencies,
  type MessageRow,
  messageOpcode,
  messagesOf,
  type TransactionRow,
  type TransactionRowSet,
} from "../../db/transactions.ts";
import type { ExtraCurrenciesJson } from "../../db/tables.ts";
import { type BodyDecoding, DecodedBody } from "../../decoding/page-bodies.ts";
import { presentExtraCurrencies, presentOpcode } from "../../present/v3/transaction.ts";
import { shardToUnsignedHex } from "../../ton/shard.ts";
import type { JsonPieces } from "./pieces.ts";

// toncenter's v3 JSON of a transaction, written straight from the rows the data layer read: the one place where
// REST v3 prints a transaction's fields. Byte for byte what src/present/v3/transaction.ts prints for the
// Transaction the typed API scans from the same rows (test/v3-json-encoder.test.ts holds them equal): keys in
// toncenter's order, an absent value null, except inside the description, where toncenter leaves a missing phase
// or phase field out.

/**
 * A string without a character JSON.stringify escapes (surrogates: the lone ones; any sends the string to it).
 * Anchored and negated, so V8 runs one tight loop over the string: half the time of searching for such a character
 * from every position on the 44-1500-character values here (hashes, addresses, bodies' BOCs), level on short ones.
 */
const needsNoEscaping = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * A string as JSON.stringify prints it. Nearly every string here (hashes, addresses, amounts, statuses) needs no
 * escaping, and quoting it directly was the encoder's largest cost when every value went through JSON.stringify.
 */
export function quote(text: string): string {
  return needsNoEscaping.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** A JSON value: null for an absent one. */
export function value(v: string | number | boolean | null | undefined): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "string") return quote(v);
  // Numbers from the driver are finite; JSON prints the others as null.
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "null";
  return v ? "true" : "false";
}

/** `,"key":value`, or nothing for an absent value (a member toncenter leaves out). */
function member(key: string, v: string | number | boolean | null | undefined): string {
  return v === null || v === undefined ? "" : `,"${key}":${value(v)}`;
}

/** An object of members written by `member`. */
function object(members: string): string {
  return members === "" ? "{}" : `{${members.slice(1)}}`;
}

function extraCurrenciesValue(json: ExtraCurrenciesJson): string {
  // Through the typed form, so that ids print (and order) as they do there.
  return json === null ? "null" : JSON.stringify(presentExtraCurrencies(extraCurrencies(json)));
}

function messageSize(cells: string | null, bits: string | null): string {
  return cells === null || bits === null ? "" : `{"cells":${quote(cells)},"bits":${quote(bits)}}`;
}

function description(row: TransactionRow): string {
  let out = `{"type":${quote(row.descr ?? "")}`;
  out += member("aborted", row.aborted);
  out += member("destroyed", row.destroyed);
  out += member("credit_first", row.credit_first);
  out += member("is_tock", row.is_tock);
  out += member("installed", row.installed);
  if (row.storage_status_change !== null) {
    out += `,"storage_ph":${object(
      member("storage_fees_collected", row.storage_fees_collected) +
        member("storage_fees_due", row.storage_fees_due) +
        member("status_change", row.storage_status_change),
    )}`;
  }
  if (row.credit_due_fees_collected !== null || row.credit !== null || row.credit_extra_currencies !== null) {
    // toncenter leaves credit_extra_currencies out when it is empty.
    const extra = extraCurrencies(row.credit_extra_currencies);
    const printedExtra = extra !== undefined && Object.keys(extra.amounts).length > 0 ? `,"credit_extra_currencies":${JSON.stringify(presentExtraCurrencies(extra))}` : "";
    out += `,"credit_ph":${object(member("due_fees_collected", row.credit_due_fees_collected) + member("credit", row.credit) + printedExtra)}`;
  }
  if (row.compute_skipped !== null) {
    const { gasFees, gasUsed } = computeGas(row);
    out += `,"compute_ph":${object(
      member("skipped", row.compute_skipped) +
        member("reason", row.skipped_reason) +
        member("success", row.compute_success) +
        member("msg_state_used", row.compute_msg_state_used) +
        member("account_activated", row.compute_account_activated) +
        member("gas_fees", gasFees) +
        member("gas_used", gasUsed) +
        member("gas_limit", row.compute_gas_limit) +
        member("gas_credit", row.compute_gas_credit) +
        member("mode", row.compute_mode) +
        member("exit_code", row.compute_exit_code) +
        member("exit_arg", row.compute_exit_arg) +
        member("vm_steps", row.compute_vm_steps === null ? null : Number(row.compute_vm_steps)) +
        member("vm_init_state_hash", row.compute_vm_init_state_hash) +
        member("vm_final_state_hash", row.compute_vm_final_state_hash),
    )}`;
  }
  if (row.action_success !== null) {
    const size = messageSize(row.action_tot_msg_size_cells, row.action_tot_msg_size_bits);
    out += `,"action":${object(
      member("success", row.action_success) +
        member("valid", row.action_valid) +
        member("no_funds", row.action_no_funds) +
        member("status_change", row.action_status_change) +
        member("total_fwd_fees", row.action_total_fwd_fees) +
        member("total_action_fees", row.action_total_action_fees) +
        member("result_code", row.action_result_code) +
        member("result_arg", row.action_result_arg) +
        member("tot_actions", row.action_tot_actions) +
        member("spec_actions", row.action_spec_actions) +
        member("skipped_actions", row.action_skipped_actions) +
        member("msgs_created", row.action_msgs_created) +
        member("action_list_hash", row.action_action_list_hash) +
        (size === "" ? "" : `,"tot_msg_size":${size}`),
    )}`;
  }
  if (row.bounce !== null) {
    const size = messageSize(row.bounce_msg_size_cells, row.bounce_msg_size_bits);
    out += `,"bounce":${object(
      member("type", row.bounce) +
        (size === "" ? "" : `,"msg_size":${size}`) +
        member("req_fwd_fees", row.bounce_req_fwd_fees) +
        member("msg_fees", row.bounce_msg_fees) +
        member("fwd_fees", row.bounce_fwd_fees),
    )}`;
  }
  if (row.split_info_cur_shard_pfx_len !== null) {
    out += `,"split_info":${object(
      member("cur_shard_pfx_len", row.split_info_cur_shard_pfx_len) +
        member("acc_split_depth", row.split_info_acc_split_depth) +
        member("this_addr", row.split_info_this_addr) +
        member("sibling_addr", row.split_info_sibling_addr),
    )}`;
  }
  return `${out}}`;
}

/** An account state as its v3 JSON value. A state the index did not keep (the worker skips nonexist states) still prints its hash. */
export function accountStateValue(hash: string | null, states: ReadonlyMap<string, AccountStateRow>): string {
  if (hash === null) return "null";
  const row = states.get(hash);
  return (
    `{"hash":${quote(hash)},"balance":${value(row?.balance)},` +
    `"extra_currencies":${row === undefined ? "null" : extraCurrenciesValue(row.balance_extra_currencies)},` +
    `"account_status":${value(row?.account_status)},"frozen_hash":${value(row?.frozen_hash)},"data_hash":${value(row?.data_hash)},` +
    `"code_hash":${value(row?.code_hash)},"code_boc":null,"data_boc":null}`
  );
}

function message(out: JsonPieces, row: MessageRow, bodies: BodyDecoding): void {
  const opcode = messageOpcode(row);
  out.text(
    `{"hash":${quote(row.msg_hash)},"source":${value(row.source)},"destination":${value(row.destination)},` +
      `"value":${value(row.value)},"value_extra_currencies":${extraCurrenciesValue(row.value_extra_currencies)},` +
      `"fwd_fee":${value(row.fwd_fee)},"ihr_fee":${value(row.ihr_fee)},"extra_flags":${value(row.extra_flags)},` +
      `"created_lt":${value(row.created_lt)},"created_at":${value(row.created_at)},"opcode":${value(presentOpcode(opcode))},` +
      `"decoded_opcode":${opcode === undefined ? "null" : value(bodies.opcodeName(opcode))},"ihr_disabled":${value(row.ihr_disabled)},` +
      `"bounce":${value(row.bounce)},"bounced":${value(row.bounced)},"import_fee":${value(row.import_fee)},"message_content":`,
  );
  if (row.body_hash === null) out.text("null");
  else {
    out.text(`{"hash":${quote(row.body_hash)},"body":${value(row.body)},"decoded":`);
    // Toncenter decodes message bodies, never state inits. A decoded body is JSON text printed once per body.
    const decoded = bodies.decode(row.body_hash, row.body);
    if (decoded instanceof DecodedBody) out.json(decoded.text);
    else out.text(JSON.stringify(decoded?.data ?? null));
    out.text("}");
  }
  const initState =
    row.init_state_hash === null ? "null" : `{"hash":${quote(row.init_state_hash)},"body":${value(row.init_state_body)},"decoded":null}`;
  const counterpart = value(row.counterpart_tx_hash);
  const own = quote(row.tx_hash);
  out.text(
    `,"init_state":${initState}${member("hash_norm", row.msg_hash_norm)},` +
      `"in_msg_tx_hash":${row.direction === "out" ? counterpart : own},"out_msg_tx_hash":${row.direction === "in" ? counterpart : own}}`,
  );
}

/** One of the set's transactions as toncenter's v3 JSON object. */
export function writeTransaction(out: JsonPieces, set: TransactionRowSet, row: TransactionRow, bodies: BodyDecoding): void {
  const blockRef =
    row.block_workchain === null || row.block_shard === null || row.block_seqno === null
      ? "null"
      : `{"workchain":${row.block_workchain},"shard":${quote(shardToUnsignedHex(row.block_shard))},"seqno":${row.block_seqno}}`;
  out.text(
    `{"account":${quote(row.account)},"hash":${quote(row.hash)},"lt":${quote(row.lt)},` +
      `"now":${value(row.now)},"mc_block_seqno":${value(row.mc_block_seqno)}${member("trace_id", row.trace_id)},` +
      `"prev_trans_hash":${value(row.prev_trans_hash)},"prev_trans_lt":${value(row.prev_trans_lt)},` +
      `"orig_status":${value(row.orig_status)},"end_status":${value(row.end_status)},"total_fees":${value(row.total_fees)},` +
      `"total_fees_extra_currencies":${extraCurrenciesValue(row.total_fees_extra_currencies)},"description":${description(row)},` +
      `"block_ref":${blockRef},"in_msg":`,
  );
  const own = messagesOf(set, row);
  if (own.inMsg === undefined) out.text("null");
  else message(out, own.inMsg, bodies);
  out.text(`,"out_msgs":[`);
  own.outMsgs.forEach((outMsg, index) => {
    if (index > 0) out.text(",");
    message(out, outMsg, bodies);
  });
  out.text(
    `],"account_state_before":${accountStateValue(row.account_state_hash_before, set.stateByHash)},` +
      `"account_state_after":${accountStateValue(row.account_state_hash_after, set.stateByHash)},` +
      `"emulated":false,"finality":"finalized","trace_external_hash":${value(row.trace_external_hash)}}`,
  );
}
