import { Address } from "@ton/core";

// Addresses are compared in the index's raw form, "<workchain>:<64 upper-case hex>"; @ton/core does the
// parsing and the checksummed user-friendly encoding.

/** The index form of an address given raw (any case) or user-friendly (base64 or base64url); undefined if neither. */
export function parseAddress(input: string): string | undefined {
  try {
    if (Address.isRaw(input)) return toIndexForm(Address.parseRaw(input));
    if (Address.isFriendly(input)) return toIndexForm(Address.parseFriendly(input).address);
  } catch {
    return undefined;
  }
  return undefined;
}

function toIndexForm(address: Address): string {
  return `${address.workChain}:${address.hash.toString("hex").toUpperCase()}`;
}

export interface FriendlyOptions {
  bounceable: boolean;
  testnet: boolean;
}

/**
 * User-friendly url-safe form of a raw index address, or undefined when the index holds something that is not
 * a standard address (addr_none, addr_extern, ...).
 */
export function userFriendly(raw: string, options: FriendlyOptions): string | undefined {
  const key = `${options.bounceable ? "b" : "n"}${options.testnet ? "t" : "m"}${raw}`;
  const known = friendlyForms.get(key);
  if (known !== undefined) return known;
  if (!Address.isRaw(raw)) return undefined;
  const friendly = Address.parseRaw(raw).toString({ urlSafe: true, bounceable: options.bounceable, testOnly: options.testnet });
  if (friendlyForms.size >= friendlyFormsLimit) friendlyForms.delete(friendlyForms.keys().next().value as string);
  friendlyForms.set(key, friendly);
  return friendly;
}

// The same accounts come back page after page, and @ton/core's encoding (parse, CRC16, base64) costs more than
// a lookup: a bounded cache of recent forms, oldest out first (about 2 MB when full).
const friendlyFormsLimit = 10_000;
const friendlyForms = new Map<string, string>();
