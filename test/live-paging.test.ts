import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveWriter } from "../bench/generate/follow.ts";
import { restTraceView, type TraceView, traceProblems } from "./support/live-answers.ts";
import { type LiveIndex, oneServerIndex } from "./support/live-index.ts";

// [issue 22] A client paging an account's traces by cursor (/api/v3/traces?account=…&cursor=…) while new traces
// land and old ones grow. Pages are ordered by (end_lt, trace_id) and a cursor is the last row's position, so:
// - no page may be torn (it fails on main at 614dc45, like test/live-index.test.ts, and passes with one snapshot
//   per request);
// - a trace that grows between two pages takes a higher end_lt: walking newest first, one not yet reached jumps
//   above the cursor and the walk misses it; walking oldest first, one already returned comes back later;
// - what a client does about it (README, "Reading a live index"): after walking down, page again from the top
//   down to the first page's highest end_lt and keep each trace id once, its latest version. That pass finds
//   every trace the walk missed, because a trace can only leave the walk's window by rising above its top.

type Json = Record<string, unknown>;

interface Walked {
  pages: TraceView[][];
  /** end_lt of each trace as that page returned it. */
  endLt: Map<string, bigint[]>;
}

let index: LiveIndex;

beforeAll(async () => {
  index = await oneServerIndex();
}, 120_000);
afterAll(async () => {
  await index?.close();
});

/** One page of the busiest wallet's traces, with each trace's end_lt (the order key) beside its view. */
async function page(query: string): Promise<{ traces: { view: TraceView; endLt: bigint }[]; next: string | null }> {
  const { status, body } = await index.server.rest(`/api/v3/traces?account=${encodeURIComponent(index.busiestWallet)}&${query}`);
  if (status !== 200) throw new Error(`HTTP ${status}: ${JSON.stringify(body)}`);
  const { traces, next_cursor } = body as { traces: Json[]; next_cursor: string | null };
  return { traces: traces.map((t) => ({ view: restTraceView(t), endLt: BigInt(t.end_lt as string) })), next: next_cursor };
}

async function walk(sort: "desc" | "asc", limit: number, maxPages: number, stopAt?: bigint, filter = ""): Promise<Walked> {
  const walked: Walked = { pages: [], endLt: new Map() };
  let cursor: string | null = null;
  do {
    const { traces, next } = await page(`sort=${sort}&limit=${limit}${filter}${cursor === null ? "" : `&cursor=${cursor}`}`);
    walked.pages.push(traces.map((t) => t.view));
    for (const t of traces) walked.endLt.set(t.view.id, [...(walked.endLt.get(t.view.id) ?? []), t.endLt]);
    cursor = next;
    if (stopAt !== undefined && traces.some((t) => t.endLt <= stopAt)) break;
  } while (cursor !== null && walked.pages.length < maxPages);
  return walked;
}

describe(`[issue 22] paging an account's traces while the index moves`, () => {
  it("gives untorn pages; growing traces move in the end_lt order, and a pass from the top finds every trace the walk missed", async () => {
    const sql = postgres(index.writeUrl, { max: 1, onnotice: () => {} });
    const writer = await startLiveWriter({
      url: index.writeUrl,
      rate: index.pace.writerRate,
      connections: index.pace.writerConnections,
      transactionsPerBlock: 12,
      classifierLagMs: 30,
    });
    try {
      await writer.batches(5);
      // The account's traces and their end_lt when the walks begin.
      const positions = await sql.begin("read only", (tx) =>
        tx<{ trace_id: string; end_lt: string }[]>`
          select trace_id, end_lt::text from traces where trace_id in (select trace_id from transactions where account = ${index.busiestWallet})`,
      );
      // Small pages over the newest traces, where traces grow: 3 a page, 30 pages down, then up from where the walk
      // down ended to the newest.
      const down = await walk("desc", 3, 30);
      const bottom = down.pages.flat().length === 0 ? 0n : [...down.endLt.values()].map((lts) => lts[0] as bigint).reduce((a, b) => (a < b ? a : b));
      const up = await walk("asc", 3, 40, undefined, `&start_lt=${bottom}`);
      await writer.stop();

      const top = down.endLt.get(down.pages[0]?.[0]?.id ?? "")?.[0] ?? 0n;
      // The index holds still now: a pass from the newest down to the walk's bottom meets every trace that was in its
      // window, wherever it grew to.
      const head = await walk("desc", 3, 400, bottom);
      const final = await page("sort=desc&limit=1000");
      const finalEndLt = new Map(final.traces.map((t) => [t.view.id, t.endLt]));

      const torn = [...down.pages, ...up.pages].flat().flatMap(traceProblems);
      // Traces the walk down should have met: those of the account between its bottom and top when it began (above
      // the bottom: traces tied with the last one the walk returned may sort after it).
      const inWindow = positions.filter((p) => BigInt(p.end_lt ?? "0") > bottom && BigInt(p.end_lt ?? "0") <= top).map((p) => p.trace_id);
      const missedByWalk = inWindow.filter((id) => !down.endLt.has(id));
      const missedAfterHead = missedByWalk.filter((id) => !head.endLt.has(id));
      const repeatedUp = [...up.endLt].filter(([, lts]) => lts.length > 1);
      const repeatedDown = [...down.endLt].filter(([, lts]) => lts.length > 1);
      console.info(
        `${index.name}: newest first, ${down.pages.length} pages of 3: ${down.endLt.size} traces, ${missedByWalk.length} of the ${inWindow.length} in its ` +
          `window when it began missed (${missedByWalk.filter((id) => (finalEndLt.get(id) ?? 0n) > top).length} of them grew above its top), ` +
          `${repeatedDown.length} returned twice; the pass from the top found ${missedByWalk.length - missedAfterHead.length} of the missed. ` +
          `Oldest first from the same bottom: ${up.pages.length} pages, ${up.endLt.size} traces, ${repeatedUp.length} returned twice (after growing). ` +
          `Torn traces in pages: ${torn.length}${torn.length > 0 ? `, e.g. ${torn[0]}` : ""}`,
      );

      // A trace is missed, or returned twice, only for having grown: its end_lt rose between two pages. A missed one
      // rose past where the walk then was, which may still be below the walk's top (it moved into pages already read).
      const startEndLt = new Map(positions.map((p) => [p.trace_id, BigInt(p.end_lt ?? "0")]));
      for (const id of missedByWalk) expect(finalEndLt.get(id) ?? 0n, id).toBeGreaterThan(startEndLt.get(id) ?? 0n);
      for (const [, lts] of [...repeatedUp, ...repeatedDown]) expect(lts[lts.length - 1]).toBeGreaterThan(lts[0] as bigint);
      expect(missedAfterHead).toEqual([]);
      expect(torn).toEqual([]);
    } finally {
      await writer.stop().catch(() => {});
      await sql.end({ timeout: 1 });
    }
  }, 60_000);
});
