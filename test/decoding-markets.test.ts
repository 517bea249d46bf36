import { Address, beginCell, Cell, toNano } from "@ton/core";
import { describe, expect, it } from "vitest";
import { loadSchema, MessageBodyDecoder, schemaFiles } from "../src/decoding/message-body.ts";

// markets.tlb: Telemint's collection and item messages and getgems' fixed-price sale, bodies built as their
// contracts build them (TelegramMessenger/telemint func/common.fc and nft-item.fc, getgems-io/nft-contracts
// nft-fixprice-sale-v3r3.fc), decoded with the project's schema; `without` is the same schema without markets.tlb.

const decoder = new MessageBodyDecoder();
const without = new MessageBodyDecoder(loadSchema(schemaFiles.filter((file) => file !== "markets.tlb")));

const alice = Address.parse("EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs");
const bob = Address.parse("EQDtFpEwcFAEcRe5mLVh2N6C0x-_hJEM7W61_JLnSF74p4q2");
const printed = (address: Address) => ({
  "@type": "addr_std",
  anycast: { "@type": "nothing_from_maybe" },
  workchain_id: String(address.workChain),
  address: address.hash.toString("hex").toUpperCase(),
});
const boc = (cell: Cell) => cell.toBoc().toString("base64");
const hexOf = (buffer: Buffer) => buffer.toString("hex").toUpperCase();
/** A cell as the decoder prints one it cannot decode further: a bag of cells without index or checksum. */
const printedCell = (cell: Cell) => cell.toBoc({ idx: false, crc32: false }).toString("base64");

/** The same body cut short: its opcode and 20 bits into its first field, no references. */
function truncated(cell: Cell): string {
  return boc(beginCell().storeBits(cell.bits.substring(0, 52)).endCell());
}

// telemint func/common.fc store_text: an 8-bit length in bytes, then the bytes.
const text = (value: string) => {
  const bytes = Buffer.from(value, "utf8");
  return beginCell().storeUint(bytes.length, 8).storeBuffer(bytes);
};
const auctionConfig = beginCell()
  .storeAddress(alice)
  .storeCoins(toNano("10"))
  .storeCoins(toNano("0"))
  .storeUint(5, 8)
  .storeUint(3600, 32)
  .storeUint(604800, 32)
  .endCell();
const printedConfig = {
  "@type": "teleitem_auction_config",
  beneficiary_address: printed(alice),
  initial_min_bid: { "@type": "nanograms", amount: { "@type": "var_uint", len: "5", value: "10000000000" } },
  max_bid: { "@type": "nanograms", amount: { "@type": "var_uint", len: "0", value: "0" } },
  min_bid_step: "5",
  min_extend_time: "3600",
  duration: "604800",
};
const royalty = beginCell().storeUint(5, 16).storeUint(100, 16).storeAddress(bob).endCell();
const tokenInfo = text("alice").storeBuilder(text("t.me")).endCell();
const content = beginCell().storeUint(1, 8).storeStringTail("https://nft.fragment.com/username/alice.json").endCell();
const signature = Buffer.alloc(64, 0x5a);
const restrictions = beginCell().storeBit(true).storeAddress(alice).storeBit(true).storeAddress(bob).endCell();

const deployV1 = beginCell()
  .storeUint(0x4637289a, 32)
  .storeBuffer(signature)
  .storeUint(7, 32)
  .storeUint(1_700_000_000, 32)
  .storeUint(1_700_000_600, 32)
  .storeBuilder(text("alice"))
  .storeRef(content)
  .storeRef(auctionConfig)
  .storeMaybeRef(royalty)
  .endCell();
const deployV2 = beginCell()
  .storeUint(0x4637289b, 32)
  .storeBuffer(signature)
  .storeUint(86, 32)
  .storeUint(1_700_000_000, 32)
  .storeUint(1_700_000_600, 32)
  .storeBuilder(text("alice"))
  .storeRef(content)
  .storeRef(auctionConfig)
  .storeMaybeRef(null)
  .storeMaybeRef(restrictions)
  .endCell();
// func/common.fc pack_teleitem_msg_deploy: the collection to the item it deploys.
const itemDeploy = beginCell()
  .storeUint(0x299a3e15, 32)
  .storeAddress(alice)
  .storeCoins(toNano("12"))
  .storeRef(tokenInfo)
  .storeRef(content)
  .storeRef(auctionConfig)
  .storeRef(royalty)
  .endCell();
const startAuction = beginCell().storeUint(0x487a8e81, 32).storeUint(42n, 64).storeRef(auctionConfig).endCell();
const cancelAuction = beginCell().storeUint(0x371638ae, 32).storeUint(42n, 64).endCell();
// nft-fixprice-sale-v3r3.fc: query_id, then new_full_price, new_marketplace_fee and new_royalty_amount as coins.
const changePrice = beginCell()
  .storeUint(0x6c6c2080, 32)
  .storeUint(9n, 64)
  .storeCoins(toNano("20"))
  .storeCoins(toNano("1"))
  .storeCoins(toNano("2"))
  .endCell();

interface Case {
  readonly name: string;
  readonly opcode: number;
  readonly body: Cell;
}
const cases: Case[] = [
  { name: "telemint_deploy", opcode: 0x4637289a, body: deployV1 },
  { name: "telemint_deploy_v2", opcode: 0x4637289b, body: deployV2 },
  { name: "teleitem_deploy", opcode: 0x299a3e15, body: itemDeploy },
  { name: "teleitem_start_auction", opcode: 0x487a8e81, body: startAuction },
  { name: "teleitem_cancel_auction", opcode: 0x371638ae, body: cancelAuction },
  { name: "nft_sale_change_price", opcode: 0x6c6c2080, body: changePrice },
];

describe("markets.tlb", () => {
  for (const { name, opcode, body } of cases) {
    it(`${name}: decodes, names its opcode and refuses a cut body`, () => {
      expect(decoder.decodeBody(boc(body))?.["@type"]).toBe(name);
      expect(decoder.opcodeName(opcode)).toBe(name);
      expect(decoder.decodeBody(truncated(body))).toBeUndefined();
      expect(without.opcodeName(opcode)).toBeUndefined();
    });
  }

  it("prints a telemint deploy v2 in full", () => {
    expect(decoder.decodeBody(boc(deployV2))).toEqual({
      "@type": "telemint_deploy_v2",
      sig: hexOf(signature),
      msg: {
        "@type": "telemint_unsigned_deploy_v2",
        subwallet_id: "86",
        valid_since: "1700000000",
        valid_till: "1700000600",
        token_name: { "@type": "telemint_text", len: "5", text: hexOf(Buffer.from("alice")) },
        content: printedCell(content),
        auction_config: printedConfig,
        royalty_params: { "@type": "nothing_from_maybe" },
        restrictions: {
          "@type": "something_from_maybe",
          // A reference passed to a type (Maybe ^X) prints under "cell_reference", as tlbc prints it.
          value: {
            cell_reference: {
              "@type": "telemint_restrictions",
              force_sender_address: { "@type": "something_from_maybe", value: printed(alice) },
              rewrite_sender_address: { "@type": "something_from_maybe", value: printed(bob) },
            },
          },
        },
      },
    });
  });

  it("prints a teleitem deploy in full", () => {
    expect(decoder.decodeBody(boc(itemDeploy))).toEqual({
      "@type": "teleitem_deploy",
      sender_address: printed(alice),
      bid: { "@type": "nanograms", amount: { "@type": "var_uint", len: "5", value: "12000000000" } },
      token_info: {
        "@type": "telemint_token_info",
        name: { "@type": "telemint_text", len: "5", text: hexOf(Buffer.from("alice")) },
        domain: { "@type": "telemint_text", len: "4", text: hexOf(Buffer.from("t.me")) },
      },
      nft_content: printedCell(content),
      auction_config: printedConfig,
      royalty_params: { "@type": "nft_royalty_params", numerator: "5", denominator: "100", destination: printed(bob) },
    });
  });

  it("prints a start auction and a cancel auction in full", () => {
    expect(decoder.decodeBody(boc(startAuction))).toEqual({
      "@type": "teleitem_start_auction",
      query_id: "42",
      auction_config: printedConfig,
    });
    expect(decoder.decodeBody(boc(cancelAuction))).toEqual({ "@type": "teleitem_cancel_auction", query_id: "42" });
  });

  it("prints a telemint deploy (v1) with its royalty", () => {
    const decoded = decoder.decodeBody(boc(deployV1));
    expect(decoded?.msg).toMatchObject({
      "@type": "telemint_unsigned_deploy",
      subwallet_id: "7",
      royalty_params: {
        "@type": "something_from_maybe",
        value: {
          cell_reference: { "@type": "nft_royalty_params", numerator: "5", denominator: "100", destination: printed(bob) },
        },
      },
    });
  });

  it("prints a getgems price change in full", () => {
    expect(decoder.decodeBody(boc(changePrice))).toEqual({
      "@type": "nft_sale_change_price",
      query_id: "9",
      new_full_price: { "@type": "nanocoins", amount: { "@type": "var_uint", len: "5", value: "20000000000" } },
      new_mp_fee: { "@type": "nanocoins", amount: { "@type": "var_uint", len: "4", value: "1000000000" } },
      new_royalty_amount: { "@type": "nanocoins", amount: { "@type": "var_uint", len: "4", value: "2000000000" } },
    });
  });

  it("refuses an auction config with bits left over (the item reads it to its end)", () => {
    const loose = beginCell().storeSlice(auctionConfig.beginParse()).storeUint(1, 1).endCell();
    const body = beginCell().storeUint(0x487a8e81, 32).storeUint(42n, 64).storeRef(loose).endCell();
    expect(decoder.decodeBody(boc(body))).toBeUndefined();
  });

  it("changes nothing for the other families: an nft_transfer decodes the same with and without markets.tlb", () => {
    const transfer = beginCell()
      .storeUint(0x5fcc3d14, 32)
      .storeUint(1n, 64)
      .storeAddress(bob)
      .storeAddress(alice)
      .storeBit(false)
      .storeCoins(1n)
      .storeBit(false)
      .endCell();
    const withMarkets = decoder.decodeBody(boc(transfer));
    expect(withMarkets?.["@type"]).toBe("nft_transfer");
    expect(withMarkets).toEqual(without.decodeBody(boc(transfer)));
    expect(decoder.opcodeName(0x5fcc3d14)).toBe(without.opcodeName(0x5fcc3d14));
  });

  it("keeps dns.tlb's Telemint answers and EVAA-sized opcodes untouched", () => {
    for (const opcode of [0x38127de1, 0xa43227e1, 0xa37a0983, 0x370fec51, 0x557cea20, 1, 2, 3, 555]) {
      expect(decoder.opcodeName(opcode)).toBe(without.opcodeName(opcode));
    }
  });
});
