import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { heapPressureSignalAvailable } from "../src/runtime/heap-pressure.ts";
import { nativeHeapTrimAvailable } from "../src/runtime/native-heap.ts";

// The addons are built by `npm ci` (native/build.ts) where a compiler and Node's headers are, as on CI's machines, which
// must have them; elsewhere the service runs without them and these tests are skipped.
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

/**
 * In a process of its own: a burst of young garbage with a window of it live, which leaves V8 holding emptied heap
 * pages; then the signal, the heap's size right after the call, and after the collection it set going has ended.
 */
const burstThenSignal = `
import { getHeapStatistics } from "node:v8";
import { signalHeapPressure } from ${JSON.stringify(new URL("../src/runtime/heap-pressure.ts", import.meta.url).pathname)};
const heapMb = () => getHeapStatistics().total_heap_size / 1048576;
let window = [];
for (let i = 0; i < 150; i++) {
  window.push(Array.from({ length: 20000 }, (_, j) => ({ text: "value " + i + " " + j, j })));
  if (window.length > 20) window.shift();
}
window = [];
const before = heapMb();
const collection = signalHeapPressure();
const rightAfter = heapMb();
// The requests of a server under load: a little work in each turn of the event loop.
let turns = 0;
while (!collection.ended() && turns < 2000) {
  Array.from({ length: 200 }, (_, j) => ({ j }));
  await new Promise((resolve) => setTimeout(resolve, 5));
  turns++;
}
collection.close();
console.log(JSON.stringify({ before, rightAfter, after: heapMb(), ended: collection.ended(), pauseMs: collection.pauseMs() }));
`;

describe("signalHeapPressure", () => {
  it("is built where CI runs", () => {
    if (required) expect(heapPressureSignalAvailable).toBe(true);
  });

  it.skipIf(!heapPressureSignalAvailable)("sets going a collection that ends after the call and gives back the pages a burst left empty", () => {
    const output = execFileSync(process.execPath, ["--input-type=module", "-e", burstThenSignal], { encoding: "utf8" });
    const { before, rightAfter, after, ended, pauseMs } = JSON.parse(output) as Record<string, number | boolean>;
    // Nothing collected within the call (the last-resort collection would have given the pages back there)...
    expect(Math.abs((rightAfter as number) - (before as number))).toBeLessThan(5);
    // ...but by the collection that followed, whose pauses are counted.
    expect(ended).toBe(true);
    expect((before as number) - (after as number)).toBeGreaterThan(50);
    expect(pauseMs).toBeGreaterThan(0);
  });
});
