import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { nativeHeapTrimAvailable } from "../src/runtime/native-heap.ts";

// The addon is built by `npm ci` (native/build.ts) where a compiler and Node's headers are, as on CI's machines, which
// must have it; elsewhere the service runs without it and these tests are skipped.
const required = process.env.CI === "true" && process.platform === "linux";

/**
 * In a process of its own (the resident set is the process's): Buffers of 8-14 KB, which Node takes from malloc, with
 * one in each thousand kept, as a burst of pages leaves them; then what the resident set does after a collection, and
 * after the trim.
 */
const burstThenTrim = `
import { trimNativeHeap } from ${JSON.stringify(new URL("../src/runtime/native-heap.ts", import.meta.url).pathname)};
const mb = () => process.memoryUsage.rss() / 1048576;
const start = mb();
const kept = [];
for (let round = 0; round < 30; round++) {
  const burst = [];
  for (let i = 0; i < 2000; i++) burst.push(Buffer.alloc(8000 + (i % 7) * 1000, i));
  kept.push(burst[round]);
}
globalThis.gc({ type: "major", execution: "sync", flavor: "last-resort" });
// V8 frees dead Buffers' memory on a thread of its own after the collection.
await new Promise((resolve) => setTimeout(resolve, 300));
const collected = mb();
const trimmed = trimNativeHeap();
console.log(JSON.stringify({ start, collected, afterTrim: mb(), trimmed, kept: kept.length }));
`;

describe("trimNativeHeap", () => {
  it("is built where CI runs", () => {
    if (required) expect(nativeHeapTrimAvailable).toBe(true);
  });

  it.skipIf(!nativeHeapTrimAvailable)("hands back the free pages malloc keeps after a burst of Buffers, which a collection alone leaves", () => {
    const output = execFileSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", burstThenTrim], { encoding: "utf8" });
    const { start, collected, afterTrim, trimmed } = JSON.parse(output) as { start: number; collected: number; afterTrim: number; trimmed: boolean };
    // The collection freed the Buffers, but malloc keeps most of their pages...
    expect(collected - start).toBeGreaterThan(20);
    // ...until trimmed.
    expect(trimmed).toBe(true);
    expect(collected - afterTrim).toBeGreaterThan(20);
  });
});
