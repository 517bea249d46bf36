// The server under test, in a process of its own so that the load generator's CPU and memory stay out of its
// numbers: the bench spawns this file, reads the port from the first stdout line, samples /proc/<pid>/status for
// RSS and /proc/<pid>/stat for CPU, and ends it with SIGTERM.
//
// Configuration is the service's own (src/runtime/config.ts) from the environment, except that it always listens on a free
// loopback port. DATABASE_URL is required: the bench never runs against the embedded demo database.

import { loadConfig } from "../src/runtime/config.ts";
import { databaseOptions, openDatabase } from "../src/db/client.ts";
import { checkSchemaVersion } from "../src/db/version.ts";
import { setLogLevel } from "../src/runtime/log.ts";
import { Telemetry } from "../src/observability/telemetry.ts";
import { startTracing } from "../src/observability/tracing.ts";
import { createServer } from "../src/server/server.ts";

const config = loadConfig({ ...process.env, HOST: "127.0.0.1", PORT: "0" });
if (config.databaseUrl === undefined) {
  process.stderr.write("bench/server-process.ts: DATABASE_URL is required\n");
  process.exit(2);
}
setLogLevel(config.logLevel);
const tracing = await startTracing(config);
const telemetry = new Telemetry(tracing);
const db = openDatabase(databaseOptions(config, config.databaseUrl, { telemetry }));
await checkSchemaVersion(db.sql);
const server = createServer({ db, config, telemetry });
const address = await server.listen(0, "127.0.0.1");
process.stdout.write(`${JSON.stringify({ port: address.port, pid: process.pid, poolSize: config.poolSize })}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await server.close();
  await db.end();
  await tracing?.shutdown();
  process.exit(0);
}
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
// Started by the bench (stdin is its pipe): when the bench is gone (crashed or killed), do not linger.
if (process.env.BENCH_PARENT_PIPE === "1") {
  process.stdin.on("end", () => void stop());
  process.stdin.resume();
}
