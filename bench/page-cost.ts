// Where a page's server CPU goes, without the HTTP server around it: the same page of the hot account's traces read
// through the handler (streamTraces) into a sink that keeps nothing (the statements, the driver reading their rows,
// pairing messages, building chunks), then into each door's encoder (protobuf for gRPC and Connect, v3 JSON for
// REST), one page after the other in one process, the three alternated over several passes. The difference between
// a pass with an encoder and one without is what the encoder costs with the rows live beside it (its garbage makes
// the collector copy them), which is what it costs in the server.
//
//   node --max-semi-space-size=16 --heap-growing-percent=100 --initial-old-space-size=64 --incremental-marking-soft-trigger=60 --no-allocation-site-pretenuring bench/page-cost.ts [--database-url URL] [--account RAW]
//        [--limit 100] [--pages 40] [--passes 5] [--kinds "rows only,protobuf,v3 JSON"]
//
// (the flags npm start gives the service). Prints, per pass and kind: CPU ms per page (the process's user + system
// time), the garbage collector's pauses per page, and the page's encoded bytes; then each kind's median over the
// passes (the machine is shared: a pass can meet another process).

import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { createHandlerContext } from "@connectrpc/connect";
import { GetTracesRequestSchema, type GetTracesResponse, GetTracesResponseSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { databaseOptions, openDatabase } from "../src/db/client.ts";
import { binaryOf } from "../src/encode/proto/own-encoding.ts";
import { TracesProtoSink } from "../src/encode/proto/traces.ts";
import { TracesJsonEncoder } from "../src/encode/v3-json/traces.ts";
import { streamTraces, type TraceSink } from "../src/handlers/traces.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { hotAccount } from "./cases.ts";
import { defaultDatabaseUrl } from "./args.ts";

const { values } = parseArgs({
  options: {
    "database-url": { type: "string", default: defaultDatabaseUrl },
    account: { type: "string" },
    limit: { type: "string", default: "100" },
    pages: { type: "string", default: "40" },
    passes: { type: "string", default: "5" },
    kinds: { type: "string" },
  },
});
const url = values["database-url"];
const pages = Number(values.pages);

const account = values.account ?? (await hotAccount(url));

const config = loadConfig({ ...process.env, DB_POOL_SIZE: "4" });
const db = openDatabase(databaseOptions(config, url));
const request = create(GetTracesRequestSchema, { account, limit: Number(values.limit) });
const context = () =>
  createHandlerContext({
    service: TonQueryService,
    method: TonQueryService.method.getTraces,
    protocolName: "bench",
    requestMethod: "POST",
    url: "/tonquery.v1.TonQueryService/GetTraces",
  });

const gc = { pauses: 0, ms: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.pauses++;
    gc.ms += entry.duration;
  }
}).observe({ entryTypes: ["gc"] });

/** Each kind of pass: the sink a page goes into, and the bytes it made. */
const kinds: Record<string, () => { sink: TraceSink<unknown>; bytes: (result: unknown) => number }> = {
  "rows only": () => ({ sink: { trace: () => {}, end: () => undefined }, bytes: () => 0 }),
  protobuf: () => ({ sink: new TracesProtoSink(), bytes: (page) => binaryOf(GetTracesResponseSchema, page as GetTracesResponse).length }),
  "v3 JSON": () => ({ sink: new TracesJsonEncoder(request), bytes: (pieces) => (pieces as Buffer[]).reduce((sum, piece) => sum + piece.length, 0) }),
};

const pagesOf = async (kind: string, count: number) => {
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const { sink, bytes: size } = (kinds[kind] as (typeof kinds)[string])();
    bytes += size(await streamTraces({ db, config }, request, context(), sink));
  }
  return bytes / count;
};

const chosen = values.kinds?.split(",").map((kind) => kind.trim()) ?? Object.keys(kinds);
const unknown = chosen.filter((kind) => !(kind in kinds));
if (unknown.length > 0) throw new Error(`unknown kinds: ${unknown.join(", ")} (known: ${Object.keys(kinds).join(", ")})`);
// Warm-up: plans cached, code optimised, the decoded-body cache filled.
for (const kind of chosen) await pagesOf(kind, 10);
process.stdout.write(`account ${account}, limit ${values.limit}, ${pages} pages per pass\n`);
const cpuByKind = new Map<string, number[]>();
for (let pass = 1; pass <= Number(values.passes); pass++) {
  for (const kind of chosen) {
    const cpu = process.cpuUsage();
    const before = { ...gc };
    const bytes = await pagesOf(kind, pages);
    // The collector reports a pause once it is over: let the last one land in this pass.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const used = process.cpuUsage(cpu);
    const perPage = (n: number) => (n / pages).toFixed(2);
    cpuByKind.set(kind, [...(cpuByKind.get(kind) ?? []), (used.user + used.system) / 1000 / pages]);
    process.stdout.write(
      `pass ${pass}  ${kind.padEnd(9)}  CPU ${perPage((used.user + used.system) / 1000)} ms/page  GC ${perPage(gc.pauses - before.pauses)} pauses, ${perPage(gc.ms - before.ms)} ms/page  ${(bytes / 1e6).toFixed(2)} MB/page\n`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const rowsOnly = cpuByKind.has("rows only") ? median(cpuByKind.get("rows only") as number[]) : undefined;
for (const [kind, cpus] of cpuByKind) {
  const over = kind === "rows only" || rowsOnly === undefined ? "" : `, ${(median(cpus) - rowsOnly).toFixed(2)} ms over the rows alone`;
  process.stdout.write(`median  ${kind.padEnd(9)}  CPU ${median(cpus).toFixed(2)} ms/page${over}\n`);
}
await db.end();
