import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

// postgres.js 3.4.9 declares its Query (a Promise) and Result (an Array) with a static `[Symbol.species]` getter in
// the class body. On Node 24, a class with such a computed static member keeps V8's Maglev compiling its constructor
// over and over: each compile is aborted at its end ("Bailed out due to dependency change", a map it relied on no
// longer stable) and queued again, tens of times a second in a loaded server (hundreds of the 500 compiles of 6 s of
// trace requests), on V8's helper threads, which share the two cores with the event loop and PostgreSQL.
// patches/postgres+3.4.9.patch defines the same accessor after each class instead.

const driver = new URL(".", import.meta.resolve("postgres"));

/** Builds `count` queries and results as the driver does for every statement, under --trace-opt, and returns V8's trace. */
function compileTrace(count: number): string {
  const script = `
    const { Query } = await import(${JSON.stringify(new URL("query.js", driver).href)});
    const { default: Result } = await import(${JSON.stringify(new URL("result.js", driver).href)});
    function handler() {}
    handler.debug = false;
    const strings = Object.assign(["select ", ""], { raw: ["select ", ""] });
    let kept = [];
    for (let i = 0; i < ${count}; i++) {
      const query = new Query(strings, [i], handler, null);
      query.catch(() => {});
      const result = new Result();
      result.push({ i });
      result.count = 1;
      kept.push(query, result);
      if (kept.length > 2000) kept = [];
    }`;
  const run = spawnSync(process.execPath, ["--trace-opt", "--input-type=module", "-e", script], { encoding: "utf8", maxBuffer: 64 << 20 });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

describe("postgres driver under V8's optimising compilers", () => {
  it("compiles the Query and Result constructors without aborting, again and again", () => {
    const lines = compileTrace(300_000).split("\n");
    const about = (name: string, what: string) => lines.filter((line) => line.includes(what) && line.includes(`<JSFunction ${name} `));
    for (const name of ["Query", "Result"]) {
      // Hot enough to be optimised: otherwise the test would say nothing.
      expect(about(name, "compiling method").length, `${name} compiled`).toBeGreaterThan(0);
      expect(about(name, "aborted compiling"), `${name}'s aborted compiles`).toEqual([]);
    }
  });

  it("keeps the species the classes had: a query's then() is a plain Promise, a result's map() a plain Array", async () => {
    const { Query } = (await import(new URL("query.js", driver).href)) as { Query: new (...args: unknown[]) => Promise<unknown> };
    const { default: Result } = (await import(new URL("result.js", driver).href)) as { default: new () => unknown[] };
    const handler = Object.assign(() => {}, { debug: false });
    const query = new Query(Object.assign(["select 1"], { raw: ["select 1"] }), [], handler, null);
    const chained = query.then(() => undefined);
    expect(chained.constructor).toBe(Promise);
    expect(chained).not.toBeInstanceOf(Query);
    const result = new Result();
    result.push(1, 2);
    expect(result.map((x) => x).constructor).toBe(Array);
    expect(result.filter(() => true)).not.toBeInstanceOf(Result);
    expect(Object.getOwnPropertyDescriptor(Query, Symbol.species)?.enumerable).toBe(false);
  });
});
