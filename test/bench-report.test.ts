import { describe, expect, it } from "vitest";
import type { LatencyStats } from "../bench/load.ts";
import { evaluateTargets, type RunResult } from "../bench/report.ts";
import type { DatasetFacts } from "../bench/cases.ts";

function run(protocol: RunResult["protocol"], concurrency: number, stats: Partial<LatencyStats>): RunResult {
  return {
    case: "traces.hot.l1000",
    protocol,
    concurrency,
    stats: { n: 10, errors: 0, deadlineExceeded: 0, censored: 0, failuresByStatus: {}, p50: 100, p90: 100, p99: 100, max: 100, mean: 100, rps: 1, elapsedMs: 1000, bytesPerRequest: 0, ...stats } as LatencyStats,
    cpuPerRequestMs: { server: 1, postgres: 1, bench: 1 },
  };
}

describe("the bench's targets", () => {
  it("never calls runs with requests shed at the deadline 'none shed'", () => {
    const runs = [run("floor", 16, { p99: 6700 }), run("rest", 16, { deadlineExceeded: 8 }), run("grpc", 16, {})];
    const targets = evaluateTargets([], runs, { transactions: 2_000_000 } as DatasetFacts, 100, [], [], 10_000);
    const deadline = targets.find((t) => t.name.startsWith("no 504"));
    expect(deadline?.pass).toBe(false);
    expect(deadline?.detail).not.toMatch(/none shed/);
    expect(deadline?.detail).toMatch(/1 of 2 runs shed requests/);
    expect(deadline?.failures).toHaveLength(1);
  });
});
