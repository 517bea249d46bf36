// Summarises a V8 .cpuprofile (from `npm run bench -- --server-node-arg=--cpu-prof --server-node-arg=--cpu-prof-dir=DIR`):
// self time by function and by package or source file, total (inclusive) time of the project's own functions, and
// the busy time's shares by kind of work (GC, driver parsing, building objects from rows, JSON, protobuf, ...).
//
//   node bench/profile-summary.ts DIR/CPU.*.cpuprofile [--top 25]

import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { projectRootUrl } from "../src/runtime/project-files.ts";

/**
 * The checkout this script belongs to (with its trailing slash), so that its src/ is recognised in whichever worktree
 * profiled it.
 */
const projectRoot = fileURLToPath(projectRootUrl);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function where(url: string): string {
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
function kindOf(functionName: string, where: string): string | undefined {
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

const otherKind = "other (HTTP, event loop, ...)";
/** Kinds only a request's work has: the first sample of one ends the start-up. */
const requestKinds = new Set(["driver (reading rows)", "protobuf", "JSON (presenting, stringifying)", "objects from rows (scan, assemble)"]);

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string" } } });
const top = Number(values.top ?? 25);
for (const file of positionals) {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totalUs = profile.endTime - profile.startTime;

  const byFunction = new Map<string, number>();
  const byPlace = new Map<string, number>();
  const inclusive = new Map<string, number>();
  /** The kind of each sampled node, from its stack. */
  const kindOfNode = new Map<number, string>();
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const f = node.callFrame;
    const name = `${f.functionName || "(anonymous)"} ${where(f.url)}:${f.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byPlace.set(where(f.url), (byPlace.get(where(f.url)) ?? 0) + us);
    // Inclusive time of project functions (src/, gen/): each distinct frame once per sample stack.
    const seen = new Set<string>();
    let kind: string | undefined;
    let startUp = false;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)?.callFrame;
      if (cf === undefined) break;
      const w = where(cf.url);
      kind ??= kindOf(cf.functionName, w);
      // Building the server (the body decoder's schema compiled at start) and loading modules are no request's work.
      if (cf.functionName === "createServer" && /src\/(server\/)?server\.[jt]s$/.test(w)) startUp = true;
      if (w.startsWith("node:internal/modules/")) startUp = true;
      if (!w.startsWith("src/")) continue;
      const key = `${cf.functionName || "(anonymous)"} ${w}:${cf.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
    kindOfNode.set(id, startUp ? "start-up" : (kind ?? otherKind));
  }
  // Until the first sample of a request's own work, whatever ran (the garbage collector included) was the start-up's.
  const byKind = new Map<string, number>();
  let serving = false;
  profile.samples.forEach((id, i) => {
    let kind = kindOfNode.get(id) ?? otherKind;
    if (!serving && requestKinds.has(kind)) serving = true;
    if (!serving && kind !== "idle") kind = "start-up";
    byKind.set(kind, (byKind.get(kind) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const startUpUs = byKind.get("start-up") ?? 0;
  const busyUs = totalUs - (byKind.get("idle") ?? 0) - startUpUs;
  byKind.delete("idle");
  byKind.delete("start-up");
  const pct = (us: number) => `${((100 * us) / totalUs).toFixed(1).padStart(5)}%`;
  const print = (title: string, map: Map<string, number>) => {
    process.stdout.write(`\n${title}\n`);
    for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(us)} ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}\n`);
  };
  process.stdout.write(`${file}: ${(totalUs / 1e6).toFixed(1)} s profiled\n`);
  print("self time by package / file", byPlace);
  print("self time by function", byFunction);
  print("inclusive time of src/ functions", inclusive);
  process.stdout.write(
    `\nshares of the busy time (${(busyUs / 1e6).toFixed(1)} s; idle and start-up, ${(startUpUs / 1e6).toFixed(1)} s, left out); a native frame counts as its caller's kind\n`,
  );
  for (const [k, us] of [...byKind].sort((a, b) => b[1] - a[1])) {
    process.stdout.write(`  ${((100 * us) / busyUs).toFixed(1).padStart(5)}% ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}\n`);
  }
}
