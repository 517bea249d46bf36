import { parseArgs } from "node:util";
import { flippedStateOf, restTraceView } from "../../test/support/live-answers.ts";
import { startServer } from "../monitor.ts";
import { startTraceFlipper } from "./trace-flipper.ts";

// The torn-answer probe of issue 22, to run before and after a change: the service (bench/server-process.ts, as the
// bench runs it) on a generated index, a flipper moving one trace between "complete, N transactions" and "pending,
// N-1" (one commit per state, every --interval-ms), and --clients clients asking /api/v3/traces?trace_id=<that
// trace> back to back for --seconds. An answer that is neither state is torn (the rules of test/live-index.test.ts).
//
//   node bench/live/torn-probe.ts --database-url postgres://…/tonquery_bench [--interval-ms 10] [--seconds 20] [--clients 4]
//
// The flipper writes to the database (and leaves the trace complete, as it found it).

const usage = `node bench/live/torn-probe.ts --database-url URL [--interval-ms N] [--seconds N] [--clients N]`;
const { values } = parseArgs({
  options: {
    "database-url": { type: "string" },
    "interval-ms": { type: "string", default: "10" },
    seconds: { type: "string", default: "20" },
    clients: { type: "string", default: "4" },
    help: { type: "boolean", default: false },
  },
});
if (values.help) {
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
const databaseUrl = values["database-url"] ?? process.env.DATABASE_URL;
if (databaseUrl === undefined) {
  process.stderr.write(`--database-url (or DATABASE_URL) is required\n${usage}\n`);
  process.exit(2);
}
const intervalMs = Number(values["interval-ms"]);
const seconds = Number(values.seconds);
const clients = Number(values.clients);

const server = await startServer(databaseUrl, { ACCESS_LOG: "false" }, []);
const flipper = await startTraceFlipper(databaseUrl, { intervalMs });
const states = [flipper.complete, flipper.pending];
const counts = { answers: 0, complete: 0, pending: 0, torn: 0, failed: 0 };
const examples = new Map<string, number>();
const url = `http://127.0.0.1:${server.port}/api/v3/traces?trace_id=${encodeURIComponent(flipper.traceId)}`;
const deadline = performance.now() + seconds * 1000;
try {
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        try {
          const response = await fetch(url);
          const body = (await response.json()) as { traces: Record<string, unknown>[] };
          if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
          counts.answers++;
          const trace = body.traces[0];
          const state = flippedStateOf(trace === undefined ? undefined : restTraceView(trace), states);
          if (state === "complete" || state === "pending") counts[state]++;
          else {
            counts.torn++;
            examples.set(state, (examples.get(state) ?? 0) + 1);
          }
        } catch {
          counts.failed++;
        }
      }
    }),
  );
} finally {
  const commits = await flipper.stop();
  await server.stop();
  process.stdout.write(
    `trace ${flipper.traceId} (${flipper.complete.transactions.length} transactions), a commit every ${intervalMs} ms: ${commits} commits in ${seconds} s\n` +
      `${clients} clients: ${counts.answers} answers (${counts.complete} complete, ${counts.pending} pending), ${counts.torn} torn, ${counts.failed} failed\n`,
  );
  for (const [state, n] of [...examples].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${n} × ${state}\n`);
  process.stdout.write(`${JSON.stringify({ intervalMs, seconds, clients, commits, ...counts })}\n`);
}
