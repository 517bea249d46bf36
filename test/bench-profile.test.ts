import { describe, expect, it } from "vitest";
import { tallyPerfScript } from "../bench/profile-kinds.ts";
import { projectRootUrl } from "../src/runtime/project-files.ts";

// perf script's text as bench/perf-record.ts writes it (-F comm,tid,ip,sym,dso), for a server in this checkout.
const node = "(/usr/bin/node)";
const js = (name: string, file: string) => `JS:*'${name} ${projectRootUrl.href}dist/${file}:10:3 (/tmp/perf-1.map)`;
const sample = (thread: string, ...frames: string[]) => `${thread}  1234 \n${frames.map((f, i) => `\t${(0x1000 + i).toString(16)} ${f}`).join("\n")}\n`;

const script = [
  sample("MainThread", js("field", "src/encode/json-pieces.js"), js("writeTransaction", "src/encode/v3-json/transaction.js")),
  // A native under a JS function takes its kind, as does the kernel under the driver's socket write.
  sample("MainThread", `v8::internal::String::ComputeAndSetRawHash ${node}`, `Builtins_FindOrderedHashMapEntry ${node}`, js("groupMessages", "src/db/transactions.js")),
  sample("MainThread", "finish_task_switch.isra.0 ([kernel.kallsyms])", `uv__write ${node}`, `JS:*nextWrite ${projectRootUrl.href}node_modules/postgres/src/connection.js:280:3 (/tmp/perf-1.map)`),
  // The collector on the event loop, called from anywhere.
  sample("MainThread", `v8::internal::Scavenger::ScavengeObject ${node}`, `v8::internal::Heap::CollectGarbage ${node}`, js("field", "src/encode/json-pieces.js")),
  sample("V8Worker", `v8::internal::ConcurrentMarking::RunMajor ${node}`, `v8::platform::DefaultJobWorker::Run ${node}`),
  sample("V8Worker", `v8::internal::compiler::EscapeAnalysis::Reduce ${node}`),
  sample("libuv-worker", `BrotliEncoderCompressStream ${node}`),
  // Nothing of the request's own: HTTP parsing under Node's internals.
  sample("MainThread", `llhttp__internal__run ${node}`, "JS:*'parserOnHeadersComplete node:_http_common:77:33 (/tmp/perf-1.map)"),
].join("\n");

describe("the bench's perf profiles", () => {
  it("count each on-CPU sample once, by thread and by the kind of work of its nearest kinded frame", () => {
    const tally = tallyPerfScript(script);
    expect(tally.samples).toBe(8);
    expect(Object.fromEntries(tally.byThread)).toEqual({ MainThread: 5, V8Worker: 2, "libuv-worker": 1 });
    expect(Object.fromEntries(tally.byKind)).toEqual({
      "JSON (presenting, stringifying)": 1,
      "objects from rows (scan, assemble)": 1,
      "driver (reading rows)": 1,
      "GC, event loop": 1,
      "GC, V8's helper threads": 1,
      "V8's helper threads, compiling": 1,
      "thread pool (compression)": 1,
      "other (HTTP, event loop, ...)": 1,
    });
    expect(tally.byLeaf.get("[kernel] finish_task_switch.isra.0")).toBe(1);
    expect(tally.byLeaf.get("JS:*'field src/encode/json-pieces.js:10:3")).toBe(1);
  });
});
