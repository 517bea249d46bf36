import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookUpAddresses } from "../src/db/addresses.ts";
import { recordedIndex } from "./support/encoder-indexes.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { startTestServer } from "./support/server.ts";
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

describe("the address book", () => {
  let db: TestDatabase;
  const signal = new AbortController().signal;
  const selectAddressBook = async (addresses: string[], testnet: boolean, s = signal) =>
    (await lookUpAddresses(db.reader, s, addresses, { book: true, metadata: false, testnet })).addressBook;

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
    const book = await selectAddressBook([wallet, nftItem, unknownCode, neverSeen, wallet], false);
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
    const book = await selectAddressBook(given, false);
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
    expect((await selectAddressBook([lateAccount], false))[lateAccount]?.interfaces?.names).toEqual([]);
    await db.admin`insert into contract_methods values (${lateCode}, ${[getMethodId("get_nft_data"), getMethodId("get_editor")]}::bigint[])`;
    expect((await selectAddressBook([lateAccount], false))[lateAccount]?.interfaces?.names).toEqual(["editable", "nft_item"]);
    // Known now: a change to the row (which the worker never makes) is not read again.
    await db.admin`update contract_methods set methods = ${[getMethodId("some_private_method")]}::bigint[] where code_hash = ${lateCode}`;
    expect((await selectAddressBook([lateAccount], false))[lateAccount]?.interfaces?.names).toEqual(["editable", "nft_item"]);
  });

  it("prints testnet forms when configured for testnet", async () => {
    const book = await selectAddressBook([wallet, nftItem], true);
    expect(book[wallet]?.userFriendly).toMatch(/^0Q/);
    expect(book[nftItem]?.userFriendly).toMatch(/^kQ/);
  });

  it("returns nothing for no addresses, without a query", async () => {
    expect(await selectAddressBook([], false, AbortSignal.abort())).toEqual({});
  });

  it("reads the book and the token metadata in one statement, each part as it reads alone", async () => {
    const master = "0:B113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE";
    const jettonWallet = "0:C113A994B5024A16719F69139328EB759596C38A25F59028B146FECDC3621DFE";
    await db.admin`insert into jetton_masters (address) values (${master})`;
    await db.admin`insert into jetton_wallets (address, balance, owner, jetton) values (${jettonWallet}, 9000000, ${wallet}, ${master})`;
    await db.admin`insert into address_metadata (address, type, valid, name, symbol) values (${master}, 'jetton_masters', true, 'Tether USD', 'USDT')`;
    await db.admin`insert into nft_items (address, index) values (${nftItem}, 7)`;
    const given = [wallet, jettonWallet, nftItem, neverSeen];
    const both = await lookUpAddresses(db.reader, signal, given, { book: true, metadata: true, testnet: false });
    const bookAlone = await lookUpAddresses(db.reader, signal, given, { book: true, metadata: false, testnet: false });
    const metadataAlone = await lookUpAddresses(db.reader, signal, given, { book: false, metadata: true, testnet: false });
    expect(both.addressBook).toEqual(bookAlone.addressBook);
    expect(both.metadata).toEqual(metadataAlone.metadata);
    expect(bookAlone.metadata).toEqual({});
    expect(metadataAlone.addressBook).toEqual({});
    expect(Object.keys(both.addressBook)).toEqual(given);
    expect(both.addressBook[wallet]?.domain).toBe("short.ton");
    // The master is looked up through its wallet; an item the metadata fetcher has not seen is not indexed.
    const plain = Object.fromEntries(
      Object.entries(both.metadata).map(([address, m]) => [address, { indexed: m.isIndexed, tokens: m.tokenInfo.map((t) => [t.type, t.name ?? null, t.nftIndex ?? null, t.extra ?? null]) }]),
    );
    expect(plain).toEqual({
      [jettonWallet]: { indexed: true, tokens: [["jetton_wallets", null, null, { balance: "9000000", jetton: master, owner: wallet }]] },
      [master]: { indexed: true, tokens: [["jetton_masters", "Tether USD", null, null]] },
      [nftItem]: { indexed: false, tokens: [["nft_items", null, "7", null]] },
    });
    expect(await lookUpAddresses(db.reader, signal, given, { book: false, metadata: false, testnet: false })).toEqual({ addressBook: {}, metadata: {} });
  });
});

describe("a page of traces", () => {
  let recorded: TestDatabase;
  beforeAll(async () => {
    recorded = await recordedIndex();
  });
  afterAll(async () => {
    await recorded?.drop();
  });

  it("is read in four statements: its traces, their transactions with their states, their messages, and what it says of its addresses", async () => {
    const server = await startTestServer(recorded.url);
    try {
      const page = await server.rest("/api/v3/traces?account=UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH&limit=10");
      expect(page.status).toBe(200);
      const body = page.body as { address_book: Record<string, unknown> };
      expect(Object.keys(body.address_book).length).toBeGreaterThan(1);
      // Every statement the page ran, but the method ids of codes not met before (read once per code) and the index's
      // newest block (X-Index-Seqno, shared between requests).
      const statements = (await scrapeMetrics(server.baseUrl))
        .samples("tonquery_db_statement_duration_seconds_count")
        .filter((sample) => !["address_book_methods", "index_seqno"].includes(sample.labels?.statement ?? ""))
        .map((sample) => [sample.labels?.statement, Number(sample.value)] as const);
      expect(new Map(statements)).toEqual(
        new Map([
          ["trace_page", 1],
          ["trace_transactions", 1],
          ["messages", 1],
          ["address_lookups", 1],
        ]),
      );
    } finally {
      await server.close();
    }
  });
});
