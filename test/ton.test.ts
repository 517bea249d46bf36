import { beginCell } from "@ton/core";
import { sha256_sync } from "@ton/crypto";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseAddress, userFriendly } from "../src/ton/address.ts";
import { decodeTextComment } from "../src/ton/comment.ts";
import { parseHash } from "../src/ton/hash.ts";
import { shardToUnsignedHex } from "../src/ton/shard.ts";
import "../src/ton/native-sha256.ts";

const hashBase64 = "Jv81SPUJbodVgsHB+lo0/jEJDaidYQYivJDg+rz+ITA=";
const hashHex = Buffer.from(hashBase64, "base64").toString("hex");

describe("parseHash", () => {
  it.each([
    ["standard base64", hashBase64],
    ["base64url", hashBase64.replace(/\+/g, "-").replace(/\//g, "_")],
    ["unpadded base64url", hashBase64.replace(/\+/g, "-").replace(/\//g, "_").replace(/=$/, "")],
    ["lower-case hex", hashHex],
    ["upper-case hex", hashHex.toUpperCase()],
    ["0x-prefixed hex", `0x${hashHex}`],
  ])("reads %s", (_name, input) => {
    expect(parseHash(input)).toBe(hashBase64);
  });

  it.each(["", "abc", hashHex.slice(2), `${hashHex}00`, "0x", "not a hash at all, not a hash at all, nope", `${hashBase64}=`])(
    "refuses %j",
    (input) => {
      expect(parseHash(input)).toBeUndefined();
    },
  );
});

describe("addresses", () => {
  const raw = "0:A07FDC407341EE9B363F3762E0939A10937FE92FB374E064F429A3FE1FBBA937";

  it.each([
    ["raw upper-case", raw],
    ["raw lower-case", raw.toLowerCase()],
    ["non-bounceable url-safe", "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH"],
    ["bounceable url-safe", userFriendly(raw, { bounceable: true, testnet: false }) as string],
    ["bounceable standard base64", (userFriendly(raw, { bounceable: true, testnet: false }) as string).replace(/-/g, "+").replace(/_/g, "/")],
  ])("parses %s into the index form", (_name, input) => {
    expect(parseAddress(input)).toBe(raw);
  });

  it("parses masterchain addresses", () => {
    expect(parseAddress("-1:3333333333333333333333333333333333333333333333333333333333333333")).toBe(
      "-1:3333333333333333333333333333333333333333333333333333333333333333",
    );
  });

  it.each(["", "0:1234", "EQ-not-an-address", "addr_none"])("refuses %j", (input) => {
    expect(parseAddress(input)).toBeUndefined();
  });

  it("prints user-friendly forms as toncenter does", () => {
    expect(userFriendly(raw, { bounceable: false, testnet: false })).toBe("UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH");
    expect(
      userFriendly("0:5B6A643CF4E32FF0391C476456FED5BDB17EF10A55CBB7C2980C76D4AAD07875", { bounceable: false, testnet: true }),
    ).toBe("0QBbamQ89OMv8DkcR2RW_tW9sX7xClXLt8KYDHbUqtB4dQd_");
    expect(userFriendly("addr_none", { bounceable: false, testnet: false })).toBeUndefined();
  });
});

describe("decodeTextComment", () => {
  it("decodes an empty comment", () => {
    expect(decodeTextComment("te6cckEBAQEABgAACAAAAADjAK8P")).toBe("");
  });

  it("ignores bodies that are not comments, and garbage", () => {
    // An empty body (no opcode at all), from a recorded tick transaction's message.
    expect(decodeTextComment("te6cckEBAQEAAgAAAEysuc0=")).toBeUndefined();
    expect(decodeTextComment("not a boc")).toBeUndefined();
  });
});

describe("native SHA-256 for cells", () => {
  it("is what @ton/core hashes cells with, and gives the same bytes", () => {
    for (const input of [Buffer.alloc(0), Buffer.from("abc"), Buffer.alloc(1000, 7)]) {
      expect(sha256_sync(input)).toEqual(createHash("sha256").update(input).digest());
    }
    expect(sha256_sync("текст")).toEqual(createHash("sha256").update(Buffer.from("текст", "utf-8")).digest());
    // An ordinary 32-bit cell without references: its representation is d1=0, d2=8 and the four data bytes.
    const cell = beginCell().storeUint(0xdeadbeef, 32).endCell();
    const representation = Buffer.from([0, 8, 0xde, 0xad, 0xbe, 0xef]);
    expect(cell.hash()).toEqual(createHash("sha256").update(representation).digest());
    expect(sha256_sync.toString()).toContain("createHash");
  });
});

describe("shardToUnsignedHex", () => {
  it("prints each shard's 64 bits as unsigned hex, whatever shard was printed before it", () => {
    const cases: [string, string][] = [
      // First, while nothing is kept: a typed BlockRef's unset shard is "", which BigInt reads as 0.
      ["", "0"],
      ["-9223372036854775808", "8000000000000000"],
      ["-9223372036854775808", "8000000000000000"],
      ["6917529027641081856", "6000000000000000"],
      ["-2305843009213693952", "E000000000000000"],
      ["6917529027641081856", "6000000000000000"],
      ["0", "0"],
      ["-1", "FFFFFFFFFFFFFFFF"],
    ];
    for (const [shard, hex] of cases) expect(shardToUnsignedHex(shard)).toBe(hex);
  });
});
