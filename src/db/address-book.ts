import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";
import { userFriendly } from "../ton/address.ts";
import { detectInterfaces, walletCodeHashes } from "../ton/interfaces.ts";
import { runQuery, type Sql } from "./client.ts";
import { rowsBy } from "./rows.ts";

type LatestStateRow = { account: string; code_hash: string | null; has_methods: boolean };
type MethodsRow = { code_hash: string; methods: string[] | null };
type DomainRow = { nft_item_owner: string; domain: string | null };

/**
 * The interfaces of each code hash that has a contract_methods row, as detected from it: a code's get-methods never
 * change, so neither does what it implements once its row exists. A page's few hundred addresses share a dozen or
 * two codes: reading every address's method ids (a hundred KB of arrays per 100-trace page, parsed into strings)
 * and detecting the same interfaces again for each was a third of the address book's CPU, most of it garbage.
 * Codes without a row are not kept (the worker may add one later): their interfaces come from the hash alone.
 */
const interfacesByCode = new Map<string, string[] | null>();
const maxCodesKept = 10_000;

function keepInterfaces(codeHash: string, interfaces: string[] | null): void {
  if (interfacesByCode.size >= maxCodesKept) interfacesByCode.delete(interfacesByCode.keys().next().value as string);
  interfacesByCode.set(codeHash, interfaces);
}

/**
 * How people see each address of a response, keyed by the exact raw strings given: the user-friendly form
 * (non-bounceable for wallets and accounts without code), the shortest .ton domain pointing at it, and the
 * contract interfaces its code implements. Two statements, run in parallel, whatever the number of addresses, and a
 * third for the method ids of codes not met before (see interfacesByCode). The domains are joined to the unnested
 * list: `= any(list)` with the list a parameter, as in the generic plan a prepared statement switches to, compares
 * each dns entry with every address in turn (2.1 ms against 0.14 ms for 300 addresses on the 2M bench index),
 * where a join hashes or probes the list once.
 */
export async function selectAddressBook(
  sql: Sql,
  signal: AbortSignal,
  addresses: Iterable<string>,
  testnet: boolean,
): Promise<Record<string, AddressBookRow>> {
  const accounts = [...new Set(addresses)];
  if (accounts.length === 0) return {};
  const [states, domains] = await Promise.all([
    runQuery(
      signal,
      sql,
      "address_book_states",
      (tx) => tx<LatestStateRow[]>`
        select S.account, S.code_hash, C.code_hash is not null as has_methods
        from latest_account_states S
        left join contract_methods C on C.code_hash = S.code_hash
        where S.account = any(${accounts}::text[]::tonaddr[])`,
    ),
    runQuery(
      signal,
      sql,
      "address_book_domains",
      (tx) => tx<DomainRow[]>`
        select distinct on (D.nft_item_owner) D.nft_item_owner, D.domain
        from unnest(${accounts}::text[]::tonaddr[]) A(owner)
        join dns_entries D on D.nft_item_owner = A.owner
        where D.nft_item_owner = D.dns_wallet
        order by D.nft_item_owner, length(D.domain)`,
    ),
  ]);
  // This page's codes' interfaces, taken before any is learnt: learning may push a code this page needs out of the map.
  const interfacesOfCode = new Map<string, string[] | null>();
  const unknownCodes = new Set<string>();
  for (const { code_hash: codeHash, has_methods: hasMethods } of states) {
    if (!hasMethods || codeHash === null || interfacesOfCode.has(codeHash)) continue;
    if (interfacesByCode.has(codeHash)) interfacesOfCode.set(codeHash, interfacesByCode.get(codeHash) ?? null);
    else unknownCodes.add(codeHash);
  }
  if (unknownCodes.size > 0) {
    const rows = await runQuery(
      signal,
      sql,
      "address_book_methods",
      (tx) => tx<MethodsRow[]>`select C.code_hash, C.methods from contract_methods C where C.code_hash = any(${[...unknownCodes]}::text[]::tonhash[])`,
    );
    for (const row of rows) {
      const interfaces = detectInterfaces(row.code_hash, row.methods);
      interfacesOfCode.set(row.code_hash, interfaces);
      keepInterfaces(row.code_hash, interfaces);
    }
  }
  const interfacesOf = ({ code_hash: codeHash, has_methods: hasMethods }: LatestStateRow): string[] | null => {
    if (!hasMethods || codeHash === null || !interfacesOfCode.has(codeHash)) return detectInterfaces(codeHash, null);
    return interfacesOfCode.get(codeHash) ?? null;
  };
  const stateByAccount = rowsBy(states, "account");
  const domainByAccount = new Map(domains.map((d) => [d.nft_item_owner, d.domain]));
  const book: Record<string, AddressBookRow> = {};
  for (const account of accounts) {
    const state = stateByAccount.get(account);
    const codeHash = state?.code_hash ?? null;
    const bounceable = codeHash !== null && !walletCodeHashes.has(codeHash);
    const interfaces = state === undefined ? [] : interfacesOf(state);
    book[account] = {
      $typeName: "tonquery.v1.AddressBookRow",
      userFriendly: userFriendly(account, { bounceable, testnet }) ?? "addr_none",
      domain: domainByAccount.get(account) ?? undefined,
      interfaces: interfaces === null ? undefined : { $typeName: "tonquery.v1.InterfaceList", names: interfaces },
    };
  }
  return book;
}
