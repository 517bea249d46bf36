// Live streams under load (issue 24): N concurrent streams on one instance while a writer appends blocks out of
// order. Reports the database statements per block, the server's CPU and memory per stream, and the delay from a
// block's commit to its event at the client (p50/p99), per door.
//
//   npm run bench:streams -- [--streams 1000] [--seconds 30] [--blocks-per-second 5] [--database-url URL]
//
// The server runs in a process of its own (bench/server-process.ts, built as npm start runs it); the writer
// (test/support/live-appender.ts, until issue 22's --follow writer lands) and the clients run here, so commit and
// receive times share one clock.
// Streams are split between the doors: a third StreamTraces over gRPC (one HTTP/2 connection), a third SSE, a third
// WebSocket (one HTTP/1.1 connection each). Each follows two of 60 accounts, so a block has events for some streams.

import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { readSchema } from "../src/embedded/pglite.ts";
import { Scrape } from "../test/support/metrics.ts";
import { startLiveAppender, testAccounts } from "../test/support/live-appender.ts";
import { blockOfId, openSse, openWs, sseEvents } from "../test/support/stream-clients.ts";
import { serviceLaunch } from "./monitor.ts";

const { values } = parseArgs({
  options: {
    streams: { type: "string", default: "1000" },
    seconds: { type: "string", default: "30" },
    "blocks-per-second": { type: "string", default: "5" },
    actions: { type: "string", default: "true" },
    "database-url": { type: "string", default: process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres" },
  },
});
const streams = Number(values.streams);
const seconds = Number(values.seconds);
const blocksPerSecond = Number(values["blocks-per-second"]);
const inFlight = 3;
/** Streams that ask for actions wait for the classifier (the writer classifies 300 ms after a commit). */
const withActions = values.actions !== "false";

const server0 = postgres(values["database-url"] as string, { max: 1, onnotice: () => {} });
const name = `tonquery_bench_streams_${randomBytes(4).toString("hex")}`;
await server0.unsafe(`create database ${name}`);
const url = new URL(values["database-url"] as string);
url.pathname = `/${name}`;
const admin = postgres(url.toString(), { max: 1, onnotice: () => {} });
await admin.unsafe(await readSchema());
await admin.end();

const accounts = testAccounts(60);
const writer = startLiveAppender(url.toString(), {
  firstSeqno: 50_000_000,
  accounts,
  inFlight,
  intervalMs: Math.max(0, (1000 * inFlight) / blocksPerSecond),
  classifyDelayMs: 300,
  tracesPerBlock: 8,
  bodyBytes: 200,
});
await writer.append(2);

const launch = serviceLaunch();
const child = spawn(process.execPath, [...launch.nodeFlags, launch.entry], {
  env: {
    ...process.env,
    ...launch.env,
    DATABASE_URL: url.toString(),
    ACCESS_LOG: "false",
    LOG_LEVEL: "warn",
    STREAM_MAX_STREAMS: String(streams + 10),
    MAX_CONNECTIONS: String(streams + 100),
    BENCH_PARENT_PIPE: "1",
  },
  stdio: ["pipe", "pipe", "inherit"],
});
const first = await new Promise<string>((resolve) => createInterface({ input: child.stdout }).once("line", resolve));
const { port } = JSON.parse(first) as { port: number };
const baseUrl = `http://127.0.0.1:${port}`;

const scrape = async () => new Scrape(await (await fetch(`${baseUrl}/metrics`)).text(), "");
const statementsOf = (metrics: Scrape) =>
  Object.fromEntries(metrics.samples("tonquery_db_statement_duration_seconds_count").map((s) => [s.labels?.statement ?? "", Number(s.value)]));

/** Delay samples (ms) from a block's commit to its arrival at a stream, by door. */
const delays: Record<string, number[]> = { grpc: [], sse: [], ws: [] };
const note = (door: string, seqno: number) => {
  const block = writer.blocks.get(seqno);
  if (block !== undefined && measuring) delays[door]?.push(performance.now() - block.committedAt);
};
let measuring = false;
const controller = new AbortController();
const noStreams = await scrape();
const grpc = createClient(TonQueryService, createGrpcTransport({ baseUrl }));

const follow = (i: number) => [accounts[(i * 7) % accounts.length] as string, accounts[(i * 13 + 5) % accounts.length] as string];
const running: Promise<void>[] = [];
for (let i = 0; i < streams; i++) {
  const door = ["grpc", "sse", "ws"][i % 3] as string;
  const addresses = follow(i);
  if (door === "grpc") {
    running.push(
      (async () => {
        try {
          for await (const message of grpc.streamTraces({ accounts: addresses, includeTransactions: true, includeActions: withActions }, { signal: controller.signal })) {
            if (!message.heartbeat) note("grpc", message.position);
          }
        } catch {
          // ended below
        }
      })(),
    );
  } else if (door === "sse") {
    running.push(
      (async () => {
        try {
          const response = await openSse(baseUrl, { types: withActions ? ["transactions", "actions"] : ["transactions"], addresses }, {}, controller.signal);
          let last = -1;
          for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
            if (event.event !== "event" || event.id === undefined) continue;
            const seqno = blockOfId(event.id);
            if (seqno !== last) note("sse", seqno);
            last = seqno;
          }
        } catch {
          // ended below
        }
      })(),
    );
  } else {
    running.push(
      (async () => {
        const client = await openWs(baseUrl);
        client.send({ operation: "subscribe", types: withActions ? ["transactions", "actions"] : ["transactions"], addresses });
        let last = -1;
        controller.signal.addEventListener("abort", () => client.close());
        try {
          for (;;) {
            const message = (await client.next(120_000)) as { event_id?: string };
            if (message.event_id === undefined) continue;
            const seqno = blockOfId(message.event_id);
            if (seqno !== last) note("ws", seqno);
            last = seqno;
          }
        } catch {
          // closed below
        }
      })(),
    );
  }
  // Opened a few at a time, as clients arrive.
  if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 20));
}
// Until every stream is open.
for (;;) {
  const open = (await scrape()).samples("tonquery_streams_open").reduce((sum, s) => sum + Number(s.value), 0);
  if (open >= streams) break;
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const idleBefore = await scrape();

writer.start();
// Warm-up, then the measured window.
await new Promise((resolve) => setTimeout(resolve, 3000));
const before = await scrape();
const seqnoBefore = writer.next;
const t0 = performance.now();
measuring = true;
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
measuring = false;
const after = await scrape();
const elapsed = (performance.now() - t0) / 1000;
const seqnoAfter = writer.next;
await writer.stop();

const blocks = seqnoAfter - seqnoBefore;
const statementsBefore = statementsOf(before);
const statementsAfter = statementsOf(after);
const perBlock = Object.fromEntries(
  Object.entries(statementsAfter)
    .map(([statement, count]) => [statement, (count - (statementsBefore[statement] ?? 0)) / blocks] as const)
    .filter(([, value]) => value > 0)
    .map(([statement, value]) => [statement, Math.round(value * 100) / 100]),
);
const cpu = (after.value("process_cpu_seconds_total") - before.value("process_cpu_seconds_total")) / elapsed;
const rss = after.value("process_resident_memory_bytes");
const quantile = (list: number[], q: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);
};
const report = {
  streams,
  seconds: Math.round(elapsed),
  blocks,
  blocks_per_second: Math.round((blocks / elapsed) * 10) / 10,
  statements_per_block: perBlock,
  statements_per_block_total: Math.round(Object.values(perBlock).reduce((a, b) => a + b, 0) * 100) / 100,
  server_cpu_cores: Math.round(cpu * 1000) / 1000,
  server_cpu_ms_per_stream_second: Math.round((cpu / streams) * 1e6) / 1000,
  server_rss_mb: Math.round(rss / 1e6),
  server_rss_no_streams_mb: Math.round(noStreams.value("process_resident_memory_bytes") / 1e6),
  server_rss_streams_open_before_writer_mb: Math.round(idleBefore.value("process_resident_memory_bytes") / 1e6),
  server_rss_kb_per_stream: Math.round((rss - noStreams.value("process_resident_memory_bytes")) / streams / 1000),
  actions: withActions,
  messages_sent: after.value("tonquery_stream_messages_sent_total", { door: "rpc" }) + after.value("tonquery_stream_messages_sent_total", { door: "sse" }) + after.value("tonquery_stream_messages_sent_total", { door: "ws" }),
  slow_consumer_ends: after.samples("tonquery_stream_slow_consumer_ends_total").reduce((sum, s) => sum + Number(s.value), 0),
  // Server side: from the poll that first saw a block to its hand-out, as the histogram's buckets bound it.
  hand_out_delay_s: (() => {
    const buckets = after.buckets("tonquery_stream_hand_out_delay_seconds").map(([le, count], i) => [le, count - ((before.buckets("tonquery_stream_hand_out_delay_seconds")[i] as [string, number] | undefined)?.[1] ?? 0)] as const);
    const total = buckets[buckets.length - 1]?.[1] ?? 0;
    const at = (q: number) => buckets.find(([, count]) => count >= q * total)?.[0];
    return { blocks: total, p50_at_most: at(0.5), p99_at_most: at(0.99) };
  })(),
  delay_ms: Object.fromEntries(
    Object.entries(delays).map(([door, list]) => [door, { samples: list.length, p50: Math.round(quantile(list, 0.5)), p99: Math.round(quantile(list, 0.99)) }]),
  ),
};
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);

controller.abort();
await Promise.race([Promise.all(running), new Promise((resolve) => setTimeout(resolve, 5000))]);
child.kill("SIGTERM");
await new Promise((resolve) => child.once("exit", resolve));
await writer.close();
await server0.unsafe(`drop database if exists ${name} with (force)`);
await server0.end();
process.exit(0);
