import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { brotliParams } from "../src/rest/compression.ts";
import { brotliWindowBytes } from "./support/brotli-window.ts";
import { rpcCompressions } from "../src/server/rpc-door.ts";

// The RPC doors compress responses at the REST door's levels: at connect-node's defaults, brotli (quality 11) cost
// 1.7 s of server CPU for one 100-trace page, which any client could ask for.

const json = Buffer.from(JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ i, hash: `hash-${i * 7919}`, text: "x".repeat(i % 50) }))));

describe("RPC response compression", () => {
  it("codes brotli at the REST door's quality and window, not brotli's defaults (11, 4 MB)", async () => {
    const br = rpcCompressions.find((c) => c.name === "br");
    const coded = Buffer.from(await (br as NonNullable<typeof br>).compress(json));
    expect(coded.equals(brotliCompressSync(json, { params: brotliParams }))).toBe(true);
    expect(brotliParams[constants.BROTLI_PARAM_QUALITY]).toBeLessThan(11);
    expect(coded.equals(brotliCompressSync(json))).toBe(false);
    expect(brotliWindowBytes(coded)).toBe(256 * 1024);
    expect(brotliDecompressSync(coded).equals(json)).toBe(true);
  });

  it("codes gzip that decodes to the same bytes, and decodes request bodies as connect-node does", async () => {
    const gzip = rpcCompressions.find((c) => c.name === "gzip");
    const coded = await (gzip as NonNullable<typeof gzip>).compress(json);
    expect(gunzipSync(coded).equals(json)).toBe(true);
    expect(Buffer.from(await (gzip as NonNullable<typeof gzip>).decompress(coded, json.length)).equals(json)).toBe(true);
  });
});
