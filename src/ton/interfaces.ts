import { crc16 } from "@ton/core";
import table from "./interfaces.json" with { type: "json" };

// Contract-interface detection for the `interfaces` field of address_book rows, as toncenter's v3 API does it
// (ton-index-go `index/detect/interfaces.go` DetectInterface, called from `QueryAddressBookImpl`).
//
// The data (interface names, code hashes, get-method names) lives in interfaces.json, in the source's order.
// Note the name "dedust_liquidity_deposit " carries a trailing space in toncenter's table, and toncenter outputs
// it that way, so it is kept verbatim.

/**
 * Get-method id of a method name, as tonutils-go `tlb.MethodNameHash` and the TVM compiler compute it:
 * CRC-16/XMODEM (poly 0x1021, init 0, no reflection, no final xor) of the UTF-8 name, with bit 16 set.
 */
export function getMethodId(name: string): number {
  // @ton/core's crc16 is the same CRC-16/XMODEM, returned as two big-endian bytes.
  return crc16(Buffer.from(name, "utf8")).readUInt16BE(0) | 0x10000;
}

/**
 * Code hashes (standard base64) of wallet contracts, for which toncenter renders the non-bounceable
 * user-friendly address (`WalletsHashMap`). Deliberately separate from the interface table: e.g. wallet_v5_beta's
 * second code hash there is not a member.
 */
export const walletCodeHashes: ReadonlySet<string> = new Set([
  "oM/CxIruFqJx8s/AtzgtgXVs7LEBfQd/qqs7tgL2how=", // wallet v1r1
  "1JAvzJ+tdGmPqONTIgpo2g3PcuMryy657gQhfBfTBiw=", // wallet v1r2
  "WHzHie/xyE9G7DeX5F/ICaFP9a4k8eDHpqmcydyQYf8=", // wallet v1r3
  "XJpeaMEI4YchoHxC+ZVr+zmtd+xtYktgxXbsiO7mUyk=", // wallet v2r1
  "/pUw0yQ4Uwg+8u8LTCkIwKv2+hwx6iQ6rKpb+MfXU/E=", // wallet v2r2
  "thBBpYp5gLlG6PueGY48kE0keZ/6NldOpCUcQaVm9YE=", // wallet v3r1
  "hNr6RJ+Ypph3ibojI1gHK8D3bcRSQAKl0JGLmnXS1Zk=", // wallet v3r2
  "ZN1UgFUixb6KnbWc6gEFzPDQh4bKeb64y3nogKjXMi0=", // wallet v4r1
  "/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=", // wallet v4r2
  "89fKU0k97trCizgZhqhJQDy6w9LFhHea8IEGWvCsS5M=", // wallet v5 beta
  "IINLe3KxEhR+Gy+0V7hOdNGjDwT3N9T2KmaOlVLSty8=", // wallet v5r1
]);

interface MethodInterface {
  readonly name: string;
  readonly methodIds: readonly number[];
}

/** Exact code hash → interface name; the first interface (in table order) listing a hash wins, as in toncenter. */
const byCodeHash = new Map<string, string>();
/** Interfaces that can match by get-methods (non-empty method list), sorted by name so matches come out sorted. */
const byMethods: readonly MethodInterface[] = buildTables();

function buildTables(): MethodInterface[] {
  const withMethods: MethodInterface[] = [];
  for (const entry of table.interfaces) {
    for (const hash of entry.codeHashes) {
      if (!byCodeHash.has(hash)) byCodeHash.set(hash, entry.name);
    }
    if (entry.methods.length > 0) {
      withMethods.push({ name: entry.name, methodIds: entry.methods.map(getMethodId) });
    }
  }
  // Go's sort.Strings orders by bytes; the names are ASCII, so UTF-16 code-unit order is the same.
  return withMethods.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The `interfaces` of an address_book row for an account whose latest state has `codeHash` (standard base64,
 * null if the account has no code) and whose code has the get-method ids `methods` (contract_methods.methods,
 * null when the code hash has no contract_methods row; bigint values arrive as decimal strings).
 *
 * - both null → null (toncenter skips detection);
 * - code hash listed in the table → [that interface's name] (methods ignored);
 * - otherwise no methods (null or empty) → [] (so a known code hash with no methods row gives [], not null);
 * - otherwise the names of all interfaces whose whole (non-empty) method list is among `methods`, sorted,
 *   or null when there is none (toncenter returns a nil slice, which serialises as null).
 */
export function detectInterfaces(
  codeHash: string | null,
  methods: readonly (string | number | bigint)[] | null,
): string[] | null {
  if (codeHash === null && methods === null) return null;

  if (codeHash !== null && codeHash !== "") {
    const name = byCodeHash.get(codeHash);
    if (name !== undefined) return [name];
  }

  if (methods === null || methods.length === 0) return [];

  const present = new Set<number>();
  for (const id of methods) present.add(Number(id));

  let matches: string[] | null = null;
  for (const iface of byMethods) {
    if (iface.methodIds.every((id) => present.has(id))) (matches ??= []).push(iface.name);
  }
  return matches;
}
