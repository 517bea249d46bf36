import { crc16, getMethodId as tonCoreGetMethodId } from "@ton/core";
import { describe, expect, it } from "vitest";
import table from "../src/ton/interfaces.json" with { type: "json" };
import { detectInterfaces, getMethodId, walletCodeHashes } from "../src/ton/interfaces.ts";

const ids = (...names: string[]): string[] => names.map((name) => String(getMethodId(name)));

const methodsOf = (name: string): string[] => {
  const entry = table.interfaces.find((iface) => iface.name === name);
  if (!entry) throw new Error(`no interface ${name}`);
  return ids(...entry.methods);
};

describe("getMethodId", () => {
  it("uses CRC-16/XMODEM (tonutils-go crc16 test vectors)", () => {
    expect(crc16(Buffer.from("123456789")).readUInt16BE(0)).toBe(0x31c3);
    expect(crc16(Buffer.from("hello")).readUInt16BE(0)).toBe(0xc362);
    expect(crc16(Buffer.from("")).readUInt16BE(0)).toBe(0);
  });

  it("gives the known get-method ids", () => {
    expect(getMethodId("seqno")).toBe(85143);
    expect(getMethodId("get_wallet_data")).toBe(97026);
    expect(getMethodId("get_jetton_data")).toBe(106029);
  });

  it("agrees with @ton/core getMethodId for every method in the table", () => {
    for (const iface of table.interfaces) {
      for (const method of iface.methods) expect(getMethodId(method)).toBe(tonCoreGetMethodId(method));
    }
  });
});

describe("interface table", () => {
  it("has toncenter's 106 interfaces with unique names and code hashes", () => {
    expect(table.interfaces).toHaveLength(106);
    expect(new Set(table.interfaces.map((iface) => iface.name)).size).toBe(106);
    const hashes = table.interfaces.flatMap((iface) => iface.codeHashes);
    expect(new Set(hashes).size).toBe(hashes.length);
    for (const hash of hashes) expect(Buffer.from(hash, "base64").toString("base64")).toBe(hash);
  });

  it("keeps the trailing space of dedust_liquidity_deposit", () => {
    expect(table.interfaces.map((iface) => iface.name)).toContain("dedust_liquidity_deposit ");
    expect(detectInterfaces(null, ids("get_balances", "get_target_balances"))).toEqual([
      "dedust_liquidity_deposit ",
      "lockup_universal",
    ]);
  });
});

describe("detectInterfaces", () => {
  it("detects wallets by code hash", () => {
    expect(detectInterfaces("/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=", methodsOf("wallet_v4r2"))).toEqual([
      "wallet_v4r2",
    ]);
    expect(detectInterfaces("hNr6RJ+Ypph3ibojI1gHK8D3bcRSQAKl0JGLmnXS1Zk=", methodsOf("wallet_v3r2"))).toEqual([
      "wallet_v3r2",
    ]);
  });

  it("detects jetton wallets by code hash, ignoring their get-methods", () => {
    expect(detectInterfaces("jSjqQht36AX+pSrPM1KWSZ8Drsjp/SHdtfJWSqZcSN4=", ids("get_wallet_data"))).toEqual([
      "jetton_wallet_v2",
    ]);
    expect(
      detectInterfaces("iUaPAseOVwgC45l5yFFvw43wfqdqSDV+BTbyuns+43s=", ids("get_wallet_data", "get_status")),
    ).toEqual(["jetton_wallet_governed"]);
  });

  it("matches a second code hash of an interface", () => {
    expect(detectInterfaces("5M87L0xtamHqDytUR9JmeFsmrzY32y3u5rzRqoJvNBI=", null)).toEqual(["wallet_v5_beta"]);
  });

  it("returns every interface whose methods are all present, sorted by name", () => {
    const unknownCode = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    // as recorded from toncenter for an editable NFT item
    expect(detectInterfaces(unknownCode, [...ids("get_nft_data", "get_editor"), "0"])).toEqual([
      "editable",
      "nft_item",
    ]);
    // as recorded from toncenter for a DeDust pool: moon_pool's methods are a subset (its code hash is not matched)
    expect(detectInterfaces(unknownCode, [...methodsOf("dedust_pool"), ...methodsOf("jetton_master")])).toEqual([
      "dedust_pool",
      "jetton_master",
      "moon_pool",
    ]);
  });

  it("accepts method ids as strings, numbers or bigints", () => {
    const seqno = getMethodId("seqno");
    expect(detectInterfaces(null, [String(getMethodId("get_editor"))])).toEqual(["editable"]);
    expect(detectInterfaces(null, [getMethodId("get_nft_data")])).toEqual(["nft_item"]);
    expect(detectInterfaces(null, [BigInt(getMethodId("dnsresolve")), BigInt(seqno)])).toEqual([
      "dns",
      "wallet_v1r2",
      "wallet_v2r1",
      "wallet_v3r1",
      "wallet_v5_beta",
    ]);
  });

  it("never matches interfaces without methods through the method rule", () => {
    expect(detectInterfaces(null, ids("get_wallet_data"))).toEqual(["jetton_wallet"]);
  });

  it("gives [] for empty methods", () => {
    expect(detectInterfaces("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", [])).toEqual([]);
    expect(detectInterfaces(null, [])).toEqual([]);
  });

  it("gives [] for an unlisted code hash without a contract_methods row", () => {
    expect(detectInterfaces("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", null)).toEqual([]);
  });

  it("gives null when non-empty methods match nothing", () => {
    expect(detectInterfaces("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", ["0", "-1", "12345"])).toBeNull();
    expect(detectInterfaces(null, ids("get_public_key"))).toEqual(["wallet_highload_v2"]);
    expect(detectInterfaces(null, ids("get_subwallet_id"))).toBeNull();
  });

  it("gives null when both code hash and methods are null", () => {
    expect(detectInterfaces(null, null)).toBeNull();
  });

  it("returns a fresh array each call", () => {
    const hash = "/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=";
    const first = detectInterfaces(hash, null);
    first?.push("mutated");
    expect(detectInterfaces(hash, null)).toEqual(["wallet_v4r2"]);
  });
});

describe("walletCodeHashes", () => {
  it("has the 11 hashes of toncenter's WalletsHashMap", () => {
    expect(walletCodeHashes.size).toBe(11);
    expect(walletCodeHashes.has("/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=")).toBe(true);
    expect(walletCodeHashes.has("5M87L0xtamHqDytUR9JmeFsmrzY32y3u5rzRqoJvNBI=")).toBe(false);
    expect(walletCodeHashes.has("jSjqQht36AX+pSrPM1KWSZ8Drsjp/SHdtfJWSqZcSN4=")).toBe(false);
  });

  it("lists only code hashes that are wallet interfaces in the table", () => {
    for (const hash of walletCodeHashes) {
      expect(detectInterfaces(hash, null)?.[0]).toMatch(/^wallet_v/);
    }
  });
});
