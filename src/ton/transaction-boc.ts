import { beginCell, type Builder, Cell, Dictionary } from "@ton/core";
import type { MessageRow, TransactionRow } from "../db/transactions.ts";
import { serializeBocBase64 } from "./boc.ts";

// Rebuilds the raw Transaction cell (and its Message cells) from the columns ton-index-worker keeps, for the v2
// `data` field. The index stores no BOC, so every field is re-serialised per TL-B (crypto/block/block.tlb) and each
// result is checked against the stored representation hash: a message against msg_hash, the transaction against
// hash. Anything that does not reproduce its hash is given up on (undefined), never returned.
// Rules, and the data quirks they compensate for: /work/shared/spec/tx-reconstruction.md §4.

/** The message columns the rebuild reads (a MessageRow has them all). */
export type RebuildMessageInput = Pick<
  MessageRow,
  | "msg_hash"
  | "source"
  | "destination"
  | "value"
  | "value_extra_currencies"
  | "fwd_fee"
  | "ihr_fee"
  | "extra_flags"
  | "created_lt"
  | "created_at"
  | "ihr_disabled"
  | "bounce"
  | "bounced"
  | "import_fee"
  | "body_hash"
  | "body"
  | "init_state_hash"
  | "init_state_body"
>;

/** The transaction columns the rebuild reads (a TransactionRow has them all). */
export type RebuildTransactionInput = Omit<
  TransactionRow,
  "block_workchain" | "block_shard" | "block_seqno" | "mc_block_seqno" | "trace_id" | "installed" | "trace_external_hash"
>;

export type MessageKind = "internal" | "external-in" | "external-out";

/** Why a message or transaction could not be rebuilt to its stored hash. */
export type RebuildFailure =
  | { kind: "message"; msgHash: string; direction: "in" | "out"; reason: MessageFailureReason }
  | { kind: "transaction"; reason: TransactionFailureReason };

export type MessageFailureReason =
  /** A column the cell needs is NULL (or out of range). */
  | "missing-field"
  /** source/destination is not a plain "wc:HEX" std address (addr_var, anycast-rewritten, ...). */
  | "unsupported-address"
  /** The message_contents row for body_hash / init_state_hash is absent or not a valid BOC. */
  | "missing-content"
  /** Every candidate layout was built, none has msg_hash: the index lacks something (e.g. an addr_extern dest). */
  | "hash-mismatch";

export type TransactionFailureReason =
  | "missing-field"
  /** split_install / merge_install: prepare_transaction is not stored. */
  | "unsupported-descr"
  | "hash-mismatch";

export type RebuildResult =
  /** gasSwapped: the hash matched only with compute_gas_fees and compute_gas_used exchanged (old writer bug). */
  | { ok: true; cell: Cell; gasSwapped?: boolean }
  | { ok: false; failure: RebuildFailure };

/** Rebuilds and hash-checks one message cell; undefined when it cannot be reproduced exactly. */
export function rebuildMessageCell(msg: RebuildMessageInput): Cell | undefined {
  const result = rebuildMessage(msg);
  return result.ok ? result.cell : undefined;
}

/**
 * The v2 `data` of a transaction: base64 BOC (tonlib cell order, CRC32C) of the rebuilt Transaction cell, or
 * undefined when it or one of its messages does not reproduce the stored hash. `outMsgs` in created_lt order.
 */
export function rebuildTransactionBoc(
  tx: RebuildTransactionInput,
  inMsg: RebuildMessageInput | undefined,
  outMsgs: readonly RebuildMessageInput[],
): string | undefined {
  const result = rebuildTransaction(tx, inMsg, outMsgs);
  if (!result.ok) return undefined;
  try {
    return serializeBocBase64(result.cell);
  } catch {
    return undefined;
  }
}

/** rebuildTransactionBoc's cell, or the first reason it could not be rebuilt. Never throws. */
export function rebuildTransaction(
  tx: RebuildTransactionInput,
  inMsg: RebuildMessageInput | undefined,
  outMsgs: readonly RebuildMessageInput[],
): RebuildResult {
  try {
    return rebuildTransactionUnsafe(tx, inMsg, outMsgs);
  } catch {
    return { ok: false, failure: { kind: "transaction", reason: "missing-field" } };
  }
}

/** The message's kind as the writer leaves it recognisable: ext-in has no source and no created_lt, ext-out no dest. */
export function messageKind(msg: Pick<MessageRow, "source" | "destination" | "created_lt">): MessageKind {
  if (msg.source === null && msg.created_lt === null) return "external-in";
  if (msg.destination === null) return "external-out";
  return "internal";
}

/** Rebuilds one message cell with its failure reason. Never throws. */
export function rebuildMessage(msg: RebuildMessageInput, direction: "in" | "out" = "in"): RebuildResult {
  const fail = (reason: MessageFailureReason): RebuildResult => ({
    ok: false,
    failure: { kind: "message", msgHash: msg.msg_hash, direction, reason },
  });
  try {
    const expected = hashBytes(msg.msg_hash);
    if (expected === undefined) return fail("missing-field");
    const kind = messageKind(msg);
    const writeInfo = messageInfoWriter(msg, kind);
    if (typeof writeInfo === "string") return fail(writeInfo);
    // Written once and copied into each candidate: @ton/core writes integers bit by bit.
    const infoBuilder = beginCell();
    writeInfo(infoBuilder);
    const info = infoBuilder.endCell();

    if (msg.body_hash === null || msg.body === null) return fail("missing-content");
    const body = parseBoc(msg.body);
    if (body === undefined) return fail("missing-content");
    let init: Cell | undefined;
    if (msg.init_state_hash !== null) {
      if (msg.init_state_body === null) return fail("missing-content");
      init = parseBoc(msg.init_state_body);
      if (init === undefined) return fail("missing-content");
    }

    // Nothing stored says whether init and body sat inline or behind a reference: try each layout (at most 4
    // cells), the usual one first, and keep the one with the stored hash.
    const initLayouts: readonly ("none" | "inline" | "ref")[] =
      init === undefined ? ["none"] : kind === "internal" ? ["ref", "inline"] : ["inline", "ref"];
    const bodyLayouts: readonly ("inline" | "ref")[] = kind === "internal" ? ["ref", "inline"] : ["inline", "ref"];
    for (const initLayout of initLayouts) {
      for (const bodyLayout of bodyLayouts) {
        const cell = messageCandidate(info, init, initLayout, body, bodyLayout);
        if (cell !== undefined && cell.hash().equals(expected)) return { ok: true, cell };
      }
    }
    return fail("hash-mismatch");
  } catch {
    return fail("missing-field");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Messages

type Writer = (b: Builder) => void;

function messageCandidate(
  info: Cell,
  init: Cell | undefined,
  initLayout: "none" | "inline" | "ref",
  body: Cell,
  bodyLayout: "inline" | "ref",
): Cell | undefined {
  try {
    const b = beginCell().storeSlice(info.beginParse());
    if (init === undefined || initLayout === "none") {
      b.storeBit(0);
    } else if (initLayout === "inline") {
      if (init.isExotic) return undefined;
      b.storeBit(1).storeBit(0).storeSlice(init.beginParse());
    } else {
      b.storeBit(1).storeBit(1).storeRef(init);
    }
    if (bodyLayout === "inline") {
      // The writer saved an inline body as a new (ordinary) cell holding exactly the remaining bits and refs.
      if (body.isExotic) return undefined;
      if (b.availableBits < 1 + body.bits.length || b.availableRefs < body.refs.length) return undefined;
      b.storeBit(0).storeSlice(body.beginParse());
    } else {
      if (b.availableBits < 1 || b.availableRefs < 1) return undefined;
      b.storeBit(1).storeRef(body);
    }
    return b.endCell();
  } catch {
    return undefined;
  }
}

/** CommonMsgInfo as a writer, or why it cannot be written. */
function messageInfoWriter(msg: RebuildMessageInput, kind: MessageKind): Writer | MessageFailureReason {
  switch (kind) {
    case "internal": {
      const src = parseStdAddress(msg.source);
      const dest = parseStdAddress(msg.destination);
      if (src === undefined || dest === undefined) return "unsupported-address";
      const value = amount(msg.value);
      const extra = extraCurrencies(msg.value_extra_currencies);
      // The third-from-last field is ihr_fee before global version 12 and extra_flags from it on; the writer keeps
      // the raw field in exactly one of the two columns.
      const third = amount(msg.extra_flags ?? msg.ihr_fee);
      const fwdFee = amount(msg.fwd_fee);
      const createdLt = uint(msg.created_lt, 64);
      const createdAt = uint(msg.created_at, 32);
      if (
        msg.ihr_disabled === null ||
        msg.bounce === null ||
        msg.bounced === null ||
        value === undefined ||
        extra === undefined ||
        third === undefined ||
        fwdFee === undefined ||
        createdLt === undefined ||
        createdAt === undefined
      ) {
        return "missing-field";
      }
      const { ihr_disabled: ihrDisabled, bounce, bounced } = msg;
      return (b) => {
        b.storeBit(0).storeBit(ihrDisabled).storeBit(bounce).storeBit(bounced);
        storeStdAddress(b, src);
        storeStdAddress(b, dest);
        b.storeCoins(value);
        storeExtraCurrencies(b, extra);
        b.storeCoins(third).storeCoins(fwdFee).storeUint(createdLt, 64).storeUint(createdAt, 32);
      };
    }
    case "external-in": {
      // The source is not stored (NULL): addr_none is assumed, the only form seen in practice.
      const dest = parseStdAddress(msg.destination);
      if (dest === undefined) return "unsupported-address";
      const importFee = amount(msg.import_fee);
      if (importFee === undefined) return "missing-field";
      return (b) => {
        b.storeUint(0b10, 2).storeUint(0b00, 2);
        storeStdAddress(b, dest);
        b.storeCoins(importFee);
      };
    }
    case "external-out": {
      // The destination is not stored (NULL for addr_none and addr_extern alike): addr_none is assumed.
      const src = parseStdAddress(msg.source);
      if (src === undefined) return "unsupported-address";
      const createdLt = uint(msg.created_lt, 64);
      const createdAt = uint(msg.created_at, 32);
      if (createdLt === undefined || createdAt === undefined) return "missing-field";
      return (b) => {
        b.storeUint(0b11, 2);
        storeStdAddress(b, src);
        b.storeUint(0b00, 2).storeUint(createdLt, 64).storeUint(createdAt, 32);
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Transaction

const accountStatusBits: Record<string, number> = { uninit: 0b00, frozen: 0b01, active: 0b10, nonexist: 0b11 };

function rebuildTransactionUnsafe(
  tx: RebuildTransactionInput,
  inMsg: RebuildMessageInput | undefined,
  outMsgs: readonly RebuildMessageInput[],
): RebuildResult {
  const fail = (reason: TransactionFailureReason): RebuildResult => ({ ok: false, failure: { kind: "transaction", reason } });
  const expected = hashBytes(tx.hash);
  if (expected === undefined) return fail("missing-field");
  if (tx.descr === "split_install" || tx.descr === "merge_install") return fail("unsupported-descr");

  let inCell: Cell | undefined;
  if (inMsg !== undefined) {
    const result = rebuildMessage(inMsg, "in");
    if (!result.ok) return result;
    inCell = result.cell;
  }
  if (outMsgs.length >= 1 << 15) return fail("missing-field");
  const outDict = Dictionary.empty(Dictionary.Keys.Uint(15), Dictionary.Values.Cell());
  for (const [i, msg] of outMsgs.entries()) {
    const result = rebuildMessage(msg, "out");
    if (!result.ok) return result;
    outDict.set(i, result.cell);
  }

  const account = parseStdAddress(tx.account);
  const lt = uint(tx.lt, 64);
  const prevHash = hashBytes(tx.prev_trans_hash);
  const prevLt = uint(tx.prev_trans_lt, 64);
  const now = uint(tx.now, 32);
  const origStatus = tx.orig_status === null ? undefined : accountStatusBits[tx.orig_status];
  const endStatus = tx.end_status === null ? undefined : accountStatusBits[tx.end_status];
  const totalFees = amount(tx.total_fees);
  const totalFeesExtra = extraCurrencies(tx.total_fees_extra_currencies);
  const before = hashBytes(tx.account_state_hash_before);
  const after = hashBytes(tx.account_state_hash_after);
  if (
    account === undefined ||
    lt === undefined ||
    prevHash === undefined ||
    prevLt === undefined ||
    now === undefined ||
    origStatus === undefined ||
    endStatus === undefined ||
    totalFees === undefined ||
    totalFeesExtra === undefined ||
    before === undefined ||
    after === undefined
  ) {
    return fail("missing-field");
  }

  const messages = beginCell()
    .storeMaybeRef(inCell ?? null)
    .storeDict(outDict)
    .endCell();
  const stateUpdate = beginCell().storeUint(0x72, 8).storeBuffer(before).storeBuffer(after).endCell();

  const inKind = inMsg === undefined ? undefined : messageKind(inMsg);
  // Written as stored first; old writer versions swapped gas_fees and gas_used, so a VM compute phase gets a
  // second try with the two exchanged (at most 2 candidate cells).
  const attempts = tx.compute_skipped === false ? [false, true] : [false];
  for (const swapGas of attempts) {
    const descr = descriptionCell(tx, inKind, inMsg, swapGas);
    if (descr === undefined) return fail("missing-field");
    const b = beginCell()
      .storeUint(0b0111, 4)
      .storeBuffer(account.hash)
      .storeUint(lt, 64)
      .storeBuffer(prevHash)
      .storeUint(prevLt, 64)
      .storeUint(now, 32)
      .storeUint(outMsgs.length, 15)
      .storeUint(origStatus, 2)
      .storeUint(endStatus, 2)
      .storeRef(messages)
      .storeCoins(totalFees);
    storeExtraCurrencies(b, totalFeesExtra);
    const cell = b.storeRef(stateUpdate).storeRef(descr).endCell();
    if (cell.hash().equals(expected)) return { ok: true, cell, gasSwapped: swapGas };
  }
  return fail("hash-mismatch");
}

/** TransactionDescr, or undefined when a column it needs is missing. */
function descriptionCell(
  tx: RebuildTransactionInput,
  inKind: MessageKind | undefined,
  inMsg: RebuildMessageInput | undefined,
  swapGas: boolean,
): Cell | undefined {
  const b = beginCell();
  switch (tx.descr) {
    case "ord": {
      if (tx.credit_first === null || tx.aborted === null || tx.destroyed === null) return undefined;
      b.storeUint(0b0000, 4).storeBit(tx.credit_first);
      if (!storeMaybeStoragePhase(b, tx)) return undefined;
      // A credit phase exists exactly when the in-message is internal. The credit columns of external-in
      // transactions may hold '{}' or (2024 writer) uninitialised garbage, so they are not trusted for presence.
      if (inKind === "internal") {
        b.storeBit(1);
        if (!storeCreditPhase(b, tx, inMsg)) return undefined;
      } else {
        b.storeBit(0);
      }
      if (!storeComputePhase(b, tx, swapGas)) return undefined;
      if (!storeMaybeActionPhase(b, tx)) return undefined;
      b.storeBit(tx.aborted);
      if (!storeMaybeBouncePhase(b, tx)) return undefined;
      b.storeBit(tx.destroyed);
      return b.endCell();
    }
    case "storage": {
      b.storeUint(0b0001, 4);
      return storeStoragePhase(b, tx) ? b.endCell() : undefined;
    }
    case "tick_tock": {
      if (tx.is_tock === null || tx.aborted === null || tx.destroyed === null) return undefined;
      b.storeUint(0b001, 3).storeBit(tx.is_tock);
      if (!storeStoragePhase(b, tx) || !storeComputePhase(b, tx, swapGas) || !storeMaybeActionPhase(b, tx)) return undefined;
      b.storeBit(tx.aborted).storeBit(tx.destroyed);
      return b.endCell();
    }
    case "split_prepare": {
      if (tx.aborted === null || tx.destroyed === null) return undefined;
      b.storeUint(0b0100, 4);
      if (!storeSplitInfo(b, tx) || !storeMaybeStoragePhase(b, tx)) return undefined;
      if (!storeComputePhase(b, tx, swapGas) || !storeMaybeActionPhase(b, tx)) return undefined;
      b.storeBit(tx.aborted).storeBit(tx.destroyed);
      return b.endCell();
    }
    case "merge_prepare": {
      if (tx.aborted === null) return undefined;
      b.storeUint(0b0110, 4);
      if (!storeSplitInfo(b, tx) || !storeStoragePhase(b, tx)) return undefined;
      b.storeBit(tx.aborted);
      return b.endCell();
    }
    default:
      return undefined;
  }
}

const statusChangeBits: Record<string, [number, number]> = {
  unchanged: [0b0, 1],
  frozen: [0b10, 2],
  deleted: [0b11, 2],
};

function storeStatusChange(b: Builder, change: string | null): boolean {
  const bits = change === null ? undefined : statusChangeBits[change];
  if (bits === undefined) return false;
  b.storeUint(bits[0], bits[1]);
  return true;
}

function storeMaybeStoragePhase(b: Builder, tx: RebuildTransactionInput): boolean {
  if (tx.storage_status_change === null) {
    b.storeBit(0);
    return true;
  }
  b.storeBit(1);
  return storeStoragePhase(b, tx);
}

function storeStoragePhase(b: Builder, tx: RebuildTransactionInput): boolean {
  const collected = amount(tx.storage_fees_collected);
  if (collected === undefined) return false;
  b.storeCoins(collected);
  if (!storeMaybeCoins(b, tx.storage_fees_due)) return false;
  return storeStatusChange(b, tx.storage_status_change);
}

function storeCreditPhase(b: Builder, tx: RebuildTransactionInput, inMsg: RebuildMessageInput | undefined): boolean {
  if (!storeMaybeCoins(b, tx.credit_due_fees_collected)) return false;
  let credit = amount(tx.credit);
  let extra = extraCurrencies(tx.credit_extra_currencies);
  if (credit === undefined) {
    // Not stored (or did not fit bigint): what the node credits is the message value less the due fees collected.
    const value = amount(inMsg?.value ?? null);
    const due = tx.credit_due_fees_collected === null ? 0n : amount(tx.credit_due_fees_collected);
    if (value === undefined || due === undefined || value < due) return false;
    credit = value - due;
    extra = extraCurrencies(inMsg?.value_extra_currencies ?? null);
  }
  if (extra === undefined) return false;
  b.storeCoins(credit);
  storeExtraCurrencies(b, extra);
  return true;
}

function storeComputePhase(b: Builder, tx: RebuildTransactionInput, swapGas: boolean): boolean {
  if (tx.compute_skipped === null) return false;
  if (tx.compute_skipped) {
    switch (tx.skipped_reason) {
      case "no_state":
        b.storeUint(0b000, 3);
        return true;
      case "bad_state":
        b.storeUint(0b001, 3);
        return true;
      case "no_gas":
        b.storeUint(0b010, 3);
        return true;
      case "suspended":
        b.storeUint(0b0110, 4);
        return true;
      default:
        return false;
    }
  }
  const gasFees = amount(swapGas ? tx.compute_gas_used : tx.compute_gas_fees);
  const gasUsed = amount(swapGas ? tx.compute_gas_fees : tx.compute_gas_used);
  const gasLimit = amount(tx.compute_gas_limit);
  const steps = uint(tx.compute_vm_steps, 32);
  const initHash = hashBytes(tx.compute_vm_init_state_hash);
  const finalHash = hashBytes(tx.compute_vm_final_state_hash);
  if (
    tx.compute_success === null ||
    tx.compute_msg_state_used === null ||
    tx.compute_account_activated === null ||
    gasFees === undefined ||
    gasUsed === undefined ||
    gasLimit === undefined ||
    tx.compute_mode === null ||
    tx.compute_exit_code === null ||
    steps === undefined ||
    initHash === undefined ||
    finalHash === undefined
  ) {
    return false;
  }
  const details = beginCell().storeVarUint(gasUsed, 3).storeVarUint(gasLimit, 3);
  if (tx.compute_gas_credit === null) details.storeBit(0);
  else details.storeBit(1).storeVarUint(BigInt(tx.compute_gas_credit), 2);
  details.storeInt(tx.compute_mode, 8).storeInt(tx.compute_exit_code, 32);
  if (tx.compute_exit_arg === null) details.storeBit(0);
  else details.storeBit(1).storeInt(tx.compute_exit_arg, 32);
  details.storeUint(steps, 32).storeBuffer(initHash).storeBuffer(finalHash);
  b.storeBit(1)
    .storeBit(tx.compute_success)
    .storeBit(tx.compute_msg_state_used)
    .storeBit(tx.compute_account_activated)
    .storeCoins(gasFees)
    .storeRef(details.endCell());
  return true;
}

function storeMaybeActionPhase(b: Builder, tx: RebuildTransactionInput): boolean {
  if (tx.action_success === null) {
    b.storeBit(0);
    return true;
  }
  const listHash = hashBytes(tx.action_action_list_hash);
  const cells = amount(tx.action_tot_msg_size_cells);
  const bits = amount(tx.action_tot_msg_size_bits);
  if (
    tx.action_valid === null ||
    tx.action_no_funds === null ||
    tx.action_result_code === null ||
    tx.action_tot_actions === null ||
    tx.action_spec_actions === null ||
    tx.action_skipped_actions === null ||
    tx.action_msgs_created === null ||
    listHash === undefined ||
    cells === undefined ||
    bits === undefined
  ) {
    return false;
  }
  const a = beginCell().storeBit(tx.action_success).storeBit(tx.action_valid).storeBit(tx.action_no_funds);
  if (!storeStatusChange(a, tx.action_status_change)) return false;
  if (!storeMaybeCoins(a, tx.action_total_fwd_fees) || !storeMaybeCoins(a, tx.action_total_action_fees)) return false;
  a.storeInt(tx.action_result_code, 32);
  if (tx.action_result_arg === null) a.storeBit(0);
  else a.storeBit(1).storeInt(tx.action_result_arg, 32);
  a.storeUint(tx.action_tot_actions, 16)
    .storeUint(tx.action_spec_actions, 16)
    .storeUint(tx.action_skipped_actions, 16)
    .storeUint(tx.action_msgs_created, 16)
    .storeBuffer(listHash)
    .storeVarUint(cells, 3)
    .storeVarUint(bits, 3);
  b.storeBit(1).storeRef(a.endCell());
  return true;
}

function storeMaybeBouncePhase(b: Builder, tx: RebuildTransactionInput): boolean {
  if (tx.bounce === null) {
    b.storeBit(0);
    return true;
  }
  b.storeBit(1);
  if (tx.bounce === "negfunds") {
    b.storeUint(0b00, 2);
    return true;
  }
  const cells = amount(tx.bounce_msg_size_cells);
  const bits = amount(tx.bounce_msg_size_bits);
  if (cells === undefined || bits === undefined) return false;
  if (tx.bounce === "nofunds") {
    const required = amount(tx.bounce_req_fwd_fees);
    if (required === undefined) return false;
    b.storeUint(0b01, 2).storeVarUint(cells, 3).storeVarUint(bits, 3).storeCoins(required);
    return true;
  }
  if (tx.bounce === "ok") {
    const msgFees = amount(tx.bounce_msg_fees);
    const fwdFees = amount(tx.bounce_fwd_fees);
    if (msgFees === undefined || fwdFees === undefined) return false;
    b.storeBit(1).storeVarUint(cells, 3).storeVarUint(bits, 3).storeCoins(msgFees).storeCoins(fwdFees);
    return true;
  }
  return false;
}

function storeSplitInfo(b: Builder, tx: RebuildTransactionInput): boolean {
  // The writer stores this_addr / sibling_addr (bits256) in base64, as it does every 256-bit value.
  const thisAddr = bits256(tx.split_info_this_addr);
  const siblingAddr = bits256(tx.split_info_sibling_addr);
  const pfxLen = tx.split_info_cur_shard_pfx_len;
  const depth = tx.split_info_acc_split_depth;
  if (pfxLen === null || depth === null || thisAddr === undefined || siblingAddr === undefined) return false;
  b.storeUint(pfxLen, 6).storeUint(depth, 6).storeBuffer(thisAddr).storeBuffer(siblingAddr);
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Column decoding

type ExtraCurrencies = Map<number, bigint>;

function storeMaybeCoins(b: Builder, value: string | null): boolean {
  if (value === null) {
    b.storeBit(0);
    return true;
  }
  const parsed = amount(value);
  if (parsed === undefined) return false;
  b.storeBit(1).storeCoins(parsed);
  return true;
}

/** ExtraCurrencyCollection = HashmapE 32 (VarUInteger 32). */
function storeExtraCurrencies(b: Builder, extra: ExtraCurrencies): void {
  if (extra.size === 0) {
    b.storeBit(0);
    return;
  }
  const dict = Dictionary.empty(Dictionary.Keys.Uint(32), Dictionary.Values.BigVarUint(5));
  for (const [id, value] of extra) dict.set(id, value);
  b.storeDict(dict);
}

/** A jsonb {id: amount} map (NULL and {} both mean none); undefined if malformed. */
function extraCurrencies(json: unknown): ExtraCurrencies | undefined {
  const map: ExtraCurrencies = new Map();
  if (json === null || json === undefined) return map;
  const object = typeof json === "string" ? (JSON.parse(json) as unknown) : json;
  if (typeof object !== "object" || object === null || Array.isArray(object)) return undefined;
  for (const [key, value] of Object.entries(object)) {
    const id = Number(key);
    const parsed = typeof value === "string" || typeof value === "number" ? amount(String(value)) : undefined;
    if (!Number.isInteger(id) || id < 0 || id > 0xffffffff || parsed === undefined) return undefined;
    map.set(id, parsed);
  }
  return map;
}

const decimal = /^\d+$/;

/** A non-negative integer column (int8 as decimal string, or a number); undefined for NULL or anything else. */
function amount(value: string | number | null | undefined): bigint | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value);
  return decimal.test(text) ? BigInt(text) : undefined;
}

function uint(value: string | number | null | undefined, bits: number): bigint | undefined {
  const parsed = amount(value);
  return parsed !== undefined && parsed < 1n << BigInt(bits) ? parsed : undefined;
}

interface StdAddress {
  workchain: number;
  hash: Buffer;
}

const rawAddress = /^(-?\d{1,3}):([0-9a-fA-F]{64})$/;

/** "wc:HEX" (addr_std without anycast); undefined for NULL, addr_none, addr_extern, addr_var or a bad form. */
function parseStdAddress(value: string | null): StdAddress | undefined {
  if (value === null) return undefined;
  const match = rawAddress.exec(value);
  if (!match) return undefined;
  const workchain = Number(match[1]);
  if (workchain < -128 || workchain > 127) return undefined;
  return { workchain, hash: Buffer.from(match[2] as string, "hex") };
}

function storeStdAddress(b: Builder, address: StdAddress): void {
  b.storeUint(0b10, 2).storeBit(0).storeInt(address.workchain, 8).storeBuffer(address.hash);
}

const base64Hash = /^[A-Za-z0-9+/]{43}=$/;

/** A tonhash column (padded base64 of 32 bytes) as bytes. */
function hashBytes(value: string | null): Buffer | undefined {
  if (value === null || !base64Hash.test(value)) return undefined;
  return Buffer.from(value, "base64");
}

/** 256 bits stored as base64 (the writer's form) or, defensively, hex. */
function bits256(value: string | null): Buffer | undefined {
  if (value === null) return undefined;
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, "hex");
  return hashBytes(value);
}

function parseBoc(base64: string): Cell | undefined {
  try {
    const roots = Cell.fromBoc(Buffer.from(base64, "base64"));
    return roots.length === 1 ? roots[0] : undefined;
  } catch {
    return undefined;
  }
}
