// Summarises a V8 .cpuprofile (from `npm run bench -- --server-node-arg=--cpu-prof --server-node-arg=--cpu-prof-dir=DIR`):
// self time by function and by package or source file, total (inclusive) time of the project's own functions, and
// the busy time's shares by kind of work (GC, driver parsing, building objects from rows, JSON, protobuf, ...).
// Or perf's on-CPU samples of a run (`npm run bench -- --perf DIR`, a .txt per run, see perf-record.ts): the same
// kinds over every thread of the server, the collector's helpers included, and the most sampled functions.
//
//   node bench/profile-summary.ts DIR/CPU.*.cpuprofile [--top 25]
//   node bench/profile-summary.ts DIR/<case>.<protocol>.c<N>.txt [--top 25]

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { kindOf, otherKind, tallyPerfScript, where } from "./profile-kinds.ts";

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

/** Kinds only a request's work has: the first sample of one ends the start-up. */
const requestKinds = new Set(["driver (reading rows)", "protobuf", "JSON (presenting, stringifying)", "objects from rows (scan, assemble)"]);

async function summarisePerf(file: string, top: number): Promise<void> {
  const { samples, byKind, byThread, byLeaf } = tallyPerfScript(await readFile(file, "utf8"));
  const share = (n: number) => `${((100 * n) / samples).toFixed(1).padStart(5)}%`;
  const print = (title: string, map: Map<string, number>, count: number) => {
    process.stdout.write(`\n${title}\n`);
    for (const [k, n] of [...map].sort((a, b) => b[1] - a[1]).slice(0, count)) process.stdout.write(`  ${share(n)} ${String(n).padStart(7)}  ${k.slice(0, 150)}\n`);
  };
  process.stdout.write(`${file}: ${samples} on-CPU samples of the server (every thread, kernel time included)\n`);
  print("samples by thread", byThread, top);
  print("self samples by function (leaf frame)", byLeaf, top);
  print("shares of the server's CPU by kind of work (the collector's on any thread; natives and the kernel count as their caller's kind)", byKind, byKind.size);
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string" } } });
const top = Number(values.top ?? 25);
for (const file of positionals) {
  if (file.endsWith(".txt")) {
    await summarisePerf(file, top);
    continue;
  }
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
