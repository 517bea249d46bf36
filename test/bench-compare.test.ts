import { describe, expect, it } from "vitest";
import { compareRuns, comparisonMarkdown, tally } from "../bench/compare.ts";
import type { LatencyStats } from "../bench/load.ts";
import type { RunResult } from "../bench/report.ts";

function run(caseId: string, protocol: RunResult["protocol"], concurrency: number, p50: number, rps: number, server = 1, postgres = 1): RunResult {
  return {
    case: caseId,
    protocol,
    concurrency,
    stats: { n: 10, errors: 0, deadlineExceeded: 0, censored: 0, failuresByStatus: {}, p50, p90: p50, p99: p50, max: p50, mean: p50, rps, elapsedMs: 1000, bytesPerRequest: 0 } as LatencyStats,
    cpuPerRequestMs: { server, postgres, bench: 1 },
  };
}

const page = (caseId: string) => caseId !== "masterchainInfo";

describe("bench/compare.ts", () => {
  const before = [
    run("traces.hot.l100", "floor", 1, 10, 100),
    run("traces.hot.l100", "floor", 16, 100, 50),
    run("traces.hot.l100", "rest", 1, 20, 50),
    run("traces.hot.l100", "rest", 16, 400, 20, 30, 15),
    run("traces.hot.l100", "grpc", 1, 14, 70),
    run("traces.hot.l100", "grpc", 16, 300, 25, 20, 20),
  ];
  // A machine twice as slow: every time doubles and every rate halves, the floor's as the service's where nothing
  // changed (gRPC); REST changed besides.
  const slower = (r: RunResult): RunResult => ({
    ...r,
    stats: { ...r.stats, p50: r.stats.p50 * 2, rps: r.stats.rps / 2 },
    cpuPerRequestMs: { ...r.cpuPerRequestMs, server: r.cpuPerRequestMs.server * 2, postgres: r.cpuPerRequestMs.postgres * 2 },
  });
  const after = [
    ...before.filter((r) => r.protocol === "floor").map(slower),
    run("traces.hot.l100", "rest", 1, 30, 33),
    run("traces.hot.l100", "rest", 16, 500, 16, 24, 24),
    ...before.filter((r) => r.protocol === "grpc").map(slower),
    run("traces.new", "rest", 1, 5, 200),
  ];

  it("reads each figure against its own run's floor, so a slower machine alone changes nothing", () => {
    const comparisons = compareRuns(before, after, page);
    expect(comparisons.map((c) => `${c.case} ${c.protocol}`)).toEqual(["traces.hot.l100 rest", "traces.hot.l100 grpc"]);
    const [rest, grpc] = comparisons;
    expect(rest?.before).toEqual({ latencyAt1: 2, throughputAt16: 0.4, cpuAt16: 2 });
    expect(rest?.after).toEqual({ latencyAt1: 1.5, throughputAt16: 0.64, cpuAt16: 1 });
    expect(grpc?.after).toEqual(grpc?.before);
  });

  it("counts the cases that moved each way and those inside a target's bound", () => {
    const comparisons = compareRuns(before, after, page);
    expect(tally(comparisons, "latencyAt1", (p) => (p === "rest" ? 1.3 : 1.5))).toEqual({ judged: 2, better: 1, worse: 0, holdBefore: 1, holdAfter: 1 });
    expect(tally(comparisons, "cpuAt16", () => 1)).toEqual({ judged: 2, better: 1, worse: 0, holdBefore: 1, holdAfter: 2 });
  });

  it("leaves a figure out where a run lacks it, prints one row per case and door, and counts page cases only", () => {
    const masterchainInfo = [run("masterchainInfo", "floor", 16, 1, 1000), run("masterchainInfo", "rest", 16, 1, 1500, 2, 1)];
    const comparisons = compareRuns(
      [...before, ...masterchainInfo, run("traces.cold", "rest", 1, 9, 1)],
      [...after, ...masterchainInfo, run("traces.cold", "rest", 16, 9, 1)],
      page,
    );
    expect(comparisons.map((c) => c.page)).toEqual([true, true, false, true]);
    expect(comparisons.at(-1)).toEqual({ case: "traces.cold", protocol: "rest", page: true, before: { latencyAt1: undefined, throughputAt16: undefined, cpuAt16: undefined }, after: { latencyAt1: undefined, throughputAt16: undefined, cpuAt16: 1 } });
    const text = comparisonMarkdown(comparisons, "before → after");
    expect(text).toContain("| traces.hot.l100 | rest | ×2.00 → ×1.50 | ×0.40 → ×0.64 | ×2.00 → ×1.00 |");
    expect(text).toContain("| traces.cold | rest | — → — | — → — | — → ×1.00 |");
    expect(text).toContain("- server CPU / PostgreSQL's at c=16: better in 1, worse in 0 of 3 page cases and doors; the target holds in 1 before, 2 after");
    expect(text).toContain("| masterchainInfo | rest | — → — | ×1.50 → ×1.50 | ×2.00 → ×2.00 |");
  });
});
