// What a person typed into the search box: a 32-byte hash (of a transaction, a message or a trace) or an account
// address, in the forms the API accepts. The page only sorts the input into one of the two; the server parses and
// checks it (a user-friendly address with a bad checksum is its INVALID_ARGUMENT, shown as it says).

export type Lookup =
  | { kind: "hash"; hash: string }
  | { kind: "account"; address: string }
  | { kind: "invalid"; reason: string };

const hexHash = /^(?:0x)?[0-9a-fA-F]{64}$/;
/** 32 bytes in base64 (44 characters with its padding) or base64url (43 without). */
const base64Hash = /^[A-Za-z0-9+/_-]{43}=?$/;
const rawAddress = /^-?\d{1,3}:[0-9a-fA-F]{64}$/;
/** 36 bytes (flags, workchain, account id, checksum) in base64 or base64url: 48 characters. */
const friendlyAddress = /^[A-Za-z0-9+/_-]{48}$/;

export const lookupHelp =
  "Paste a transaction hash, a message hash or a trace id (64 hex digits, or 44 base64 characters), or an account address (0:… raw, or the 48-character user-friendly form).";

export function classifyQuery(input: string): Lookup {
  const text = input.trim();
  if (text === "") return { kind: "invalid", reason: lookupHelp };
  if (hexHash.test(text) || base64Hash.test(text)) return { kind: "hash", hash: text };
  if (rawAddress.test(text) || friendlyAddress.test(text)) return { kind: "account", address: text };
  return { kind: "invalid", reason: `"${text.length > 80 ? `${text.slice(0, 80)}…` : text}" is neither a hash nor an address. ${lookupHelp}` };
}
