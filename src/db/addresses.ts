import type { JsonObject } from "@bufbuild/protobuf";
import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";
import type { AddressMetadata, TokenInfo } from "../../gen/tonquery/v1/trace_pb.ts";
import { userFriendly } from "../ton/address.ts";
import { detectInterfaces, walletCodeHashes } from "../ton/interfaces.ts";
import { runQuery, type Sql } from "./client.ts";
import { optional } from "./rows.ts";

// What an answer says about the addresses it names: the address book (how people see each address) and the token
// metadata. Both are read by one statement, whatever the number of addresses: each statement a request sends costs
// the service a tenth to a fifth of a millisecond of its own CPU (its messages, promise and result, and the address
// list serialised once more), which is a tenth of what a trace looked up by hash costs it; the list is sent and cast
// once instead of three times. A third statement reads the method ids of codes not met before (see interfacesByCode).

/** Which parts of the lookup an answer needs (adjacentTransactions has no metadata; a stream may want either). */
export interface AddressLookup {
  book: boolean;
  metadata: boolean;
  testnet: boolean;
}

export interface AddressFacts {
  addressBook: Record<string, AddressBookRow>;
  metadata: Record<string, AddressMetadata>;
}

/** The statement's parts, numbered as it numbers them, in the order its rows come: each row is of one of them. */
const statePart = 0;
const domainPart = 1;
const tokenPart = 2;

/** A row of the lookup: the columns of its part are set, the others null. */
type AddressRow = {
  part: typeof statePart | typeof domainPart | typeof tokenPart;
  address: string;
  /** The account's latest state (statePart). */
  code_hash: string | null;
  has_methods: boolean | null;
  /** The shortest .ton domain pointing at the address (domainPart). */
  domain: string | null;
} & TokenColumns;

/** What the token tables know of an address (tokenPart); `type` null in the other parts. */
type TokenColumns = {
  type: "jetton_wallets" | "jetton_masters" | "nft_items" | "nft_collections" | null;
  /** Jetton wallets only. */
  balance: string | null;
  owner: string | null;
  jetton: string | null;
  nft_index: string | null;
  /** NULL when the metadata fetcher has not seen the address yet. */
  valid: boolean | null;
  name: string | null;
  symbol: string | null;
  description: string | null;
  image: string | null;
  extra: JsonObject | null;
  is_nsfw: boolean | null;
  is_scam: boolean | null;
};

type MethodsRow = { code_hash: string; methods: string[] | null };

/**
 * The address book and metadata of the given addresses, as `lookup` asks. The addresses are keyed by the exact raw
 * strings given.
 *
 * - Address book: each address's user-friendly form (non-bounceable for wallets and accounts without code), the
 *   shortest .ton domain pointing at it, and the contract interfaces its code implements. The domains are joined to
 *   the unnested list: `= any(list)` with the list a parameter, as in the generic plan a prepared statement switches
 *   to, compares each dns entry with every address in turn (2.1 ms against 0.14 ms for 300 addresses on the 2M bench
 *   index), where a join hashes or probes the list once.
 * - Metadata, as toncenter's `metadata`: jetton wallets (with their masters added to the lookup), jetton masters, NFT
 *   items and collections, with the off-chain metadata the fetcher cached and the nsfw/scam flags; addresses that
 *   are not tokens are absent. Ordered, as toncenter's Go maps print sorted: the same metadata must be the same
 *   bytes, or an answer's ETag would change whenever PostgreSQL picks another join order (its generic plan after
 *   five runs of the statement did).
 */
export async function lookUpAddresses(sql: Sql, signal: AbortSignal, addresses: Iterable<string>, lookup: AddressLookup): Promise<AddressFacts> {
  const accounts = [...new Set(addresses)];
  if (accounts.length === 0 || (!lookup.book && !lookup.metadata)) return { addressBook: {}, metadata: {} };
  const rows = await runQuery(signal, sql, lookup.book ? (lookup.metadata ? "address_lookups" : "address_book") : "token_metadata", (tx) => {
    // Each part reads the list from the one parameter: (select accounts from A) is computed once for the statement.
    const list = tx`(select accounts from A)::tonaddr[]`;
    const bookParts = tx`
      select 0 as part, S.account as address, S.code_hash, C.code_hash is not null as has_methods,
        null::varchar as domain, ${noTokenColumns(tx)}
      from latest_account_states S
      left join contract_methods C on C.code_hash = S.code_hash
      where S.account = any(${list})
      union all
      select * from (
        select distinct on (D.nft_item_owner) 1, D.nft_item_owner, null::tonhash, null::boolean, D.domain, ${noTokenColumns(tx)}
        from (select unnest(${list}) as owner) U
        join dns_entries D on D.nft_item_owner = U.owner
        where D.nft_item_owner = D.dns_wallet
        order by D.nft_item_owner, length(D.domain)) Domains`;
    // Named as the book's first branch names them: without the book, a union's column names are this branch's.
    const tokenParts = tx`
      select 2 as part, W.address, null::tonhash as code_hash, null::boolean as has_methods, null::varchar as domain,
        'jetton_wallets'::text as type, W.balance, W.owner, W.jetton, null::text as nft_index, true as valid, null::varchar as name,
        null::varchar as symbol, null::varchar as description, null::varchar as image, null::jsonb as extra,
        null::boolean as is_nsfw, null::boolean as is_scam
      from wallets W
      union all
      select 2, X.address, null::tonhash, null::boolean, null::varchar, X.type, null::text, null::tonaddr, null::tonaddr,
        X.nft_index, M.valid, M.name, M.symbol, M.description, M.image, M.extra, F.is_nsfw, F.is_scam
      from (
        select N.address, 'nft_items'::text as type, N.index::text as nft_index from nft_items N where N.address in (select address from lookup)
        union all
        select C.address, 'nft_collections', null from nft_collections C where C.address in (select address from lookup)
        union all
        select J.address, 'jetton_masters', null from jetton_masters J where J.address in (select address from lookup)
      ) X
      left join address_metadata M on M.address = X.address and M.type = X.type
      left join address_metadata_flags F on F.address = X.address`;
    const tokenLists = tx`,
      wallets as (
        select W.address, W.balance::text as balance, W.owner, W.jetton
        from jetton_wallets W where W.address = any(${list})
      ), lookup as (
        select unnest(${list}) as address
        union
        select jetton from wallets where jetton is not null
      )`;
    return tx<AddressRow[]>`
      with A as (select ${accounts}::text[]::tonaddr[] as accounts)${lookup.metadata ? tokenLists : tx``}
      ${lookup.book ? bookParts : tx``}
      ${lookup.book && lookup.metadata ? tx`union all` : tx``}
      ${lookup.metadata ? tokenParts : tx``}
      order by part, address, type`;
  });
  return {
    addressBook: lookup.book ? await addressBook(sql, signal, accounts, rows, lookup.testnet) : {},
    metadata: lookup.metadata ? metadataOf(rows) : {},
  };
}

/** The token columns of the parts that are not tokens. */
function noTokenColumns(tx: Sql) {
  return tx`null::text as type, null::text as balance, null::tonaddr as owner, null::tonaddr as jetton, null::text as nft_index,
    null::boolean as valid, null::varchar as name, null::varchar as symbol, null::varchar as description, null::varchar as image,
    null::jsonb as extra, null::boolean as is_nsfw, null::boolean as is_scam`;
}

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

async function addressBook(
  sql: Sql,
  signal: AbortSignal,
  accounts: readonly string[],
  rows: readonly AddressRow[],
  testnet: boolean,
): Promise<Record<string, AddressBookRow>> {
  const stateByAccount = new Map<string, AddressRow>();
  const domainByAccount = new Map<string, string | null>();
  for (const row of rows) {
    if (row.part === statePart) stateByAccount.set(row.address, row);
    else if (row.part === domainPart) domainByAccount.set(row.address, row.domain);
  }
  // This answer's codes' interfaces, taken before any is learnt: learning may push a code it needs out of the map.
  const interfacesOfCode = new Map<string, string[] | null>();
  const unknownCodes = new Set<string>();
  for (const { code_hash: codeHash, has_methods: hasMethods } of stateByAccount.values()) {
    if (hasMethods !== true || codeHash === null || interfacesOfCode.has(codeHash)) continue;
    if (interfacesByCode.has(codeHash)) interfacesOfCode.set(codeHash, interfacesByCode.get(codeHash) ?? null);
    else unknownCodes.add(codeHash);
  }
  if (unknownCodes.size > 0) {
    const methods = await runQuery(
      signal,
      sql,
      "address_book_methods",
      (tx) => tx<MethodsRow[]>`select C.code_hash, C.methods from contract_methods C where C.code_hash = any(${[...unknownCodes]}::text[]::tonhash[])`,
    );
    for (const row of methods) {
      const interfaces = detectInterfaces(row.code_hash, row.methods);
      interfacesOfCode.set(row.code_hash, interfaces);
      keepInterfaces(row.code_hash, interfaces);
    }
  }
  const interfacesOf = ({ code_hash: codeHash, has_methods: hasMethods }: AddressRow): string[] | null => {
    if (hasMethods !== true || codeHash === null || !interfacesOfCode.has(codeHash)) return detectInterfaces(codeHash, null);
    return interfacesOfCode.get(codeHash) ?? null;
  };
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

function metadataOf(rows: readonly AddressRow[]): Record<string, AddressMetadata> {
  const metadata: Record<string, AddressMetadata> = {};
  for (const row of rows) {
    if (row.part !== tokenPart) continue;
    const entry = (metadata[row.address] ??= { $typeName: "tonquery.v1.AddressMetadata", isIndexed: true, tokenInfo: [] });
    const info = tokenInfo(row);
    if (info.valid === undefined) entry.isIndexed = false;
    entry.tokenInfo.push(info);
  }
  return metadata;
}

function tokenInfo(row: TokenColumns): TokenInfo {
  const base = { $typeName: "tonquery.v1.TokenInfo", type: row.type as string, nftIndex: optional(row.nft_index) } as const;
  if (row.type === "jetton_wallets") {
    const extra: JsonObject = { balance: row.balance, jetton: row.jetton, owner: row.owner };
    return { ...base, valid: true, extra };
  }
  // Not fetched yet: toncenter answers with the bare type and marks the address not indexed.
  if (row.valid === null) return base;
  if (!row.valid) return { ...base, valid: false };
  const nsfw = row.is_nsfw === true;
  return {
    ...base,
    valid: true,
    name: optional(row.name),
    symbol: optional(row.symbol),
    description: optional(row.description),
    image: optional(row.image),
    isNsfw: nsfw || undefined,
    isScam: row.is_scam === true || undefined,
    extra: row.extra === null ? undefined : nsfw ? blurImages(row.extra) : row.extra,
  };
}

/** For nsfw tokens toncenter serves the blurred previews in place of the images and drops the *_blur keys. */
function blurImages(extra: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(extra)) if (!key.endsWith("_blur")) out[key] = value;
  for (const size of ["_image_small", "_image_medium", "_image_big"]) {
    if (size in extra) out[size] = extra[`${size}_blur`] ?? "";
  }
  return out;
}
