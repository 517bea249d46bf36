// How the profiles of bench/profile-summary.ts are read: where a frame's code lives, and the kind of work that makes
// it (GC, driver parsing, building objects from rows, JSON, protobuf, ...), for V8's .cpuprofile and for perf's samples.

import { fileURLToPath } from "node:url";
import { projectRootUrl } from "../src/runtime/project-files.ts";

/**
 * The checkout this script belongs to (with its trailing slash), so that its src/ is recognised in whichever worktree
 * profiled it.
 */
const projectRoot = fileURLToPath(projectRootUrl);

export function where(url: string): string {
  if (url === "") return "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const path = url.replace(/^file:\/\//, "");
  // The service runs from its build (dist/, see npm start): its files are named as their sources are.
  if (path.startsWith(projectRoot)) return path.slice(projectRoot.length).replace(/^dist\//, "");
  if (url.startsWith("node:")) return url;
  return url.replace(/^file:\/\//, "");
}

/**
 * The kind of work a frame does, by where its code lives; undefined for frames that only pass work on (natives,
 * Node's internals, the event loop), which take the kind of the nearest caller that has one.
 */
export function kindOf(functionName: string, where: string): string | undefined {
  // Another checkout's src/ (a base profiled beside this one) counts as src/ too.
  const place = where.replace(/^.*?\/(?=src\/)/, "");
  if (functionName === "(garbage collector)") return "GC";
  if (functionName === "(idle)") return "idle";
  if (place === "postgres") return "driver (reading rows)";
  if (place === "@bufbuild/protobuf" || place.startsWith("src/present/proto/") || place.startsWith("src/encode/proto")) return "protobuf";
  if (place.startsWith("src/present/json-text.") || place.startsWith("src/present/v") || place.startsWith("src/encode/v") || place.startsWith("src/encode/json-")) {
    return "JSON (presenting, stringifying)";
  }
  if (place.startsWith("src/db/") || place.startsWith("src/handlers/")) return "objects from rows (scan, assemble)";
  if (place.startsWith("src/decoding/") || place === "ohm-js" || place === "@ton-community/tlb-parser") return "body decoding";
  return undefined;
}

export const otherKind = "other (HTTP, event loop, ...)";
/** A frame of V8's collector (its own work, on any thread); the write barrier and allocation stay with their caller. */
const collectorFrame = /v8::internal::(Heap::(CollectGarbage|PerformGarbageCollection)|Scavenger|ScavengerCollector|MarkCompactCollector|MinorMarkSweep|IncrementalMarking|ConcurrentMarking|MarkingVisitorBase|Sweeper|Evacuat|GCTracer|MemoryReducer|PointersUpdating|RememberedSetUpdating|ParallelClearing|InternalizedStringTableCleaner)/;

/** A JIT frame as --perf-basic-prof-only-functions names it: `JS:*name file:///…/x.js:12:3` (`*` optimised, `^` baseline…). */
const jsFrame = /^JS:[*^+~]?'?(\S*)\s+(\S+?):(\d+):\d+$/;

/**
 * The kind of one perf sample: the collector's, on the event loop or its helper threads; a kind of the request's work
 * (as for V8's profile: the nearest frame that has one, natives and the kernel taking their caller's); or the thread's.
 */
export function perfSampleKind(thread: string, frames: readonly { symbol: string; kernel: boolean }[]): string {
  const collecting = frames.some((f) => collectorFrame.test(f.symbol));
  if (thread === "V8Worker" || thread.startsWith("V8 DefaultWorke")) {
    if (collecting) return "GC, V8's helper threads";
    return frames.some((f) => f.symbol.includes("compiler::")) ? "V8's helper threads, compiling" : "V8's helper threads, other (waking, malloc)";
  }
  if (thread.startsWith("libuv-worker")) return "thread pool (compression)";
  if (thread !== "MainThread" && thread !== "node") return `other threads (${thread})`;
  if (collecting) return "GC, event loop";
  for (const frame of frames) {
    const js = jsFrame.exec(frame.symbol);
    if (js === null) continue;
    const kind = kindOf(js[1] ?? "", where(js[2] ?? ""));
    if (kind !== undefined) return kind;
  }
  return otherKind;
}

/** What a run's perf samples add up to: by kind of work, by thread, and by leaf frame (the function on the core). */
export interface PerfTally {
  samples: number;
  byKind: Map<string, number>;
  byThread: Map<string, number>;
  byLeaf: Map<string, number>;
}

/** perf script's text (`-F comm,tid,ip,sym,dso`): a line naming the thread, then the stack, leaf first; a blank line ends a sample. */
export function tallyPerfScript(text: string): PerfTally {
  const tally: PerfTally = { samples: 0, byKind: new Map(), byThread: new Map(), byLeaf: new Map() };
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  for (const block of text.split(/\n\s*\n/)) {
    const lines = block.split("\n").filter((line) => line.trim() !== "");
    const head = lines[0]?.trim();
    if (head === undefined) continue;
    const thread = head.replace(/\s+\d+$/, "");
    const frames = lines.slice(1).map((line) => {
      const m = /^\s*[0-9a-f]+\s+(.*?)\s+\(([^)]*)\)$/.exec(line);
      return { symbol: m?.[1] ?? line.trim(), kernel: m?.[2] === "[kernel.kallsyms]" };
    });
    tally.samples++;
    add(tally.byKind, perfSampleKind(thread, frames));
    add(tally.byThread, thread);
    const leaf = frames[0];
    if (leaf !== undefined) add(tally.byLeaf, leaf.kernel ? `[kernel] ${leaf.symbol}` : leaf.symbol.replace(/file:\/\/\S*?\/(src|node_modules)\//, "$1/"));
  }
  return tally;
}
