import { Address, beginCell, type Builder, Cell } from "@ton/core";
import { describe, expect, it } from "vitest";
import { loadSchema, MessageBodyDecoder, schemaFiles } from "../src/decoding/message-body.ts";

// dex-more.tlb (swap.coffee DEX and TONCO): bodies built as the contracts and SDKs build them, decoded with the
// project's schema; the baseline is the same schema without dex-more.tlb.

const decoder = new MessageBodyDecoder();
const baseline = new MessageBodyDecoder(loadSchema(schemaFiles.filter((file) => file !== "dex-more.tlb")));

const alice = Address.parse("EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs");
const bob = Address.parse("EQDtFpEwcFAEcRe5mLVh2N6C0x-_hJEM7W61_JLnSF74p4q2");
const printed = (address: Address) => ({
  "@type": "addr_std",
  anycast: { "@type": "nothing_from_maybe" },
  workchain_id: String(address.workChain),
  address: address.hash.toString("hex").toUpperCase(),
});
const coins = (value: bigint) => {
  const len = value === 0n ? 0 : Math.ceil(value.toString(16).length / 2);
  return { "@type": "nanocoins", amount: { "@type": "var_uint", len: String(len), value: value.toString() } };
};
const varUint = (value: bigint) => coins(value).amount;
const boc = (cell: Cell) => cell.toBoc().toString("base64");
const header = (opcode: number, queryId = 777n) => beginCell().storeUint(opcode, 32).storeUint(queryId, 64);
function truncated(cell: Cell): string {
  return boc(beginCell().storeBits(cell.bits.substring(0, 52)).endCell());
}
const nothing = { "@type": "nothing_from_maybe" };
const poolHash = BigInt(`0x${bob.hash.toString("hex")}`);
const jettonAsset = (b: Builder) => b.storeUint(1, 2).storeUint(0, 8).storeBuffer(alice.hash);
const poolParams = beginCell().storeUint(0, 2).store(jettonAsset).storeUint(0, 3).storeMaybeRef(null).endCell();
const poolParamsPrinted = {
  first: { "@type": "native" },
  second: { "@type": "jetton", chain: "0", hash: BigInt(`0x${alice.hash.toString("hex")}`).toString() },
  amm: { "@type": "constant_product" },
  amm_settings: nothing,
};
const depositParams = beginCell().storeAddress(alice).storeAddress(null).storeUint(1_700_000_000, 32).storeUint(0, 2).endCell();
const swapParams = beginCell().storeUint(1_700_000_000, 32).storeAddress(alice).storeAddress(null).storeMaybeRef(null).endCell();
const swapParamsPrinted = {
  deadline: "1700000000",
  recipient: printed(alice),
  referral: { "@type": "addr_none" },
  notification_data: nothing,
};
const step = (b: Builder) => b.storeUint(poolHash, 256).storeCoins(5000n).storeMaybeRef(null);
const stepPrinted = { pool_address_hash: poolHash.toString(), min_output_amount: coins(5000n), next: nothing };

interface Case {
  name: string;
  opcode: number;
  body: Cell;
  expected?: object;
}

const coffee: Case[] = [
  {
    name: "coffee_swap",
    opcode: 0xc0ffee00,
    body: header(0xc0ffee00).storeCoins(1_000_000_000n).store(step).storeRef(swapParams).endCell(),
    expected: {
      "@type": "coffee_swap",
      query_id: "777",
      amount: coins(1_000_000_000n),
      "": stepPrinted,
      params: swapParamsPrinted,
    },
  },
  { name: "coffee_swap_extra", opcode: 0xc0ffee01, body: header(0xc0ffee01).store(step).storeRef(swapParams).endCell() },
  {
    name: "coffee_deposit_liquidity",
    opcode: 0xc0ffee04,
    body: header(0xc0ffee04).storeCoins(3n).storeRef(depositParams).storeRef(poolParams).endCell(),
    expected: {
      "@type": "coffee_deposit_liquidity",
      query_id: "777",
      amount: coins(3n),
      params: depositParams.toBoc({ crc32: false }).toString("base64"),
      pool_params: poolParamsPrinted,
    },
  },
  {
    name: "coffee_deposit_liquidity_extra",
    opcode: 0xc0ffee05,
    body: header(0xc0ffee05).storeRef(depositParams).storeRef(poolParams).endCell(),
  },
  {
    name: "coffee_create_vault",
    opcode: 0xc0ffee06,
    body: header(0xc0ffee06).store(jettonAsset).endCell(),
  },
  { name: "coffee_withdraw_deposit", opcode: 0xc0ffee07, body: header(0xc0ffee07).endCell() },
  {
    name: "coffee_payout_internal",
    opcode: 0xc0ffee21,
    body: header(0xc0ffee21)
      .storeAddress(alice)
      .storeCoins(42n)
      .storeMaybeRef(beginCell().storeAddress(bob).storeRef(header(0xc0ffee32).endCell()).storeCoins(7n).endCell())
      .storeMaybeRef(beginCell().storeUint(5, 8).endCell())
      .endCell(),
  },
  { name: "coffee_create_vault_internal", opcode: 0xc0ffee2a, body: header(0xc0ffee2a).endCell() },
  { name: "coffee_activate_vault_internal", opcode: 0xc0ffee2c, body: header(0xc0ffee2c).storeAddress(bob).endCell() },
];

const tonco: Case[] = [
  {
    name: "tonco_pool_v3_swap",
    opcode: 0xa7fb58f8,
    body: header(0xa7fb58f8)
      .storeAddress(alice)
      .storeAddress(bob)
      .storeRef(beginCell().storeCoins(100n).storeUint(0, 160).storeCoins(90n).endCell())
      .storeRef(beginCell().storeAddress(alice).storeCoins(1n).storeMaybeRef(null).storeCoins(0n).storeMaybeRef(null).endCell())
      .endCell(),
    expected: {
      "@type": "tonco_pool_v3_swap",
      query_id: "777",
      owner_address: printed(alice),
      source_wallet: printed(bob),
      params_cell: { amount: varUint(100n), sqrt_price_limit_x96: "0", min_out_amount: varUint(90n) },
      payloads_cell: {
        target_address: printed(alice),
        ok_forward_amount: varUint(1n),
        ok_forward_payload: nothing,
        ret_forward_amount: varUint(0n),
        ret_forward_payload: nothing,
      },
    },
  },
  {
    name: "tonco_pool_v3_fund_account",
    opcode: 0x4468de77,
    body: header(0x4468de77)
      .storeAddress(alice)
      .storeCoins(1n)
      .storeCoins(2n)
      .storeCoins(3n)
      .storeCoins(4n)
      .storeUint(5n, 128)
      .storeInt(-60, 24)
      .storeInt(60, 24)
      .endCell(),
  },
  {
    name: "tonco_account_v3_add_liquidity",
    opcode: 0x3ebe5431,
    body: header(0x3ebe5431).storeCoins(1n).storeCoins(2n).storeCoins(3n).storeCoins(4n).storeUint(5n, 128).storeInt(-60, 24).storeInt(60, 24).endCell(),
  },
  { name: "tonco_account_v3_refund_me", opcode: 0x0bf3f447, body: header(0x0bf3f447).endCell() },
  {
    name: "tonco_pool_v3_start_burn",
    opcode: 0x530b5f2c,
    body: header(0x530b5f2c).storeUint(9, 64).storeUint(10n, 128).storeInt(-120, 24).storeInt(120, 24).endCell(),
  },
  {
    name: "tonco_pool_v3_burn",
    opcode: 0xd73ac09d,
    body: header(0xd73ac09d)
      .storeAddress(alice)
      .storeUint(9, 64)
      .storeUint(10n, 128)
      .storeInt(-120, 24)
      .storeInt(120, 24)
      .storeUint(4n, 128)
      .storeRef(beginCell().storeUint(1n, 256).storeUint(2n, 256).endCell())
      .storeRef(beginCell().storeUint(3n, 256).storeUint(4n, 256).endCell())
      .endCell(),
  },
  { name: "tonco_pool_v3_lock", opcode: 0xb1b0b7e2, body: header(0xb1b0b7e2).endCell() },
  { name: "tonco_pool_v3_unlock", opcode: 0x4e737e4d, body: header(0x4e737e4d).endCell() },
  {
    name: "tonco_pool_v3_set_fee",
    opcode: 0x6bdcbeb8,
    body: header(0x6bdcbeb8).storeUint(10, 16).storeUint(30, 16).storeUint(30, 16).endCell(),
  },
];

describe("dex-more.tlb message bodies", () => {
  for (const [family, cases] of [["swap.coffee", coffee], ["TONCO", tonco]] as const) {
    describe(family, () => {
      for (const c of cases) {
        it(c.name, () => {
          const decoded = decoder.decodeBody(boc(c.body));
          if (c.expected) expect(decoded).toEqual(c.expected);
          else expect(decoded?.["@type"]).toBe(c.name);
          expect(decoder.opcodeName(c.opcode)).toBe(c.name);
          expect(decoder.decodeBody(truncated(c.body))).toBeUndefined();
        });
      }
    });
  }

  it("reads the swap.coffee pool parameters written before the AMM settings reference", () => {
    const old = beginCell().storeUint(0, 2).store(jettonAsset).storeUint(1, 3).endCell();
    const body = header(0xc0ffee04).storeCoins(3n).storeRef(depositParams).storeRef(old).endCell();
    expect(decoder.decodeBody(boc(body))?.pool_params).toEqual({
      first: { "@type": "native" },
      second: poolParamsPrinted.second,
      amm: { "@type": "curve_fi_stable" },
    });
  });
});

describe("dex-more.tlb forward payloads", () => {
  const transfer = (payload: Cell) =>
    beginCell()
      .storeUint(0x0f8a7ea5, 32)
      .storeUint(1, 64)
      .storeCoins(1000n)
      .storeAddress(bob)
      .storeAddress(alice)
      .storeMaybeRef(null)
      .storeCoins(300_000_000n)
      .storeBit(1)
      .storeRef(payload)
      .endCell();

  it("coffee_swap in a jetton transfer to a vault", () => {
    const payload = beginCell().storeUint(0xc0ffee10, 32).store(step).storeRef(swapParams).endCell();
    expect(decoder.decodeBody(boc(payload))).toEqual({ "@type": "coffee_swap", "": stepPrinted, params: swapParamsPrinted });
    expect(decoder.opcodeName(0xc0ffee10)).toBeUndefined();
    expect(decoder.decodeBody(truncated(payload))).toBeUndefined();
    const decoded = decoder.decodeBody(boc(transfer(payload)));
    expect((decoded?.forward_payload as { value: { "@type": string } }).value["@type"]).toBe("coffee_swap");
  });

  it("coffee_deposit_liquidity in a jetton transfer to a vault", () => {
    const payload = beginCell().storeUint(0xc0ffee12, 32).storeRef(depositParams).storeRef(poolParams).endCell();
    expect(decoder.decodeBody(boc(payload))).toEqual({
      "@type": "coffee_deposit_liquidity",
      params: depositParams.toBoc({ crc32: false }).toString("base64"),
      pool_params: poolParamsPrinted,
    });
    // Its first field is a reference: cut inside it, the payload keeps its opcode and loses its references.
    expect(decoder.decodeBody(boc(beginCell().storeUint(0xc0ffee12, 32).storeRef(depositParams).endCell()))).toBeUndefined();
  });

  it("tonco_pool_v3_swap in a transfer to the router, multihop payload nested", () => {
    const next = beginCell().storeUint(0xa7fb58f8, 32).storeAddress(alice).storeUint(0, 160).storeCoins(1n).storeAddress(bob).storeMaybeRef(null).endCell();
    const payload = beginCell().storeUint(0xa7fb58f8, 32).storeAddress(bob).storeUint(123n, 160).storeCoins(50n).storeAddress(alice).storeMaybeRef(next).endCell();
    const decoded = decoder.decodeBody(boc(payload));
    expect(decoded).toEqual({
      "@type": "tonco_pool_v3_swap",
      target_wallet: printed(bob),
      sqrt_price_limit_x96: "123",
      min_out_amount: coins(50n),
      recipient: printed(alice),
      payload: {
        "@type": "something_from_maybe",
        value: {
          "@type": "tonco_pool_v3_swap",
          target_wallet: printed(alice),
          sqrt_price_limit_x96: "0",
          min_out_amount: coins(1n),
          recipient: printed(bob),
          payload: nothing,
        },
      },
    });
    expect(decoder.decodeBody(truncated(payload))).toBeUndefined();
  });
});

describe("adding dex-more.tlb", () => {
  it("changes nothing for a jetton transfer", () => {
    const body = beginCell()
      .storeUint(0x0f8a7ea5, 32)
      .storeUint(5, 64)
      .storeCoins(1000n)
      .storeAddress(bob)
      .storeAddress(alice)
      .storeMaybeRef(null)
      .storeCoins(1n)
      .storeBit(0)
      .endCell();
    const withFile = decoder.decodeBody(boc(body));
    expect(withFile?.["@type"]).toBe("jetton_transfer");
    expect(withFile).toEqual(baseline.decodeBody(boc(body)));
    expect(decoder.opcodeName(0x0f8a7ea5)).toBe(baseline.opcodeName(0x0f8a7ea5));
  });
});
