import { describe, expect, it } from "vitest";
import { alternation, median, pairedRatios, parseVariant, summarise, type Window } from "../bench/ab.ts";

describe("bench/ab.ts", () => {
  it("reads a variant's settings, Node flags and checkout", () => {
    expect(parseVariant("main")).toEqual({ name: "main", env: {}, nodeArgs: [], entry: undefined });
    const v = parseVariant("pool4=DB_POOL_SIZE=4,--no-maglev,@/tmp/base");
    expect(v).toEqual({ name: "pool4", env: { DB_POOL_SIZE: "4" }, nodeArgs: ["--no-maglev"], entry: "/tmp/base/dist/bench/server-process.js" });
    expect(() => parseVariant("=X=1")).toThrow(/name/);
    expect(() => parseVariant("bad=nonsense")).toThrow(/VAR=value/);
  });

  it("reverses the variants' order every other round", () => {
    expect(alternation(3, 3)).toEqual([
      [0, 1, 2],
      [2, 1, 0],
      [0, 1, 2],
    ]);
  });

  it("sums the windows into rates per request and keeps their spread", () => {
    const windows: Window[] = [
      { requests: 100, errors: 0, elapsedMs: 2000, p50Ms: 30, serverCpuMs: 200, postgresCpuMs: 150 },
      { requests: 60, errors: 2, elapsedMs: 2000, p50Ms: 50, serverCpuMs: 180, postgresCpuMs: 90 },
      { requests: 80, errors: 0, elapsedMs: 2000, p50Ms: 40, serverCpuMs: 100, postgresCpuMs: 120 },
    ];
    const s = summarise(windows);
    expect(s.requestsPerSecond).toBeCloseTo(40, 10);
    expect(s.windowRange).toEqual([30, 50]);
    expect(s.serverCpuMsPerRequest).toBeCloseTo(480 / 240, 10);
    expect(s.postgresCpuMsPerRequest).toBeCloseTo(360 / 240, 10);
    expect(s.p50Ms).toBe(40);
    expect(s.errors).toBe(2);
  });

  it("compares the variants round by round, sorted", () => {
    const w = (requests: number): Window => ({ requests, errors: 0, elapsedMs: 1000, p50Ms: 1, serverCpuMs: 0, postgresCpuMs: 0 });
    // The machine slowed down by half in the second round: each round's ratio still says +10 %, +20 %, 0 %.
    expect(pairedRatios([w(100), w(50), w(80)], [w(110), w(60), w(80)]).map((r) => Number(r.toFixed(3)))).toEqual([1, 1.1, 1.2]);
    expect(pairedRatios([w(0)], [w(10)])).toEqual([]);
  });

  it("takes the middle of an even count as the mean of the two middle values", () => {
    expect(median([1, 2, 4])).toBe(2);
    expect(median([0.8, 1.0])).toBeCloseTo(0.9, 10);
    expect(median([])).toBeNaN();
  });
});
