import {
  type AccountStateRow,
  computeGas,
  extraCurrencies,
  hasBlockRef,
  hasExtraCurrencies,
  hasCreditPhase,
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
import type { ExtraCurrencies } from "../../../gen/tonquery/v1/transaction_pb.ts";
import type { BodyDecoding } from "../../decoding/page-bodies.ts";
import { delimitedDecodedContent } from "./decoded-content.ts";
import { implicitInt32, implicitInt64, implicitString, optionalBool, optionalInt32, optionalInt64, optionalString } from "./fields.ts";
import { lengthDelimited, type ProtoWriter } from "./writer.ts";

// The protobuf binary of a tonquery.v1.Transaction, written straight from the rows the data layer read: the one
// place where the typed API's transactions are written as binary. Byte for byte what
// toBinary(TransactionSchema, scanTransactionRow(set, row, bodies)) writes (test/proto-encoder.test.ts holds them
// equal): fields in number order, present as toBinary finds them present (see fields.ts).

/**
 * An ExtraCurrencies message (field `no`) for a jsonb column, absent for NULL: its map entries in the order
 * protobuf-es writes a map, Object.keys of the record extraCurrencies builds, each key and value written even at
 * its zero value.
 */
function writeExtraCurrencies(w: ProtoWriter, no: number, json: ExtraCurrenciesJson): void {
  if (json === null) return;
  w.fork(no);
  if (hasExtraCurrencies(json)) {
    const amounts = (extraCurrencies(json) as ExtraCurrencies).amounts;
    for (const key of Object.keys(amounts)) {
      // Keys are strings locally; protobuf-es reads an int32 key back with parseInt.
      const id = Number.parseInt(key);
      if (!Number.isFinite(id)) throw new Error(`cannot encode field tonquery.v1.ExtraCurrencies.amounts to binary: invalid int32: ${key}`);
      w.fork(1);
      w.int32(1, id);
      w.string(2, (amounts as Record<string, string>)[key] as string);
      w.join();
    }
  }
  w.join();
}

/** Cells and bits, as a MessageSize (field `no`), when both are known. */
function writeMessageSize(w: ProtoWriter, no: number, cells: string | null, bits: string | null): void {
  if (!hasMessageSize(cells, bits)) return;
  w.fork(no);
  implicitInt64(w, 1, cells as string);
  implicitInt64(w, 2, bits as string);
  w.join();
}

/** The TransactionDescription message's fields. */
function writeDescription(w: ProtoWriter, row: TransactionRow): void {
  implicitString(w, 1, row.descr ?? "");
  optionalBool(w, 2, row.aborted);
  optionalBool(w, 3, row.destroyed);
  optionalBool(w, 4, row.credit_first);
  optionalBool(w, 5, row.is_tock);
  optionalBool(w, 6, row.installed);
  if (row.storage_status_change !== null) {
    w.fork(7);
    optionalInt64(w, 1, row.storage_fees_collected);
    optionalInt64(w, 2, row.storage_fees_due);
    w.string(3, row.storage_status_change);
    w.join();
  }
  if (hasCreditPhase(row)) {
    w.fork(8);
    optionalInt64(w, 1, row.credit_due_fees_collected);
    optionalInt64(w, 2, row.credit);
    writeExtraCurrencies(w, 3, row.credit_extra_currencies);
    w.join();
  }
  if (row.compute_skipped !== null) {
    const { gasFees, gasUsed } = computeGas(row);
    w.fork(9);
    w.bool(1, row.compute_skipped);
    optionalString(w, 2, row.skipped_reason);
    optionalBool(w, 3, row.compute_success);
    optionalBool(w, 4, row.compute_msg_state_used);
    optionalBool(w, 5, row.compute_account_activated);
    optionalInt64(w, 6, gasFees);
    optionalInt64(w, 7, gasUsed);
    optionalInt64(w, 8, row.compute_gas_limit);
    optionalInt64(w, 9, row.compute_gas_credit);
    optionalInt32(w, 10, row.compute_mode);
    optionalInt32(w, 11, row.compute_exit_code);
    optionalInt32(w, 12, row.compute_exit_arg);
    optionalInt64(w, 13, row.compute_vm_steps);
    optionalString(w, 14, row.compute_vm_init_state_hash);
    optionalString(w, 15, row.compute_vm_final_state_hash);
    w.join();
  }
  if (row.action_success !== null) {
    w.fork(10);
    w.bool(1, row.action_success);
    optionalBool(w, 2, row.action_valid);
    optionalBool(w, 3, row.action_no_funds);
    optionalString(w, 4, row.action_status_change);
    optionalInt64(w, 5, row.action_total_fwd_fees);
    optionalInt64(w, 6, row.action_total_action_fees);
    optionalInt32(w, 7, row.action_result_code);
    optionalInt32(w, 8, row.action_result_arg);
    optionalInt32(w, 9, row.action_tot_actions);
    optionalInt32(w, 10, row.action_spec_actions);
    optionalInt32(w, 11, row.action_skipped_actions);
    optionalInt32(w, 12, row.action_msgs_created);
    optionalString(w, 13, row.action_action_list_hash);
    writeMessageSize(w, 14, row.action_tot_msg_size_cells, row.action_tot_msg_size_bits);
    w.join();
  }
  if (row.bounce !== null) {
    w.fork(11);
    implicitString(w, 1, row.bounce);
    writeMessageSize(w, 2, row.bounce_msg_size_cells, row.bounce_msg_size_bits);
    optionalInt64(w, 3, row.bounce_req_fwd_fees);
    optionalInt64(w, 4, row.bounce_msg_fees);
    optionalInt64(w, 5, row.bounce_fwd_fees);
    w.join();
  }
  if (row.split_info_cur_shard_pfx_len !== null) {
    w.fork(12);
    w.int32(1, row.split_info_cur_shard_pfx_len);
    optionalInt32(w, 2, row.split_info_acc_split_depth);
    optionalString(w, 3, row.split_info_this_addr);
    optionalString(w, 4, row.split_info_sibling_addr);
    w.join();
  }
}

/** An AccountState (field `no`); a state the index did not keep (the worker skips nonexist states) still carries its hash. */
function writeAccountState(w: ProtoWriter, no: number, hash: string | null, states: ReadonlyMap<string, AccountStateRow>): void {
  if (hash === null) return;
  const row = states.get(hash);
  w.fork(no);
  implicitString(w, 1, hash);
  if (row !== undefined) {
    optionalInt64(w, 2, row.balance);
    writeExtraCurrencies(w, 3, row.balance_extra_currencies);
    optionalString(w, 4, row.account_status);
    optionalString(w, 5, row.frozen_hash);
    optionalString(w, 6, row.data_hash);
    optionalString(w, 7, row.code_hash);
  }
  w.join();
}

/** A MessageBody (field `no`), its decoded content (message bodies only) from the bytes cached per content. */
function writeMessageBody(w: ProtoWriter, no: number, hash: string | null, body: string | null, bodies: BodyDecoding | undefined): void {
  if (hash === null) return;
  w.fork(no);
  implicitString(w, 1, hash);
  optionalString(w, 2, body);
  // Toncenter decodes message bodies, never state inits.
  const decoded = bodies?.decode(hash, body);
  if (decoded !== undefined) w.raw(3, lengthDelimited, delimitedDecodedContent(decoded));
  w.join();
}

/** A Message (field `no`). */
function writeMessage(w: ProtoWriter, no: number, row: MessageRow, bodies: BodyDecoding): void {
  w.fork(no);
  implicitString(w, 1, row.msg_hash);
  optionalString(w, 2, row.source);
  optionalString(w, 3, row.destination);
  optionalInt64(w, 4, row.value);
  writeExtraCurrencies(w, 5, row.value_extra_currencies);
  optionalInt64(w, 6, row.fwd_fee);
  optionalInt64(w, 7, row.ihr_fee);
  optionalString(w, 8, row.extra_flags);
  optionalInt64(w, 9, row.created_lt);
  optionalInt64(w, 10, row.created_at);
  const opcode = messageOpcode(row);
  if (opcode !== undefined) {
    w.uint32(11, opcode);
    optionalString(w, 12, bodies.opcodeName(opcode));
  }
  optionalBool(w, 13, row.ihr_disabled);
  optionalBool(w, 14, row.bounce);
  optionalBool(w, 15, row.bounced);
  optionalInt64(w, 16, row.import_fee);
  writeMessageBody(w, 17, row.body_hash, row.body, bodies);
  writeMessageBody(w, 18, row.init_state_hash, row.init_state_body, undefined);
  optionalString(w, 19, row.msg_hash_norm);
  optionalString(w, 20, inMsgTxHash(row));
  optionalString(w, 21, outMsgTxHash(row));
  w.join();
}

/**
 * The fields of one of the set's transactions as a tonquery.v1.Transaction message (the caller writes its tag and
 * length, see ProtoWriter.fork): what scanTransactionRow scans from the same rows, without building it.
 */
export function writeTransaction(w: ProtoWriter, set: TransactionRowSet, row: TransactionRow, bodies: BodyDecoding): void {
  implicitString(w, 1, row.account);
  implicitString(w, 2, row.hash);
  implicitInt64(w, 3, row.lt);
  optionalInt32(w, 4, row.now);
  optionalInt32(w, 5, row.mc_block_seqno);
  optionalString(w, 6, row.trace_id);
  optionalString(w, 7, row.prev_trans_hash);
  optionalInt64(w, 8, row.prev_trans_lt);
  optionalString(w, 9, row.orig_status);
  optionalString(w, 10, row.end_status);
  optionalInt64(w, 11, row.total_fees);
  writeExtraCurrencies(w, 12, row.total_fees_extra_currencies);
  w.fork(13);
  writeDescription(w, row);
  w.join();
  if (hasBlockRef(row)) {
    w.fork(14);
    implicitInt32(w, 1, row.block_workchain as number);
    implicitInt64(w, 2, row.block_shard as string);
    implicitInt32(w, 3, row.block_seqno as number);
    w.join();
  }
  const own = messagesOf(set, row);
  if (own.inMsg !== undefined) writeMessage(w, 15, own.inMsg, bodies);
  for (const out of own.outMsgs) writeMessage(w, 16, out, bodies);
  writeAccountState(w, 17, row.account_state_hash_before, set.stateByHash);
  writeAccountState(w, 18, row.account_state_hash_after, set.stateByHash);
  // emulated (19) is false: left out.
  w.string(20, "finalized");
  optionalString(w, 21, row.trace_external_hash);
}
