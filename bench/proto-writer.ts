// The byte writers of src/encode/proto/ compared on the same encoder and the same rows: its own ProtoWriter
// (src/encode/proto/writer.ts) and one on @bufbuild/protobuf/wire's BinaryWriter (bench/proto/library-writer.ts, put
// in its place by a module hook). Pages of the hot account's traces are loaded once per process, then written over
// and over; each writer runs in its own process (so that the encoder's call sites stay monomorphic), alternated.
//
//   node bench/proto-writer.ts [--database-url URL] [--pages 3] [--limit 100] [--seconds 3] [--rounds 3]
//
// Prints the CPU µs per trace (median of a process's passes) per writer and round, and the bytes per trace; both
// writers must write the same bytes (their digest is compared).

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { registerHooks } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { defaultDatabaseUrl } from "./args.ts";

const { values } = parseArgs({
  options: {
    "database-url": { type: "string", default: defaultDatabaseUrl },
    pages: { type: "string", default: "3" },
    limit: { type: "string", default: "100" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    account: { type: "string" },
    child: { type: "string" },
  },
});
const url = values["database-url"];

if (values.child === undefined) {
  // Imported here, not at the top: a child must load the encoders only once its module hook is registered.
  const account = values.account ?? (await (await import("./cases.ts")).hotAccount(url));
  const self = fileURLToPath(import.meta.url);
  const results: Record<string, number[]> = { own: [], library: [] };
  let bytes = 0;
  const digests = new Set<string>();
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const writer of round % 2 === 0 ? ["own", "library"] : ["library", "own"]) {
      const args = [self, "--child", writer, "--account", account, "--database-url", url, "--pages", values.pages, "--limit", values.limit, "--seconds", values.seconds];
      const out = JSON.parse(execFileSync(process.execPath, args, { encoding: "utf8" })) as { usPerTrace: number; bytesPerTrace: number; digest: string };
      digests.add(out.digest);
      results[writer]?.push(out.usPerTrace);
      bytes = out.bytesPerTrace;
      console.log(`round ${round + 1} ${writer.padEnd(7)} ${out.usPerTrace.toFixed(1)} CPU µs/trace`);
    }
  }
  if (digests.size !== 1) throw new Error("the writers wrote different bytes");
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;
  console.log(
    `median: own ${median(results.own ?? []).toFixed(1)}, library ${median(results.library ?? []).toFixed(1)} CPU µs/trace; ${Math.round(bytes)} bytes/trace, the same bytes`,
  );
} else {
  if (values.child === "library") {
    const library = new URL("./proto/library-writer.ts", import.meta.url).href;
    registerHooks({
      resolve(specifier, context, next) {
        const resolved = next(specifier, context);
        return resolved.url.endsWith("/src/encode/proto/writer.ts") ? { ...resolved, url: library } : resolved;
      },
    });
  }
  const { createHandlerContext } = await import("@connectrpc/connect");
  const { GetTracesRequestSchema, TonQueryService } = await import("../gen/tonquery/v1/service_pb.ts");
  const { loadConfig } = await import("../src/runtime/config.ts");
  const { databaseOptions, openDatabase } = await import("../src/db/client.ts");
  const { streamTraces } = await import("../src/handlers/traces.ts");
  const { encodeTrace } = await import("../src/encode/proto/traces.ts");
  type Loaded = Parameters<typeof encodeTrace>[0];

  const config = loadConfig({ DB_POOL_SIZE: "2" });
  const db = openDatabase(databaseOptions(config, url));
  const loaded: Loaded[] = [];
  let pageToken = "";
  for (let page = 0; page < Number(values.pages); page++) {
    const context = createHandlerContext({
      service: TonQueryService,
      method: TonQueryService.method.getTraces,
      protocolName: "bench",
      requestMethod: "POST",
      url: "/tonquery.v1.TonQueryService/GetTraces",
    });
    const request = create(GetTracesRequestSchema, { account: values.account, limit: Number(values.limit), pageToken });
    pageToken = await streamTraces({ db, config }, request, context, {
      trace: (trace) => void loaded.push(trace),
      end: (end) => end.nextPageToken,
    });
    if (pageToken === "") break;
  }
  await db.end();

  // Once to decode the bodies (each page caches its own) and warm up, then passes until the time is up.
  let bytes = 0;
  const digest = createHash("sha256");
  for (const trace of loaded) {
    const encoded = encodeTrace(trace);
    bytes += encoded.length;
    digest.update(encoded);
  }
  const passes: number[] = [];
  const until = performance.now() + Number(values.seconds) * 1000;
  while (performance.now() < until) {
    // CPU time, not wall time: the bench machine is seldom quiet.
    const started = process.cpuUsage();
    for (const trace of loaded) encodeTrace(trace);
    const { user, system } = process.cpuUsage(started);
    passes.push((user + system) / loaded.length);
  }
  passes.sort((a, b) => a - b);
  console.log(
    JSON.stringify({ usPerTrace: passes[Math.floor(passes.length / 2)], bytesPerTrace: bytes / loaded.length, digest: digest.digest("hex"), traces: loaded.length }),
  );
}
