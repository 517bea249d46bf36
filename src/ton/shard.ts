// Shard ids are signed 64-bit integers in the index and in the typed API; toncenter's v3 JSON prints the
// same 64 bits as unsigned upper-case hex without padding (Go's %X), e.g. "8000000000000000".

export function shardToUnsignedHex(shard: string): string {
  // A page's transactions come from a handful of shards, and the conversion goes through BigInt: the last one is kept.
  if (shard !== lastShard) {
    lastHex = BigInt.asUintN(64, BigInt(shard)).toString(16).toUpperCase();
    lastShard = shard;
  }
  return lastHex;
}

let lastShard: string | undefined;
let lastHex = "";

/** Parses the v3 form (unsigned hex) back into the signed decimal the index stores. */
export function unsignedHexToShard(hex: string): string {
  return BigInt.asIntN(64, BigInt(`0x${hex}`)).toString();
}
