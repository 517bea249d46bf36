// JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of the REST bodies, written by hand from the presenters that
// print them: src/present/v3/block.ts, src/present/v3/transaction.ts, src/present/v3/trace.ts,
// src/actions/present.ts and src/present/v2/block-transactions.ts.
//
// Why by hand: the legacy JSON is not the protobuf JSON of the typed API. Its names are snake_case, absent values
// are null here and left out there, v3 shards are unsigned hex, v2 objects carry tonlib's "@type", some 64-bit
// values are numbers and some strings. A generator over proto/ (protoc-gen-openapi, connect's OpenAPI plugins)
// would describe the Connect API, not these bodies. So every object here lists exactly the keys its presenter
// writes (additionalProperties: false), the keys it always writes are required, and a presenter that changes a
// body makes test/openapi.test.ts fail against the demo until this file follows.

export type Schema = { [keyword: string]: unknown };

const componentRef = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

/** The schema, or null. */
export function nullable(schema: Schema): Schema {
  if (schema.$ref !== undefined) return { anyOf: [schema, { type: "null" }] };
  const { type, enum: values, ...rest } = schema;
  return {
    ...rest,
    type: [type, "null"],
    ...(Array.isArray(values) ? { enum: [...values, null] } : {}),
  };
}

/** An object with exactly these keys; all required but the `optional` ones. */
export function object(properties: Record<string, Schema>, optional: readonly string[] = [], extra: Schema = {}): Schema {
  return {
    type: "object",
    ...extra,
    required: Object.keys(properties).filter((key) => !optional.includes(key)),
    properties,
    additionalProperties: false,
  };
}

/** A JSON object used as a map: keys matching `keyPattern`, every value `value`. */
export function map(keyPattern: string, value: Schema, description: string): Schema {
  return { type: "object", description, propertyNames: { pattern: keyPattern }, additionalProperties: value };
}

// Scalars, by what the index holds in them.

const int32: Schema = { type: "integer", format: "int32" };
const boolean: Schema = { type: "boolean" };
const text: Schema = { type: "string" };
/** A 64-bit integer printed as a decimal string (JavaScript numbers cannot hold them). */
const int64String: Schema = { type: "string", pattern: "^-?[0-9]+$", description: "64-bit integer as a decimal string" };
/** A 32-byte hash in the index's form: standard padded base64. */
export const hashBase64: Schema = { type: "string", pattern: "^[A-Za-z0-9+/]{43}=$", description: "32-byte hash, standard base64" };
/** An address as the index stores it: `workchain:HEX`. */
export const rawAddress: Schema = { type: "string", pattern: "^-?[0-9]+:[0-9A-F]{64}$", description: "raw address `workchain:HEX`" };
const rawAddressKey = "^-?[0-9]+:[0-9A-F]{64}$";
const base64Boc: Schema = { type: "string", contentEncoding: "base64", description: "bag of cells, base64" };
const accountStatus: Schema = { type: "string", enum: ["uninit", "frozen", "active", "nonexist"] };
const extraCurrencies = map("^-?[0-9]+$", { type: "string", pattern: "^[0-9]+$" }, "extra currency amounts (decimal strings) by currency id");

const blockRef = object({
  workchain: int32,
  shard: { type: "string", pattern: "^[0-9A-F]{1,16}$", description: "shard id as unsigned upper-case hex (the masterchain is 8000000000000000)" },
  seqno: int32,
});

const block = object({
  ...(blockRef.properties as Record<string, Schema>),
  root_hash: nullable(hashBase64),
  file_hash: nullable(hashBase64),
  global_id: nullable(int32),
  version: nullable(int32),
  after_merge: nullable(boolean),
  before_split: nullable(boolean),
  after_split: nullable(boolean),
  want_merge: nullable(boolean),
  want_split: nullable(boolean),
  key_block: nullable(boolean),
  vert_seqno_incr: nullable(boolean),
  flags: nullable(int32),
  gen_utime: nullable(int64String),
  start_lt: nullable(int64String),
  end_lt: nullable(int64String),
  validator_list_hash_short: nullable(int32),
  gen_catchain_seqno: nullable(int32),
  min_ref_mc_seqno: nullable(int32),
  prev_key_block_seqno: nullable(int32),
  vert_seqno: nullable(int32),
  master_ref_seqno: nullable(int32),
  rand_seed: nullable(hashBase64),
  created_by: nullable(hashBase64),
  tx_count: nullable(int32),
  masterchain_block_ref: nullable(componentRef("BlockRef")),
  prev_blocks: { type: "array", items: componentRef("BlockRef") },
});

const decodedBody: Schema = {
  type: ["object", "null"],
  description:
    "The body decoded against tonquery's TL-B schema, as toncenter shows it: the constructor under `@type`, fields by their TL-B names, " +
    "integers as decimal strings, nested payloads decoded in place. Free-form; null when the body does not decode (or DECODE_BODIES=false).",
  required: ["@type"],
  properties: { "@type": text },
};

const messageBody = object({
  hash: hashBase64,
  body: nullable(base64Boc),
  decoded: decodedBody,
});

const message = object(
  {
    hash: hashBase64,
    source: nullable({ ...rawAddress, description: "null for an external inbound message" }),
    destination: nullable({ ...rawAddress, description: "null for an external outbound message" }),
    value: nullable(int64String),
    value_extra_currencies: nullable(extraCurrencies),
    fwd_fee: nullable(int64String),
    ihr_fee: nullable(int64String),
    extra_flags: nullable(int64String),
    created_lt: nullable(int64String),
    created_at: nullable(int64String),
    opcode: nullable({ type: "string", pattern: "^0x[0-9a-f]{8}$", description: "first 32 bits of the body" }),
    decoded_opcode: nullable({ ...text, description: "name of the opcode's message in tonquery's schema" }),
    ihr_disabled: nullable(boolean),
    bounce: nullable(boolean),
    bounced: nullable(boolean),
    import_fee: nullable(int64String),
    message_content: nullable(componentRef("MessageBody")),
    init_state: nullable(componentRef("MessageBody")),
    hash_norm: { ...hashBase64, description: "TEP-467 normalised hash of an external inbound message, when it differs from `hash`" },
    in_msg_tx_hash: nullable({ ...hashBase64, description: "the transaction that received this message, where indexed" }),
    out_msg_tx_hash: nullable({ ...hashBase64, description: "the transaction that sent this message, where indexed" }),
  },
  ["hash_norm"],
);

const accountState = object({
  hash: hashBase64,
  balance: nullable(int64String),
  extra_currencies: nullable(extraCurrencies),
  account_status: nullable(accountStatus),
  frozen_hash: nullable(hashBase64),
  data_hash: nullable(hashBase64),
  code_hash: nullable(hashBase64),
  code_boc: { type: "null", description: "per-transaction states keep no BOCs in the index" },
  data_boc: { type: "null", description: "per-transaction states keep no BOCs in the index" },
});

const messageSize = object({ cells: int64String, bits: int64String });

/** Optional everywhere: a phase, or a field of one, that the index did not record is left out, as toncenter does. */
function allOptional(properties: Record<string, Schema>, required: readonly string[] = []): Schema {
  return object(
    properties,
    Object.keys(properties).filter((key) => !required.includes(key)),
  );
}

const description = allOptional(
  {
    type: { type: "string", enum: ["ord", "storage", "tick_tock", "split_prepare", "split_install", "merge_prepare", "merge_install"] },
    aborted: boolean,
    destroyed: boolean,
    credit_first: boolean,
    is_tock: boolean,
    installed: boolean,
    storage_ph: allOptional({
      storage_fees_collected: int64String,
      storage_fees_due: int64String,
      status_change: { type: "string", enum: ["unchanged", "frozen", "deleted"] },
    }),
    credit_ph: allOptional({ due_fees_collected: int64String, credit: int64String, credit_extra_currencies: extraCurrencies }),
    compute_ph: allOptional({
      skipped: boolean,
      reason: { type: "string", enum: ["no_state", "bad_state", "no_gas", "suspended"] },
      success: boolean,
      msg_state_used: boolean,
      account_activated: boolean,
      gas_fees: int64String,
      gas_used: int64String,
      gas_limit: int64String,
      gas_credit: int64String,
      mode: int32,
      exit_code: int32,
      exit_arg: int32,
      vm_steps: { type: "integer", minimum: 0 },
      vm_init_state_hash: hashBase64,
      vm_final_state_hash: hashBase64,
    }),
    action: allOptional({
      success: boolean,
      valid: boolean,
      no_funds: boolean,
      status_change: { type: "string", enum: ["unchanged", "frozen", "deleted"] },
      total_fwd_fees: int64String,
      total_action_fees: int64String,
      result_code: int32,
      result_arg: int32,
      tot_actions: int32,
      spec_actions: int32,
      skipped_actions: int32,
      msgs_created: int32,
      action_list_hash: hashBase64,
      tot_msg_size: componentRef("MessageSize"),
    }),
    bounce: allOptional(
      {
        type: { type: "string", enum: ["negfunds", "nofunds", "ok"] },
        msg_size: componentRef("MessageSize"),
        req_fwd_fees: int64String,
        msg_fees: int64String,
        fwd_fees: int64String,
      },
      ["type"],
    ),
    split_info: allOptional({ cur_shard_pfx_len: int32, acc_split_depth: int32, this_addr: text, sibling_addr: text }),
  },
  ["type"],
);

const transaction = object(
  {
    account: rawAddress,
    hash: hashBase64,
    lt: int64String,
    now: nullable(int32),
    mc_block_seqno: nullable(int32),
    trace_id: hashBase64,
    prev_trans_hash: nullable(hashBase64),
    prev_trans_lt: nullable(int64String),
    orig_status: nullable(accountStatus),
    end_status: nullable(accountStatus),
    total_fees: nullable(int64String),
    total_fees_extra_currencies: nullable(extraCurrencies),
    description: nullable(componentRef("TransactionDescription")),
    block_ref: nullable(componentRef("BlockRef")),
    in_msg: nullable(componentRef("Message")),
    out_msgs: { type: "array", items: componentRef("Message"), description: "ordered by created_lt" },
    account_state_before: nullable(componentRef("AccountState")),
    account_state_after: nullable(componentRef("AccountState")),
    emulated: { const: false },
    finality: { const: "finalized" },
    trace_external_hash: nullable({ ...hashBase64, description: "external_hash of the trace the transaction belongs to" }),
  },
  // Left out for a transaction the index has not assigned to a trace yet.
  ["trace_id"],
);

const addressBook = map(
  rawAddressKey,
  object({
    user_friendly: nullable({ type: "string", description: "base64url; non-bounceable for wallets and accounts without code" }),
    domain: nullable({ type: "string", description: "the shortest .ton domain resolving to the address" }),
    interfaces: nullable({ type: "array", items: text, description: "contract interfaces detected from code hash or get-methods" }),
  }),
  "every address the response mentions, by raw address",
);

const tokenInfo = object(
  {
    valid: boolean,
    type: { type: "string", enum: ["jetton_masters", "jetton_wallets", "nft_items", "nft_collections"] },
    name: text,
    symbol: text,
    description: text,
    image: text,
    nft_index: int64String,
    is_nsfw: boolean,
    is_scam: boolean,
    extra: { type: "object", description: "further off-chain metadata, free-form" },
  },
  ["valid", "name", "symbol", "description", "image", "nft_index", "is_nsfw", "is_scam", "extra"],
);

const metadata = map(
  rawAddressKey,
  object({ is_indexed: boolean, token_info: { type: "array", items: componentRef("TokenInfo") } }),
  "token metadata of every token contract the response mentions, by raw address",
);

const action = object(
  {
    trace_id: hashBase64,
    action_id: hashBase64,
    start_lt: nullable(int64String),
    end_lt: nullable(int64String),
    start_utime: nullable({ type: "integer" }),
    end_utime: nullable({ type: "integer" }),
    trace_end_lt: nullable(int64String),
    trace_end_utime: nullable({ type: "integer" }),
    trace_mc_seqno_end: nullable(int32),
    transactions: { type: "array", items: hashBase64 },
    success: boolean,
    type: { type: "string", description: "ton_transfer, jetton_transfer, jetton_swap, ... (see supported_action_types)" },
    details: { type: "object", description: "per-type details, exactly as toncenter's action details; free-form" },
    raw_action: { type: "object", description: "the stored action as is, only for a type this service does not render" },
    trace_external_hash: hashBase64,
    trace_external_hash_norm: hashBase64,
    accounts: { type: "array", items: rawAddress },
    finality: { const: "finalized" },
  },
  ["raw_action", "trace_external_hash", "trace_external_hash_norm", "accounts"],
);

const traceNode = object(
  {
    tx_hash: hashBase64,
    in_msg_hash: { ...hashBase64, description: "left out for a root without an inbound message (tick-tock)" },
    children: {
      type: ["array", "null"],
      items: componentRef("TraceNode"),
      description: "in lt order; [] for a transaction without outbound messages, null for one whose messages went nowhere indexed",
    },
  },
  ["in_msg_hash"],
);

/** The JSON strings a trace's `mc_seqno_*` are printed as, as toncenter prints them. */
const seqnoString: Schema = { type: "string", pattern: "^-?[0-9]+$" };

export function traceSchema(tooLargeWarning: string): Schema {
  return object(
    {
      trace_id: hashBase64,
      external_hash: nullable(hashBase64),
      mc_seqno_start: nullable(seqnoString),
      mc_seqno_end: nullable(seqnoString),
      start_lt: nullable(int64String),
      start_utime: nullable(int32),
      end_lt: nullable(int64String),
      end_utime: nullable(int32),
      trace_info: object({
        trace_state: nullable({ type: "string", description: "complete, pending or broken" }),
        messages: { type: "integer", minimum: 0 },
        transactions: { type: "integer", minimum: 0 },
        pending_messages: { type: "integer", minimum: 0 },
        classification_state: nullable({ type: "string", description: "unclassified, failed, ok or broken" }),
      }),
      is_incomplete: { type: "boolean", description: "true for a trace with more transactions than MAX_TRACE_TRANSACTIONS: it then has no tree and no transactions" },
      warning: { type: "string", description: `"${tooLargeWarning}", or a problem found while assembling the tree` },
      actions: { type: "array", items: componentRef("Action"), description: "only with include_actions=true" },
      trace: componentRef("TraceNode"),
      transactions_order: { type: "array", items: hashBase64, description: "the transactions' hashes in trace order (by lt)" },
      transactions: map("^[A-Za-z0-9+/]{43}=$", componentRef("Transaction"), "the trace's transactions by hash"),
    },
    ["warning", "actions", "trace", "transactions_order", "transactions"],
    {
      // A complete trace carries its transactions; an incomplete one only its header.
      if: { properties: { is_incomplete: { const: false } } },
      then: { required: ["transactions_order", "transactions"] },
      else: { required: ["warning"], not: { anyOf: [{ required: ["trace"] }, { required: ["transactions"] }] } },
    },
  );
}

const v2AccountAddress = object({
  "@type": { const: "accountAddress" },
  account_address: { type: "string", description: "user-friendly, bounceable, url-safe; empty for the missing side of an external message" },
});

const v2Message = object({
  "@type": { const: "raw.message" },
  hash: hashBase64,
  source: componentRef("V2AccountAddress"),
  destination: componentRef("V2AccountAddress"),
  value: int64String,
  extra_currencies: { type: "array", items: object({ "@type": { const: "extraCurrency" }, id: int32, amount: { type: "string", pattern: "^[0-9]+$" } }) },
  fwd_fee: int64String,
  ihr_fee: int64String,
  created_lt: int64String,
  body_hash: hashBase64,
  msg_data: {
    oneOf: [
      object({ "@type": { const: "msg.dataRaw" }, body: base64Boc, init_state: { ...base64Boc, description: "empty without a state init" } }),
      object({ "@type": { const: "msg.dataText" }, text: { type: "string", contentEncoding: "base64", description: "the comment's UTF-8 bytes, base64" } }),
      object({ "@type": { const: "msg.dataEncryptedText" }, text: { type: "string", contentEncoding: "base64" } }),
    ],
  },
});

const v2Transaction = object(
  {
    "@type": { const: "raw.transaction" },
    address: componentRef("V2AccountAddress"),
    utime: { type: "integer", minimum: 0 },
    data: { ...base64Boc, description: "the transaction's BOC, rebuilt from the index; empty when it cannot be rebuilt exactly" },
    transaction_id: object({ "@type": { const: "internal.transactionId" }, lt: int64String, hash: hashBase64 }),
    fee: int64String,
    storage_fee: int64String,
    other_fee: int64String,
    in_msg: { ...componentRef("V2Message"), description: "left out for a transaction without an inbound message (tick-tock)" },
    out_msgs: { type: "array", items: componentRef("V2Message") },
    account: rawAddress,
  },
  ["in_msg"],
);

const blockTransactionsExt = object({
  "@type": { const: "blocks.transactionsExt" },
  id: object({
    "@type": { const: "ton.blockIdExt" },
    workchain: int32,
    shard: { ...int64String, description: "signed 64-bit shard id, decimal" },
    seqno: int32,
    root_hash: hashBase64,
    file_hash: hashBase64,
  }),
  req_count: { type: "integer", minimum: 1 },
  incomplete: { type: "boolean", description: "the block has more transactions after this page" },
  transactions: { type: "array", items: componentRef("V2Transaction") },
  "@extra": text,
});

/** Every body schema, by the name it has under #/components/schemas. */
export function bodySchemas(tooLargeWarning: string): Record<string, Schema> {
  return {
    BlockRef: blockRef,
    Block: block,
    MasterchainInfo: object({ last: componentRef("Block"), first: componentRef("Block") }),
    MessageBody: messageBody,
    Message: message,
    AccountState: accountState,
    MessageSize: messageSize,
    TransactionDescription: description,
    Transaction: transaction,
    AddressBook: addressBook,
    TokenInfo: tokenInfo,
    Metadata: metadata,
    TransactionsResponse: object({ transactions: { type: "array", items: componentRef("Transaction") }, address_book: componentRef("AddressBook") }),
    Action: action,
    TraceNode: traceNode,
    Trace: traceSchema(tooLargeWarning),
    TracesResponse: object({
      traces: { type: "array", items: componentRef("Trace") },
      address_book: componentRef("AddressBook"),
      metadata: componentRef("Metadata"),
      next_cursor: {
        type: ["string", "null"],
        description: "tonquery's own: the `cursor` of the next page; null after the last page (one shorter than `limit`)",
      },
    }),
    V2AccountAddress: v2AccountAddress,
    V2Message: v2Message,
    V2Transaction: v2Transaction,
    V2BlockTransactionsExt: blockTransactionsExt,
    V2BlockTransactionsExtResult: object({ ok: { const: true }, result: componentRef("V2BlockTransactionsExt") }),
    Error: object({ error: { type: "string", description: "what went wrong, in toncenter's words where toncenter has them" } }),
    V2Error: object({ ok: { const: false }, error: text, code: { type: "integer", description: "the HTTP status, repeated" } }),
    Health: object({ status: { const: "ok" } }),
    HealthUnavailable: object({ status: { const: "unavailable" }, error: { const: "database unavailable" } }),
  };
}
