import type { AddressMetadata } from "../../gen/tonquery/v1/trace_pb.ts";
import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";

// How values are written for people: amounts in whole units, addresses by name, hashes and times short. Pure
// functions: the browser tests compare what the page draws with the API's answer written by these same rules.

/** An integer amount of the smallest unit as a decimal of whole units: 1500000000 with 9 decimals is "1.5". */
export function units(amount: string | bigint, decimals: number): string {
  let value: bigint;
  try {
    value = BigInt(amount);
  } catch {
    return String(amount);
  }
  const negative = value < 0n;
  if (negative) value = -value;
  const scale = 10n ** BigInt(decimals);
  const whole = (value / scale).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const fraction = decimals === 0 ? "" : (value % scale).toString().padStart(decimals, "0").replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`;
}

export function ton(nano: string | bigint | undefined): string {
  return nano === undefined ? "—" : `${units(nano, 9)} TON`;
}

/** "UQCg…N-qH": enough to tell addresses apart on a drawing; the panel and tooltips show them whole. */
export function shortAddress(address: string): string {
  const colon = address.indexOf(":");
  if (colon >= 0) return `${address.slice(0, colon + 1)}${address.slice(colon + 1, colon + 5)}…${address.slice(-4)}`;
  return address.length > 12 ? `${address.slice(0, 4)}…${address.slice(-4)}` : address;
}

export function shortHash(hash: string): string {
  return hash.length > 12 ? `${hash.slice(0, 6)}…${hash.slice(-4)}` : hash;
}

export function opcodeHex(opcode: number): string {
  return `0x${(opcode >>> 0).toString(16).padStart(8, "0")}`;
}

/** "jetton_internal_transfer" → "jetton internal transfer". */
export function words(identifier: string): string {
  return identifier.replace(/_/g, " ");
}

export function utcTime(unixSeconds: number | bigint | string | undefined): string {
  if (unixSeconds === undefined) return "—";
  const date = new Date(Number(unixSeconds) * 1000);
  return Number.isNaN(date.getTime()) ? String(unixSeconds) : `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

export interface Token {
  symbol: string;
  decimals: number;
}

const tonToken: Token = { symbol: "TON", decimals: 9 };

/**
 * Names of the addresses of one API answer, from its address book (domains, user-friendly forms, contract
 * interfaces) and token metadata (jetton symbols and decimals, NFT names).
 */
export class Names {
  readonly #book: Record<string, AddressBookRow>;
  readonly #metadata: Record<string, AddressMetadata>;

  constructor(book: Record<string, AddressBookRow>, metadata: Record<string, AddressMetadata>) {
    this.#book = book;
    this.#metadata = metadata;
  }

  /** The address in its user-friendly form when the book has one, else as given (raw). */
  friendly(address: string): string {
    return this.#book[address]?.userFriendly ?? address;
  }

  /** The address's .ton domain, if it has one. */
  domain(address: string): string | undefined {
    return this.#book[address]?.domain;
  }

  /** A short name for drawings and sentences: the domain, a token's name, else the short user-friendly form. */
  label(address: string): string {
    const row = this.#book[address];
    if (row?.domain) return row.domain;
    const info = this.#metadata[address]?.tokenInfo.find((token) => token.name !== undefined && token.name !== "");
    // Names are the token's own metadata, of any length: long ones are cut (the tooltip has the address).
    if (info?.name !== undefined && (info.type === "nft_items" || info.type === "nft_collections" || info.type === "jetton_masters")) return info.name.length > 40 ? `${info.name.slice(0, 39)}…` : info.name;
    return shortAddress(row?.userFriendly ?? address);
  }

  /** The contract interfaces detected for the address ("wallet v4r2", "jetton wallet"), or "" when none. */
  kind(address: string): string {
    return (this.#book[address]?.interfaces?.names ?? []).map(words).join(", ");
  }

  /** The jetton whose master is `asset`; TON for a null asset (swaps name TON so). */
  token(asset: string | null | undefined): Token {
    if (asset === null || asset === undefined || asset === "") return tonToken;
    const info = this.#metadata[asset]?.tokenInfo.find((token) => token.type === "jetton_masters");
    const decimals = Number(info?.extra?.decimals ?? 9);
    return { symbol: info?.symbol ?? info?.name ?? shortAddress(this.friendly(asset)), decimals: Number.isInteger(decimals) ? decimals : 9 };
  }

  /** "10 USD₮" for 10000000 of a 6-decimal jetton. */
  amount(amount: string | bigint | null | undefined, asset: string | null | undefined): string {
    const token = this.token(asset);
    return amount === null || amount === undefined ? `some ${token.symbol}` : `${units(amount, token.decimals)} ${token.symbol}`;
  }
}
