import { Address } from "@ton/core";

// The justified exception list of the conformance tests (contract.md §4). Our JSON is compared with a
// recording after exactly these adjustments; everything else must be equal.

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Fields we return that a recording may lack, compared only where it has them:
 * - added by toncenter after some recordings were made: total_fees_extra_currencies, emulated, finality,
 *   value_extra_currencies, extra_flags, decoded_opcode, extra_currencies (AccountState), domain and
 *   interfaces (address_book);
 * - listed by the interface document but not emitted by the recorded toncenter versions (contract.md §3):
 *   trace_external_hash, in_msg_tx_hash, out_msg_tx_hash, code_boc, data_boc.
 */
const fieldsNewerThanSomeRecordings = {
  transaction: ["total_fees_extra_currencies", "emulated", "finality", "trace_external_hash"],
  message: ["value_extra_currencies", "extra_flags", "decoded_opcode", "in_msg_tx_hash", "out_msg_tx_hash"],
  accountState: ["extra_currencies", "code_boc", "data_boc"],
  addressBookRow: ["domain", "interfaces"],
} as const;

function dropFieldsTheRecordingLacks(ours: Json, recorded: Json, fields: readonly string[]): Json {
  const out = { ...ours };
  for (const field of fields) if (!(field in recorded)) delete out[field];
  return out;
}

/** What the decoded-body exceptions did, for the conformance report (test/decoded-bodies.test.ts). */
export const decodedTally = {
  /** Current-form objects (with "@type"), compared as they are. */
  currentForm: 0,
  /** 2024–25 objects ({"type": T, "data": {...}}) whose constructor T is ours. */
  olderFormSameConstructor: 0,
  olderFormOtherConstructor: [] as string[],
  /** MyTonWallet captures holding only one key/value of the object, a key ours has. */
  firstKeyCaptures: 0,
  /** Comments recorded before "@type" was added beside "type". */
  olderComments: 0,
  /** Bodies recorded as null by a toncenter older than its decoding of them. */
  recordedNullDecodedNow: [] as string[],
};

/**
 * Our `decoded` against a recording's. Current-form objects must be equal as they are; the exceptions are
 * forms of the same value that older toncenter versions, or the tools that captured them, wrote differently.
 */
function conformDecoded(ours: unknown, recorded: unknown): unknown {
  if (!isObject(recorded)) {
    // Toncenter versions before late 2025 decoded fewer bodies (wallet requests, bounces, empty cells and most
    // families came later; text comments only, in the oldest): a recorded null where ours decodes is version drift.
    if (recorded === null && isObject(ours)) {
      decodedTally.recordedNullDecodedNow.push(String(ours["@type"]));
      return null;
    }
    return ours;
  }
  if (!isObject(ours)) return ours;
  if ("@type" in recorded) {
    decodedTally.currentForm++;
    return ours;
  }
  if (recorded.type === "text_comment" && ours["@type"] === "text_comment" && !("data" in recorded)) {
    // ton-indexer PR #315 (2025-10) added "@type" beside the old "type".
    decodedTally.olderComments++;
    const { "@type": _type, ...older } = ours;
    return older;
  }
  if (typeof recorded.type === "string" && recorded.type !== ours["@type"] && recorded.type in ours) {
    // A MyTonWallet capture artefact: {"type": one key of the object, "data": its value}, in the current form
    // or (for 2024–25 captures) the older one.
    decodedTally.firstKeyCaptures++;
    return recorded;
  }
  if (recorded.type === ours["@type"]) {
    // The 2024–25 form of the same constructor (internal_address wrappers, bare Maybe strings, an empty cell as
    // {"type":"empty_cell","data":""}): version drift.
    decodedTally.olderFormSameConstructor++;
    return recorded;
  }
  decodedTally.olderFormOtherConstructor.push(`${String(recorded.type)} → ${String(ours["@type"])}`);
  return ours;
}

function conformBody(ours: unknown, recorded: unknown): unknown {
  if (!isObject(ours) || !isObject(recorded)) return ours;
  return { ...ours, decoded: conformDecoded(ours.decoded, recorded.decoded) };
}

function conformMessage(ours: unknown, recorded: unknown): unknown {
  if (!isObject(ours) || !isObject(recorded)) return ours;
  const out = dropFieldsTheRecordingLacks(ours, recorded, fieldsNewerThanSomeRecordings.message);
  // Toncenter before ton-marker's null for unknown opcodes (2025-10) wrote an empty string.
  if (out.decoded_opcode === null && recorded.decoded_opcode === "") out.decoded_opcode = "";
  out.message_content = conformBody(out.message_content, recorded.message_content);
  out.init_state = conformBody(out.init_state, recorded.init_state);
  return out;
}

function conformState(ours: unknown, recorded: unknown): unknown {
  if (!isObject(ours) || !isObject(recorded)) return ours;
  return dropFieldsTheRecordingLacks(ours, recorded, fieldsNewerThanSomeRecordings.accountState);
}

const maxBigint = 2n ** 63n - 1n;

function conformDescription(ours: unknown, recorded: unknown): unknown {
  if (!isObject(ours) || !isObject(recorded)) return ours;
  const out = { ...ours };
  const [ourCompute, theirCompute] = [out.compute_ph, recorded.compute_ph];
  // Mid-2024 toncenter wrote an executed compute phase as {type: "vm", ...} instead of {skipped: false, ...}.
  if (isObject(ourCompute) && isObject(theirCompute) && theirCompute.type === "vm" && !("skipped" in theirCompute)) {
    const { skipped: _skipped, ...rest } = ourCompute;
    out.compute_ph = { ...rest, type: "vm" };
  }
  // 2024 toncenter wrote a skipped compute phase as {type: "skipped", skip_reason} instead of {skipped: true, reason}.
  if (
    isObject(ourCompute) &&
    isObject(theirCompute) &&
    theirCompute.type === "skipped" &&
    ourCompute.skipped === true &&
    ourCompute.reason === theirCompute.skip_reason &&
    Object.keys(ourCompute).every((key) => key === "skipped" || key === "reason")
  ) {
    out.compute_ph = theirCompute;
  }
  // A credit above 2^63-1 (seen on testnet) does not fit the index's bigint column; the worker stores NULL.
  const [ourCredit, theirCredit] = [out.credit_ph, recorded.credit_ph];
  if (isObject(ourCredit) && isObject(theirCredit) && typeof theirCredit.credit === "string" && BigInt(theirCredit.credit) > maxBigint) {
    out.credit_ph = { ...ourCredit, credit: theirCredit.credit };
  }
  return out;
}

export function conformTransaction(ours: Json, recorded: Json): Json {
  const out = dropFieldsTheRecordingLacks(ours, recorded, fieldsNewerThanSomeRecordings.transaction);
  out.description = conformDescription(out.description, recorded.description);
  out.in_msg = conformMessage(out.in_msg, recorded.in_msg);
  const recordedOut = Array.isArray(recorded.out_msgs) ? recorded.out_msgs : [];
  if (Array.isArray(out.out_msgs)) out.out_msgs = out.out_msgs.map((m, i) => conformMessage(m, recordedOut[i]));
  out.account_state_before = conformState(out.account_state_before, recorded.account_state_before);
  out.account_state_after = conformState(out.account_state_after, recorded.account_state_after);
  return out;
}

function sameAccount(a: unknown, b: unknown): boolean {
  if (typeof a !== "string" || typeof b !== "string") return false;
  try {
    return Address.parseFriendly(a).address.equals(Address.parseFriendly(b).address);
  } catch {
    return false;
  }
}

/** `accountHasState`: whether the recordings carry a state of this account (one of its transactions). */
export function conformAddressBookRow(ours: Json, recorded: Json, accountHasState: boolean): Json {
  const out = dropFieldsTheRecordingLacks(ours, recorded, fieldsNewerThanSomeRecordings.addressBookRow);
  // Bounceability follows the account's code hash; for an account no recording carries a state of, the index
  // has none, and toncenter's rule for unknown accounts gives the non-bounceable form of the same address.
  if (!accountHasState && out.user_friendly !== recorded.user_friendly && sameAccount(out.user_friendly, recorded.user_friendly)) {
    out.user_friendly = recorded.user_friendly;
  }
  // Domains come from dns_entries, and no recording carries the DNS items behind its address_book domains.
  if (out.domain === null && typeof recorded.domain === "string") out.domain = recorded.domain;
  // Interfaces found from get-method lists need the contract_methods table, which no recording carries;
  // only interfaces found by code hash can be reproduced.
  if (out.interfaces !== recorded.interfaces && !(Array.isArray(out.interfaces) && out.interfaces.length > 0)) out.interfaces = recorded.interfaces;
  return out;
}

/**
 * Action fields toncenter added after some recordings were made: finality (2026), the trace_* fields and
 * extra-currency details (the January-2024 capture predates them), the marketplace columns of nft_transfer
 * (DB 1.2.2, later than the August-2025 captures).
 */
const actionFieldsNewerThanSomeRecordings = [
  "finality",
  "trace_end_lt",
  "trace_end_utime",
  "trace_mc_seqno_end",
  "trace_external_hash",
  "trace_external_hash_norm",
];
const actionDetailsNewerThanSomeRecordings = [
  "extra_currencies",
  "value_extra_currencies",
  "marketplace_address",
  "payout_amount",
  "payout_address",
  "payout_comment",
  "payout_comment_encrypted",
  "payout_comment_encoded",
  "royalty_amount",
  "royalty_address",
];

export function conformAction(ours: Json, recorded: Json): Json {
  const out = dropFieldsTheRecordingLacks(ours, recorded, actionFieldsNewerThanSomeRecordings);
  if (isObject(out.details) && isObject(recorded.details)) {
    const details = dropFieldsTheRecordingLacks(out.details, recorded.details, actionDetailsNewerThanSomeRecordings);
    // toncenter renamed the provider tonstakers to liquid_staking after the 2025 captures.
    if (details.provider === "liquid_staking" && recorded.details.provider === "tonstakers") details.provider = "tonstakers";
    out.details = details;
  }
  return out;
}

export function conformTrace(ours: Json, recorded: Json): Json {
  const out = { ...ours };
  // Some recordings were made without include_actions (the response then has no actions key).
  if (!("actions" in recorded)) delete out.actions;
  if (Array.isArray(out.actions) && Array.isArray(recorded.actions)) {
    // Actions are ordered by (start_lt, end_lt); toncenter leaves ties in the database's order, we break them
    // by action_id. Within a tie, take the recording's order.
    const theirs = recorded.actions as Json[];
    const recordedPosition = new Map(theirs.map((action, i) => [action.action_id, i]));
    const tieKey = (action: Json) => `${action.start_lt}:${action.end_lt}`;
    const ours = [...(out.actions as Json[])].sort((a, b) =>
      tieKey(a) === tieKey(b) ? (recordedPosition.get(a.action_id) ?? 0) - (recordedPosition.get(b.action_id) ?? 0) : 0,
    );
    out.actions = ours.map((action, i) => conformAction(action, theirs[i] ?? {}));
  }
  if (isObject(out.transactions) && isObject(recorded.transactions)) {
    const theirs = recorded.transactions;
    out.transactions = Object.fromEntries(
      Object.entries(out.transactions).map(([hash, tx]) => [hash, conformTransaction(tx as Json, (theirs[hash] ?? {}) as Json)]),
    );
  }
  return out;
}

/**
 * A metadata entry. A jetton wallet's balance is the one of the day the recording was made; recordings of
 * different days disagree, and the index keeps one of them. A 2024 recording predates token_info.valid.
 */
export function conformMetadata(ours: Json, recorded: Json): Json {
  const theirs = Array.isArray(recorded.token_info) ? (recorded.token_info as Json[]) : [];
  const tokenInfo = Array.isArray(ours.token_info) ? (ours.token_info as Json[]) : [];
  return {
    ...ours,
    token_info: tokenInfo.map((ourInfo, i) => {
      const other = theirs[i];
      const info = isObject(other) ? dropFieldsTheRecordingLacks(ourInfo, other, ["valid"]) : ourInfo;
      if (info.type !== "jetton_wallets" || !isObject(other) || !isObject(info.extra) || !isObject(other.extra)) return info;
      return { ...info, extra: { ...info.extra, balance: other.extra.balance } };
    }),
  };
}

/**
 * A v2 getBlockTransactionsExt result. `abbreviated`: the recording's author kept only some fields of each
 * transaction (its SOURCES.md entry says so); only those are compared.
 * - "@extra" echoes the request's session and differs on every call;
 * - the 2026 (C++ ton-http-api) recordings type transactions "raw.transactionExt" and print a missing in_msg as
 *   null; we follow the complete recording and the contract: "raw.transaction", key absent;
 * - the 2024 recording predates raw.message's hash and extra_currencies;
 * - a `data` cut short by the recording's author ("...") cannot be compared.
 */
export function conformBlockTransactionsExt(ours: Json, recorded: Json, abbreviated = false): Json {
  const out: Json = { ...ours };
  if ("@extra" in recorded) out["@extra"] = recorded["@extra"];
  else delete out["@extra"];
  const theirs = Array.isArray(recorded.transactions) ? (recorded.transactions as Json[]) : [];
  if (Array.isArray(out.transactions)) {
    out.transactions = (out.transactions as Json[]).map((tx, i) => conformRawTransaction(tx, theirs[i] ?? {}, abbreviated));
  }
  return out;
}

function conformRawTransaction(ours: Json, recorded: Json, abbreviated: boolean): Json {
  let out: Json = { ...ours };
  if (recorded["@type"] === "raw.transactionExt") out["@type"] = recorded["@type"];
  if (recorded.in_msg === null && !("in_msg" in out)) out.in_msg = null;
  if (typeof recorded.data === "string" && recorded.data.endsWith("...")) out.data = recorded.data;
  const messages = (value: unknown, theirs: unknown) => (isObject(value) && isObject(theirs) ? conformRawMessage(value, theirs, abbreviated) : value);
  out.in_msg = messages(out.in_msg, recorded.in_msg);
  if (out.in_msg === undefined) delete out.in_msg;
  const theirOut = Array.isArray(recorded.out_msgs) ? recorded.out_msgs : [];
  if (Array.isArray(out.out_msgs)) out.out_msgs = out.out_msgs.map((m, i) => messages(m, theirOut[i]));
  if (abbreviated) out = keepRecordedKeys(out, recorded);
  return out;
}

function conformRawMessage(ours: Json, recorded: Json, abbreviated: boolean): Json {
  const out = dropFieldsTheRecordingLacks(ours, recorded, ["hash", "extra_currencies"]);
  return abbreviated ? keepRecordedKeys(out, recorded) : out;
}

/** For abbreviated recordings: the keys the author kept, at every level. Addresses were cut to their text. */
function keepRecordedKeys(ours: Json, recorded: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(recorded)) {
    const mine = ours[key];
    if (isObject(mine) && isObject(value)) out[key] = keepRecordedKeys(mine, value);
    else if (isObject(mine) && typeof value === "string" && typeof mine.account_address === "string") out[key] = mine.account_address;
    else out[key] = mine;
  }
  return out;
}
