import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { selectAddressBook } from "../src/db/address-book.ts";
import { getMethodId } from "../src/ton/interfaces.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

const wallet = "0:A07FDC407341EE9B363F3762E0939A10937FE92FB374E064F429A3FE1FBBA937";
const nftItem = "0:565409337CBA32DF7494456C68BE23A17D194431EACCA94B6542378F88DFB364";
const unknownCode = "0:F13BE6B3C666E02B6BDBFC530F136CBB3CC08678C6A5D305EA0ADF70EFDEDDD5";
const neverSeen = "0:33A14A5A9406979D59B9328898591660B8B1736342B11632EFDCC911AB9057CF";
const walletV4r2 = "/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=";
const nftCode = "WFkTv+s4jbGZfSvvsYBvLHnxghM34bDo+xgr3sQOKMI=";
const otherCode = "so6zdrb5Afohv6vI2JwvRpRS61R5XHUCquy58rm1iqE=";
// A second item of the same collection code, and an account whose code has no contract_methods row.
const secondNftItem = "0:765409337CBA32DF7494456C68BE23A17D194431EACCA94B6542378F88DFB364";
const noMethodsRow = "0:D3A14A5A9406979D59B9328898591660B8B1736342B11632EFDCC911AB9057CF";
const codeWithoutMethods = "7zGc8ZS3ltaiBLyCHYjfNu0fQYJ2wbvHcBnQkMw0nPU=";

describe("address_book", () => {
  let db: TestDatabase;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    db = await createTestDatabase();
    const state = (account: string, codeHash: string) => ({ account, hash: codeHash, code_hash: codeHash, account_status: "active" });
    await db.admin`insert into latest_account_states ${db.admin([
      state(wallet, walletV4r2),
      state(nftItem, nftCode),
      state(unknownCode, otherCode),
      state(secondNftItem, nftCode),
      state(noMethodsRow, codeWithoutMethods),
    ])}`;
    await db.admin`insert into contract_methods values
      (${nftCode}, ${[getMethodId("get_nft_data"), getMethodId("get_editor")]}::bigint[]),
      (${otherCode}, ${[getMethodId("some_private_method")]}::bigint[])`;
    // Two domains resolve to the wallet; the shortest one wins. A domain owned but pointing elsewhere does not count.
    await db.admin`insert into dns_entries (nft_item_address, nft_item_owner, domain, dns_wallet) values
      ('0:01', ${wallet}, 'a-longer-name.ton', ${wallet}),
      ('0:02', ${wallet}, 'short.ton', ${wallet}),
      ('0:03', ${nftItem}, 'elsewhere.ton', ${wallet})`;
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("describes every address as toncenter does", async () => {
    const book = await selectAddressBook(db.reader, signal, [wallet, nftItem, unknownCode, neverSeen, wallet], false);
    const plain = Object.fromEntries(
      Object.entries(book).map(([a, r]) => [a, { user_friendly: r.userFriendly, domain: r.domain ?? null, interfaces: r.interfaces?.names ?? null }]),
    );
    expect(plain).toEqual({
      // A wallet: non-bounceable form, detected by code hash, shortest domain.
      [wallet]: { user_friendly: "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH", domain: "short.ton", interfaces: ["wallet_v4r2"] },
      // A contract: bounceable form, interfaces from its get-methods, sorted.
      [nftItem]: { user_friendly: "EQBWVAkzfLoy33SURWxoviOhfRlEMerMqUtlQjePiN-zZG7j", domain: null, interfaces: ["editable", "nft_item"] },
      // Code with get-methods that match nothing: null, as toncenter.
      [unknownCode]: { user_friendly: "EQDxO-azxmbgK2vb_FMPE2y7PMCGeMal0wXqCt9w797d1dyU", domain: null, interfaces: null },
      // Never indexed: non-bounceable, no interfaces.
      [neverSeen]: { user_friendly: "UQAzoUpalAaXnVm5MoiYWRZguLFzY0KxFjLv3MkRq5BXz3VV", domain: null, interfaces: [] },
    });
  });

  it("detects the interfaces of every address sharing a code, and keeps the order the addresses were given in", async () => {
    const given = [noMethodsRow, secondNftItem, neverSeen, nftItem, wallet];
    const book = await selectAddressBook(db.reader, signal, given, false);
    expect(Object.keys(book)).toEqual(given);
    expect(book[nftItem]?.interfaces?.names).toEqual(["editable", "nft_item"]);
    expect(book[secondNftItem]?.interfaces?.names).toEqual(["editable", "nft_item"]);
    // A known code without get-method ids: [], not null.
    expect(book[noMethodsRow]?.interfaces?.names).toEqual([]);
    expect(book[noMethodsRow]?.userFriendly).toMatch(/^EQ/);
  });

  it("detects a code's interfaces once its get-method ids are indexed, and from then on without reading them", async () => {
    const lateCode = "LaTeC0de7ZS3ltaiBLyCHYjfNu0fQYJ2wbvHcBnQkMw=";
    const lateAccount = "0:E3A14A5A9406979D59B9328898591660B8B1736342B11632EFDCC911AB9057CF";
    await db.admin`insert into latest_account_states ${db.admin([{ account: lateAccount, hash: lateCode, code_hash: lateCode, account_status: "active" }])}`;
    expect((await selectAddressBook(db.reader, signal, [lateAccount], false))[lateAccount]?.interfaces?.names).toEqual([]);
    await db.admin`insert into contract_methods values (${lateCode}, ${[getMethodId("get_nft_data"), getMethodId("get_editor")]}::bigint[])`;
    expect((await selectAddressBook(db.reader, signal, [lateAccount], false))[lateAccount]?.interfaces?.names).toEqual(["editable", "nft_item"]);
    // Known now: a change to the row (which the worker never makes) is not read again.
    await db.admin`update contract_methods set methods = ${[getMethodId("some_private_method")]}::bigint[] where code_hash = ${lateCode}`;
    expect((await selectAddressBook(db.reader, signal, [lateAccount], false))[lateAccount]?.interfaces?.names).toEqual(["editable", "nft_item"]);
  });

  it("prints testnet forms when configured for testnet", async () => {
    const book = await selectAddressBook(db.reader, signal, [wallet, nftItem], true);
    expect(book[wallet]?.userFriendly).toMatch(/^0Q/);
    expect(book[nftItem]?.userFriendly).toMatch(/^kQ/);
  });

  it("returns nothing for no addresses, without a query", async () => {
    expect(await selectAddressBook(db.reader, AbortSignal.abort(), [], false)).toEqual({});
  });
});
