// Two full runs of the bench compared case by case, each figure as a ratio to its own floor in the same run, so that
// runs on machines of different speed (this one's varies by a factor of two from day to day) can be read side by side.
//
//   node bench/compare.ts BEFORE.json AFTER.json [--title "round 2 → round 3"]

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { Protocol } from "./args.ts";
import { type BenchResult, findRun, floorRatioBound, type RunResult, targetsSpec } from "./report.ts";

/** The three figures the targets judge, for one case and door of one run; undefined where the run lacks them. */
export interface FloorRatios {
  /** p50 over the floor's p50 at concurrency 1 (lower is better). */
  latencyAt1?: number;
  /** req/s over the floor's at concurrency 16 (higher is better). */
  throughputAt16?: number;
  /** Server CPU over PostgreSQL CPU per request at concurrency 16 (lower is better). */
  cpuAt16?: number;
}

export interface CaseComparison {
  case: string;
  protocol: Protocol;
  /** Whether the page targets judge the case (masterchainInfo has a target of its own). */
  page: boolean;
  before: FloorRatios;
  after: FloorRatios;
}

function floorRatios(runs: readonly RunResult[], caseId: string, protocol: Protocol): FloorRatios {
  const get = (p: RunResult["protocol"], c: number) => findRun(runs, caseId, p, c);
  const ratio = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : undefined;
  const c16 = targetsSpec.throughputConcurrency;
  const at16 = get(protocol, c16);
  return {
    latencyAt1: ratio(get(protocol, 1)?.stats.p50, get("floor", 1)?.stats.p50),
    throughputAt16: ratio(at16?.stats.rps, get("floor", c16)?.stats.rps),
    cpuAt16: ratio(at16?.cpuPerRequestMs.server, at16?.cpuPerRequestMs.postgres),
  };
}

/** Every case and door the after run measured that the before run measured too, in the after run's order. */
export function compareRuns(before: readonly RunResult[], after: readonly RunResult[], isPage: (caseId: string) => boolean): CaseComparison[] {
  const comparisons: CaseComparison[] = [];
  for (const r of after) {
    if (r.protocol === "floor") continue;
    const same = (other: { case: string; protocol: RunResult["protocol"] }) => other.case === r.case && other.protocol === r.protocol;
    if (comparisons.some(same) || !before.some(same)) continue;
    comparisons.push({
      case: r.case,
      protocol: r.protocol,
      page: isPage(r.case),
      before: floorRatios(before, r.case, r.protocol),
      after: floorRatios(after, r.case, r.protocol),
    });
  }
  return comparisons;
}

type Figure = keyof FloorRatios;

/** Each figure's title, which way is better, and the bound its target sets. */
const figures: Record<Figure, { title: string; lowerIsBetter: boolean; bound: (protocol: Protocol) => number }> = {
  latencyAt1: { title: "p50 / floor's at c=1", lowerIsBetter: true, bound: floorRatioBound },
  throughputAt16: { title: "req/s / floor's at c=16", lowerIsBetter: false, bound: () => targetsSpec.throughputOfFloor },
  cpuAt16: { title: "server CPU / PostgreSQL's at c=16", lowerIsBetter: true, bound: () => targetsSpec.serverCpuOfPostgres },
};

/**
 * How many page cases moved each way on one figure: better, worse, and those that hold the target before and after;
 * `judged`, how many page cases and doors there are.
 */
export function tally(comparisons: readonly CaseComparison[], figure: Figure, bound: (protocol: Protocol) => number) {
  let better = 0;
  let worse = 0;
  let holdBefore = 0;
  let holdAfter = 0;
  let judged = 0;
  const { lowerIsBetter } = figures[figure];
  const holds = (v: number, protocol: Protocol) => (lowerIsBetter ? v <= bound(protocol) : v >= bound(protocol));
  for (const c of comparisons) {
    if (!c.page) continue;
    judged++;
    const b = c.before[figure];
    const a = c.after[figure];
    if (b === undefined || a === undefined) continue;
    if (a !== b) (a < b) === lowerIsBetter ? better++ : worse++;
    if (holds(b, c.protocol)) holdBefore++;
    if (holds(a, c.protocol)) holdAfter++;
  }
  return { judged, better, worse, holdBefore, holdAfter };
}

const ratioText = (v: number | undefined) => (v === undefined ? "—" : `×${v.toFixed(2)}`);

/** The comparison as Markdown: a summary line per figure (page cases only), then one row per case and door. */
export function comparisonMarkdown(comparisons: readonly CaseComparison[], title: string): string {
  const order = Object.keys(figures) as Figure[];
  const lines = [`### ${title}`, ""];
  for (const figure of order) {
    const t = tally(comparisons, figure, figures[figure].bound);
    lines.push(
      `- ${figures[figure].title}: better in ${t.better}, worse in ${t.worse} of ${t.judged} page cases and doors; the target holds in ${t.holdBefore} before, ${t.holdAfter} after`,
    );
  }
  lines.push("", `| case | door | ${order.map((f) => `${figures[f].title}, before → after`).join(" | ")} |`, `|---|---|${order.map(() => "--:").join("|")}|`);
  for (const c of comparisons) {
    lines.push(`| ${c.case} | ${c.protocol} | ${order.map((f) => `${ratioText(c.before[f])} → ${ratioText(c.after[f])}`).join(" | ")} |`);
  }
  return `${lines.join("\n")}\n`;
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { title: { type: "string" } } });
  if (positionals.length !== 2) {
    console.error('usage: node bench/compare.ts BEFORE.json AFTER.json [--title "…"]');
    process.exit(2);
  }
  const [before, after] = positionals.map((file) => JSON.parse(readFileSync(file, "utf8")) as BenchResult) as [BenchResult, BenchResult];
  const pageMethods = new Set<string>(targetsSpec.pageMethods);
  const isPage = (caseId: string) => after.cases.some((c) => c.id === caseId && pageMethods.has(c.method));
  process.stdout.write(comparisonMarkdown(compareRuns(before.runs, after.runs, isPage), values.title ?? `${before.startedAt} → ${after.startedAt}`));
}
