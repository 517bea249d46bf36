import type { JsonObject } from "@bufbuild/protobuf";
import type { AddressMetadata, TokenInfo } from "../../gen/tonquery/v1/trace_pb.ts";
import { runQuery, type Sql } from "./client.ts";
import { optional } from "./rows.ts";

type TokenRow = {
  address: string;
  type: "jetton_wallets" | "jetton_masters" | "nft_items" | "nft_collections";
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

/**
 * What the token tables know of the given addresses, as toncenter's `metadata`: jetton wallets (with their
 * masters added to the lookup), jetton masters, NFT items and collections, with the off-chain metadata the
 * fetcher cached and the nsfw/scam flags. One statement; addresses that are not tokens are absent. Ordered, as
 * toncenter's Go maps print sorted: the same metadata must be the same bytes, or an answer's ETag would change
 * whenever PostgreSQL picks another join order (its generic plan after five runs of the statement did).
 */
export async function selectMetadata(sql: Sql, signal: AbortSignal, addresses: Iterable<string>): Promise<Record<string, AddressMetadata>> {
  const accounts = [...new Set(addresses)];
  if (accounts.length === 0) return {};
  const rows = await runQuery(
    signal,
    sql,
    "token_metadata",
    (tx) => tx<TokenRow[]>`
      with wallets as (
        select W.address, W.balance::text as balance, W.owner, W.jetton
        from jetton_wallets W where W.address = any(${accounts}::text[]::tonaddr[])
      ), lookup as (
        select unnest(${accounts}::text[]::tonaddr[]) as address
        union
        select jetton from wallets where jetton is not null
      )
      select W.address, 'jetton_wallets' as type, W.balance, W.owner, W.jetton, null::text as nft_index, true as valid,
        null::varchar as name, null::varchar as symbol, null::varchar as description, null::varchar as image,
        null::jsonb as extra, null::boolean as is_nsfw, null::boolean as is_scam
      from wallets W
      union all
      select X.address, X.type, null, null, null, X.nft_index, M.valid, M.name, M.symbol, M.description, M.image, M.extra,
        F.is_nsfw, F.is_scam
      from (
        select N.address, 'nft_items' as type, N.index::text as nft_index from nft_items N where N.address in (select address from lookup)
        union all
        select C.address, 'nft_collections', null from nft_collections C where C.address in (select address from lookup)
        union all
        select J.address, 'jetton_masters', null from jetton_masters J where J.address in (select address from lookup)
      ) X
      left join address_metadata M on M.address = X.address and M.type = X.type
      left join address_metadata_flags F on F.address = X.address
      order by address, type`,
  );

  const metadata: Record<string, AddressMetadata> = {};
  for (const row of rows) {
    const entry = (metadata[row.address] ??= { $typeName: "tonquery.v1.AddressMetadata", isIndexed: true, tokenInfo: [] });
    const info = tokenInfo(row);
    if (info.valid === undefined) entry.isIndexed = false;
    entry.tokenInfo.push(info);
  }
  return metadata;
}

function tokenInfo(row: TokenRow): TokenInfo {
  const base = { $typeName: "tonquery.v1.TokenInfo", type: row.type, nftIndex: optional(row.nft_index) } as const;
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
