// Hashes arrive in any of the forms toncenter accepts and are compared in the index's own form:
// standard padded base64 of 32 bytes.

const hex64 = /^(?:0x)?([0-9a-fA-F]{64})$/;
const base64Like = /^[A-Za-z0-9+/_-]{43}=?$/;

/** The index form of a 32-byte hash given as hex (optionally 0x-prefixed), base64 or base64url; undefined if neither. */
export function parseHash(input: string): string | undefined {
  const hex = hex64.exec(input);
  if (hex) return Buffer.from(hex[1] as string, "hex").toString("base64");
  if (!base64Like.test(input)) return undefined;
  const bytes = Buffer.from(input.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  return bytes.length === 32 ? bytes.toString("base64") : undefined;
}
