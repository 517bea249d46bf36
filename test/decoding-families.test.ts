import { Address, beginCell, type Builder, Cell, Dictionary, internal, storeMessageRelaxed, toNano } from "@ton/core";
import { describe, expect, it } from "vitest";
import { MessageBodyDecoder } from "../src/decoding/message-body.ts";

// The message families of multisig.tlb, vesting.tlb, nominators.tlb, payments.tlb, storage.tlb and
// staking-more.tlb: bodies built as their contracts build them, decoded as toncenter prints them.

const decoder = new MessageBodyDecoder();

const alice = Address.parse("EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs");
const bob = Address.parse("EQDtFpEwcFAEcRe5mLVh2N6C0x-_hJEM7W61_JLnSF74p4q2");
const carol = Address.parse("Ef8zMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM0vF");
const printed = (address: Address) => ({
  "@type": "addr_std",
  anycast: { "@type": "nothing_from_maybe" },
  workchain_id: String(address.workChain),
  address: address.hash.toString("hex").toUpperCase(),
});

const boc = (cell: Cell) => cell.toBoc().toString("base64");
const hex = (byte: number, bytes: number) => Buffer.alloc(bytes, byte);
const hexOf = (byte: number, bytes: number) => hex(byte, bytes).toString("hex").toUpperCase();
const header = (opcode: number, queryId = 777n) => beginCell().storeUint(opcode, 32).storeUint(queryId, 64);
const signatureCell = (byte: number) => beginCell().storeBuffer(hex(byte, 64)).endCell();

/** The same body cut short: its first 52 bits (the opcode and 20 bits into its first field), no references. */
function truncated(cell: Cell): string {
  return boc(beginCell().storeBits(cell.bits.substring(0, 52)).endCell());
}

const transfer = beginCell()
  .store(storeMessageRelaxed(internal({ to: bob, value: toNano("1.5"), bounce: true, body: "hi" })))
  .endCell();

function order(...actions: Cell[]): Cell {
  const dict = Dictionary.empty(Dictionary.Keys.Uint(8), Dictionary.Values.Cell());
  actions.forEach((action, index) => dict.set(index, action));
  return beginCell().storeDictDirect(dict).endCell();
}
function addresses(...list: Address[]): Cell {
  const dict = Dictionary.empty(Dictionary.Keys.Uint(8), Dictionary.Values.Address());
  list.forEach((item, index) => dict.set(index, item));
  return beginCell().storeDictDirect(dict).endCell();
}
const sendAction = beginCell().storeUint(0xf1381e5b, 32).storeUint(3, 8).storeRef(transfer).endCell();
const updateAction = beginCell()
  .storeUint(0x1d0cfbd3, 32)
  .storeUint(2, 8)
  .storeRef(addresses(alice, bob, carol))
  .storeDict(Dictionary.empty(Dictionary.Keys.Uint(8), Dictionary.Values.Address()).set(0, carol))
  .endCell();

const newStakeFields = (b: Builder) =>
  b.storeBuffer(hex(0xaa, 32)).storeUint(1_700_000_000, 32).storeUint(196608, 32).storeBuffer(hex(0xbb, 32)).storeRef(signatureCell(0x5a));

const semiChannel = (seqno: number) =>
  beginCell()
    .storeBuffer(hex(0x11, 64))
    .storeUint(0x43685374, 32)
    .storeUint(42n, 128)
    .storeUint(seqno, 64)
    .storeCoins(toNano("0.25"))
    .storeBit(false)
    .storeBit(false)
    .endCell();

const torrentInfo = beginCell().storeUint(1 << 17, 32).storeUint(123456n, 64).storeBuffer(hex(0x33, 32)).endCell();

interface Case {
  readonly name: string;
  readonly opcode: number;
  readonly body: Cell;
}
const cases: Case[] = [
  // multisig.tlb
  { name: "multisig_new_order", opcode: 0xf718510f, body: header(0xf718510f).storeUint(5, 256).storeBit(true).storeUint(1, 8).storeUint(1_800_000_000, 48).storeRef(order(sendAction, updateAction)).endCell() },
  { name: "multisig_execute", opcode: 0x75097f5d, body: header(0x75097f5d).storeUint(5, 256).storeUint(1_800_000_000, 48).storeUint(2, 8).storeBuffer(hex(0xcd, 32)).storeRef(order(sendAction)).endCell() },
  { name: "multisig_execute_internal", opcode: 0xa32c59bf, body: header(0xa32c59bf).storeRef(order(sendAction)).endCell() },
  { name: "multisig_init", opcode: 0x9c73fba2, body: header(0x9c73fba2).storeUint(2, 8).storeRef(addresses(alice, bob)).storeUint(1_800_000_000, 48).storeRef(order(sendAction)).storeBit(true).storeUint(1, 8).endCell() },
  { name: "multisig_approve", opcode: 0xa762230f, body: header(0xa762230f).storeUint(1, 8).endCell() },
  { name: "multisig_approve_accepted", opcode: 0x82609bf6, body: header(0x82609bf6).endCell() },
  { name: "multisig_approve_rejected", opcode: 0xafaf283e, body: header(0xafaf283e).storeUint(107, 32).endCell() },
  // vesting.tlb
  { name: "vesting_add_whitelist", opcode: 0x7258a69b, body: header(0x7258a69b).storeAddress(alice).storeRef(beginCell().storeAddress(bob).storeRef(beginCell().storeAddress(carol))).endCell() },
  { name: "vesting_add_whitelist_response", opcode: 0xf258a69b, body: header(0xf258a69b).endCell() },
  { name: "vesting_send_message", opcode: 0xa7733acd, body: header(0xa7733acd).storeUint(3, 8).storeRef(transfer).endCell() },
  { name: "vesting_send_message_response", opcode: 0xf7733acd, body: header(0xf7733acd).endCell() },
  // nominators.tlb
  { name: "elector_new_stake", opcode: 0x4e73744b, body: newStakeFields(header(0x4e73744b, 1_700_000_000n)).endCell() },
  { name: "elector_new_stake_ok", opcode: 0xf374484c, body: header(0xf374484c).storeUint(0, 32).endCell() },
  { name: "elector_new_stake_error", opcode: 0xee6f454c, body: header(0xee6f454c).storeUint(1, 32).endCell() },
  { name: "elector_recover_stake", opcode: 0x47657424, body: header(0x47657424).endCell() },
  { name: "elector_recover_stake_ok", opcode: 0xf96f7324, body: header(0xf96f7324).endCell() },
  { name: "elector_recover_stake_error", opcode: 0xfffffffe, body: header(0xfffffffe).storeUint(0x47657424, 32).endCell() },
  { name: "single_nominator_withdraw", opcode: 0x1000, body: header(0x1000).storeCoins(toNano("150000")).endCell() },
  { name: "single_nominator_change_validator", opcode: 0x1001, body: header(0x1001).storeAddress(carol).endCell() },
  { name: "single_nominator_send_raw_msg", opcode: 0x7702, body: header(0x7702).storeUint(64, 8).storeRef(transfer).endCell() },
  { name: "single_nominator_upgrade", opcode: 0x9903, body: header(0x9903).storeRef(beginCell().storeUint(0xff00f4a4, 32)).endCell() },
  // payments.tlb
  { name: "payment_channel_top_up_balance", opcode: 0x67c7d281, body: beginCell().storeUint(0x67c7d281, 32).storeCoins(toNano("3")).storeCoins(0n).endCell() },
  { name: "payment_channel_init", opcode: 0x0e0620c2, body: beginCell().storeUint(0x0e0620c2, 32).storeBit(true).storeBuffer(hex(0x22, 64)).storeUint(0x696e6974, 32).storeUint(42n, 128).storeCoins(toNano("3")).storeCoins(toNano("1")).endCell() },
  { name: "payment_channel_cooperative_close", opcode: 0x5577587e, body: beginCell().storeUint(0x5577587e, 32).storeRef(signatureCell(1)).storeRef(signatureCell(2)).storeUint(0x436c6f73, 32).storeUint(42n, 128).storeCoins(toNano("2")).storeCoins(toNano("2")).storeUint(7, 64).storeUint(9, 64).endCell() },
  { name: "payment_channel_cooperative_commit", opcode: 0x79a126ef, body: beginCell().storeUint(0x79a126ef, 32).storeRef(signatureCell(1)).storeRef(signatureCell(2)).storeUint(0x43436d74, 32).storeUint(42n, 128).storeUint(7, 64).storeUint(9, 64).endCell() },
  { name: "payment_channel_start_uncooperative_close", opcode: 0x1f151acf, body: beginCell().storeUint(0x1f151acf, 32).storeBit(true).storeBuffer(hex(0x22, 64)).storeUint(0x556e436c, 32).storeUint(42n, 128).storeRef(semiChannel(7)).storeRef(semiChannel(9)).endCell() },
  { name: "payment_channel_challenge_quarantined_state", opcode: 0x088eaa32, body: beginCell().storeUint(0x088eaa32, 32).storeBit(false).storeBuffer(hex(0x22, 64)).storeUint(0x43686751, 32).storeUint(42n, 128).storeRef(semiChannel(8)).storeRef(semiChannel(10)).endCell() },
  { name: "payment_channel_settle_conditionals", opcode: 0x66f6f069, body: beginCell().storeUint(0x66f6f069, 32).storeBit(true).storeBuffer(hex(0x22, 64)).storeUint(0x436c436e, 32).storeUint(42n, 128).storeBit(false).endCell() },
  { name: "payment_channel_finish_uncooperative_close", opcode: 0x25432a91, body: beginCell().storeUint(0x25432a91, 32).endCell() },
  { name: "payment_channel_closed", opcode: 0xdddc88ba, body: beginCell().storeUint(0xdddc88ba, 32).storeUint(42n, 128).endCell() },
  // storage.tlb
  { name: "storage_offer_storage_contract", opcode: 0x107c49ef, body: header(0x107c49ef).storeRef(torrentInfo).storeBuffer(hex(0x44, 32)).storeCoins(1_000_000n).storeUint(86400, 32).endCell() },
  { name: "storage_update_pubkey", opcode: 0x53f34cd6, body: header(0x53f34cd6).storeBuffer(hex(0x55, 32)).endCell() },
  { name: "storage_update_storage_params", opcode: 0x54cbf19b, body: header(0x54cbf19b).storeBit(true).storeCoins(1_000_000n).storeUint(86400, 32).storeUint(1024, 64).storeUint(1n << 40n, 64).endCell() },
  { name: "storage_close_contract", opcode: 0x79f937ea, body: header(0x79f937ea).endCell() },
  // staking-more.tlb
  { name: "hipo_finance_proxy_tokens_minted", opcode: 0x5be57626, body: header(0x5be57626).storeCoins(toNano("95")).storeCoins(toNano("100")).storeAddress(alice).storeUint(1_700_000_000, 32).endCell() },
  { name: "hipo_finance_proxy_save_coins", opcode: 0x47daa10f, body: header(0x47daa10f).storeCoins(toNano("100")).storeAddress(alice).storeUint(1_700_000_000, 32).endCell() },
  { name: "hipo_finance_save_coins", opcode: 0x4cce0e74, body: header(0x4cce0e74).storeCoins(toNano("100")).storeAddress(alice).storeUint(1_700_000_000, 32).endCell() },
  { name: "hipo_finance_proxy_reserve_tokens", opcode: 0x688b0213, body: header(0x688b0213).storeCoins(toNano("95")).storeAddress(alice).storeUint(0, 4).storeCoins(toNano("0.05")).endCell() },
  { name: "hipo_finance_reserve_tokens", opcode: 0x386a358b, body: header(0x386a358b).storeCoins(toNano("95")).storeAddress(alice).storeUint(1, 4).storeCoins(toNano("0.05")).endCell() },
  { name: "hipo_finance_mint_bill", opcode: 0x4b2d7871, body: header(0x4b2d7871).storeCoins(toNano("100")).storeBit(false).storeAddress(alice).storeAddress(bob).storeCoins(toNano("0.05")).endCell() },
  { name: "hipo_finance_assign_bill", opcode: 0x3275dfc2, body: header(0x3275dfc2).storeCoins(toNano("100")).storeBit(true).storeAddress(alice).storeAddress(bob).storeCoins(toNano("0.05")).endCell() },
  { name: "hipo_finance_bill_burned", opcode: 0x840f6369, body: header(0x840f6369).storeCoins(toNano("100")).storeBit(true).storeAddress(alice).storeAddress(bob).storeUint(12, 64).endCell() },
  { name: "hipo_finance_mint_tokens", opcode: 0x42684479, body: header(0x42684479).storeCoins(toNano("100")).storeAddress(alice).storeAddress(bob).storeUint(1_700_000_000, 32).endCell() },
  { name: "hipo_finance_burn_tokens", opcode: 0x7cffe1ee, body: header(0x7cffe1ee).storeCoins(toNano("95")).storeAddress(alice).storeAddress(bob).storeUint(1_700_000_000, 32).endCell() },
  { name: "hipo_finance_proxy_tokens_burned", opcode: 0x4476fde0, body: header(0x4476fde0).storeCoins(toNano("95")).storeCoins(toNano("100")).storeAddress(alice).endCell() },
  { name: "hipo_finance_tokens_burned", opcode: 0x5b512e25, body: header(0x5b512e25).storeCoins(toNano("95")).storeCoins(toNano("100")).endCell() },
  { name: "hipo_finance_withdrawal_notification", opcode: 0xf0fa223b, body: header(0xf0fa223b).storeCoins(toNano("95")).storeCoins(toNano("100")).endCell() },
  { name: "hipo_finance_proxy_rollback_unstake", opcode: 0x32b67194, body: header(0x32b67194).storeCoins(toNano("95")).storeAddress(alice).endCell() },
  { name: "hipo_finance_rollback_unstake", opcode: 0x1b77fd1a, body: header(0x1b77fd1a).storeCoins(toNano("95")).endCell() },
];

describe("new message families", () => {
  it("load with the rest of the schema", () => {
    expect(new MessageBodyDecoder().opcodeName(0xf718510f)).toBe("multisig_new_order");
  });

  for (const { name, opcode, body } of cases) {
    it(`${name}: decodes, names its opcode, and a truncated body does not decode`, () => {
      expect(decoder.decodeBody(boc(body))?.["@type"]).toBe(name);
      expect(decoder.opcodeName(opcode)).toBe(name);
      if (body.bits.length > 52) expect(decoder.decodeBody(truncated(body))).toBeUndefined();
    });
  }
});

describe("printed in full", () => {
  const decode = (name: string) => decoder.decodeBody(boc((cases.find((c) => c.name === name) as Case).body));
  const coins = (len: string, value: string) => ({ "@type": "nanocoins", amount: { "@type": "var_uint", len, value } });
  const grams = (len: string, value: string) => ({ "@type": "nanograms", amount: { "@type": "var_uint", len, value } });
  const transferPrinted = {
    "@type": "message",
    info: {
      "@type": "int_msg_info",
      ihr_disabled: true,
      bounce: true,
      bounced: false,
      src: { "@type": "addr_none" },
      dest: printed(bob),
      value: { "@type": "currencies", grams: grams("4", "1500000000"), other: { "@type": "extra_currencies", dict: { "@type": "hashmap_empty" } } },
      ihr_fee: grams("0", "0"),
      fwd_fee: grams("0", "0"),
      created_lt: "0",
      created_at: "0",
    },
    init: { "@type": "nothing_from_maybe" },
    body: { "@type": "first_from_either", value: { "@type": "text_comment", text: "hi" } },
  };

  it("multisig_execute, with its order of one message", () => {
    expect(decode("multisig_execute")).toEqual({
      "@type": "multisig_execute",
      query_id: "777",
      order_seqno: "5",
      expiration_date: "1800000000",
      approvals_num: "2",
      signers_hash: hexOf(0xcd, 32),
      order: {
        "@type": "hashmap_edge",
        label: { "@type": "hashmap_label_same", v: { "@type": "bit", "": "0" }, n: "8" },
        node: {
          "@type": "hashmap_node_leaf",
          value: { cell_reference: { "@type": "multisig_send_message", mode: "3", message: transferPrinted } },
        },
      },
    });
  });

  it("multisig_approve_rejected", () => {
    expect(decode("multisig_approve_rejected")).toEqual({ "@type": "multisig_approve_rejected", query_id: "777", exit_code: "107" });
  });

  it("vesting_add_whitelist, its addresses chained through references", () => {
    expect(decode("vesting_add_whitelist")).toEqual({
      "@type": "vesting_add_whitelist",
      query_id: "777",
      addresses: { address: printed(alice), next: { address: printed(bob), next: { address: printed(carol) } } },
    });
  });

  it("vesting_send_message", () => {
    expect(decode("vesting_send_message")).toEqual({ "@type": "vesting_send_message", query_id: "777", send_mode: "3", message: transferPrinted });
  });

  it("elector_new_stake, as the elector receives it and as a nominator pool does", () => {
    const stake = {
      validator_pubkey: hexOf(0xaa, 32),
      stake_at: "1700000000",
      max_factor: "196608",
      adnl_addr: hexOf(0xbb, 32),
      signature: hexOf(0x5a, 64),
    };
    expect(decode("elector_new_stake")).toEqual({ "@type": "elector_new_stake", query_id: "1700000000", ...stake });
    const toPool = newStakeFields(header(0x4e73744b, 1_700_000_000n).storeCoins(toNano("300000"))).endCell();
    expect(decoder.decodeBody(boc(toPool))).toEqual({
      "@type": "elector_new_stake",
      query_id: "1700000000",
      stake_amount: coins("7", "300000000000000"),
      ...stake,
    });
  });

  it("single_nominator_change_validator", () => {
    expect(decode("single_nominator_change_validator")).toEqual({
      "@type": "single_nominator_change_validator",
      query_id: "777",
      new_validator_address: printed(carol),
    });
  });

  it("payment_channel_start_uncooperative_close, with both signed semi-channels", () => {
    const semi = (seqno: string) => ({
      signature: hexOf(0x11, 64),
      state: {
        tag: "1130910580",
        channel_id: "42",
        data: { seqno, sent: coins("4", "250000000"), conditionals: { "@type": "hashmap_empty" } },
        counterparty_data: { "@type": "nothing_from_maybe" },
      },
    });
    expect(decode("payment_channel_start_uncooperative_close")).toEqual({
      "@type": "payment_channel_start_uncooperative_close",
      signed_by_A: true,
      signature: hexOf(0x22, 64),
      tag: "1433289580",
      channel_id: "42",
      sch_A: semi("7"),
      sch_B: semi("9"),
    });
  });

  it("payment_channel_init", () => {
    expect(decode("payment_channel_init")).toEqual({
      "@type": "payment_channel_init",
      is_A: true,
      signature: hexOf(0x22, 64),
      tag: "1768843636",
      channel_id: "42",
      balance_A: coins("4", "3000000000"),
      balance_B: coins("4", "1000000000"),
    });
  });

  it("a payment-channel body whose signed tag is not its operation's does not decode", () => {
    const wrongTag = beginCell().storeUint(0x0e0620c2, 32).storeBit(true).storeBuffer(hex(0x22, 64)).storeUint(0x436c6f73, 32)
      .storeUint(42n, 128).storeCoins(1n).storeCoins(1n).endCell();
    expect(decoder.decodeBody(boc(wrongTag))).toBeUndefined();
  });

  it("storage_offer_storage_contract", () => {
    expect(decode("storage_offer_storage_contract")).toEqual({
      "@type": "storage_offer_storage_contract",
      query_id: "777",
      info: torrentInfo.toBoc({ idx: false, crc32: false }).toString("base64"),
      microchunk_hash: BigInt(`0x${hexOf(0x44, 32)}`).toString(),
      expected_rate: coins("3", "1000000"),
      expected_max_span: "86400",
    });
  });

  it("hipo_finance_bill_burned", () => {
    expect(decode("hipo_finance_bill_burned")).toEqual({
      "@type": "hipo_finance_bill_burned",
      query_id: "777",
      amount: coins("5", "100000000000"),
      unstake: true,
      owner: printed(alice),
      parent: printed(bob),
      index: "12",
    });
  });
});
