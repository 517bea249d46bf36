import { ConfigError, helpText, loadConfig } from "./runtime/config.ts";
import { databaseOptions, openDatabase, redactUrl } from "./db/client.ts";
import { checkSchemaVersion, formatVersion, UnsupportedSchemaError } from "./db/version.ts";
import type { EmbeddedDatabase } from "./embedded/pglite.ts";
import { log, setLogLevel } from "./runtime/log.ts";
import { Telemetry } from "./observability/telemetry.ts";
import { startTracing } from "./observability/tracing.ts";
import { createServer } from "./server/server.ts";
import { demoReplaySeconds, usageExamples } from "./server/usage.ts";
import type { startDemoReplay } from "./demo/replay.ts";

async function main(): Promise<number> {
  if (process.argv.includes("--help") || process.argv.includes("-h")) {
    process.stdout.write(helpText());
    return 0;
  }
  const config = loadConfig();
  setLogLevel(config.logLevel);
  const tracing = await startTracing(config);
  const telemetry = new Telemetry(tracing);

  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (databaseUrl === undefined) {
    // PGlite and the demo dataset are loaded only for the demo: a service with DATABASE_URL never holds them.
    const { startDemoDatabase } = await import("./embedded/pglite.ts");
    // The pools, plus the availability probe's connection.
    embedded = await startDemoDatabase(config.poolSize + 1);
    databaseUrl = embedded.url;
  }

  const db = openDatabase(databaseOptions(config, databaseUrl, { sharedSession: embedded !== undefined, telemetry }));
  const version = await checkSchemaVersion(db.sql);
  const server = createServer({ db, config, telemetry });
  const address = await server.listen(config.port, config.host);

  const host = address.address === "0.0.0.0" || address.address === "::" ? "127.0.0.1" : address.address;
  const baseUrl = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
  log.info("tonquery ready", {
    url: baseUrl,
    database: embedded ? "embedded PGlite with the demo dataset" : redactUrl(databaseUrl),
    ...(config.databaseReplicaUrls.length > 0 && { replicas: config.databaseReplicaUrls.map(redactUrl) }),
    schema: formatVersion(version),
    tracing: tracing === undefined ? "off" : "OTLP",
  });
  // The demo's index turns live once someone streams it: recorded traces come back as new blocks, for the streams to
  // show. Until then it stays as recorded (masterchainInfo answers the recorded last block).
  let replay: Awaited<ReturnType<typeof startDemoReplay>> | undefined;
  if (embedded !== undefined) {
    const stopWatching = server.onStreamOpened(() => {
      stopWatching();
      void import("./demo/replay.ts").then(({ startDemoReplay }) => startDemoReplay(db, demoReplaySeconds * 1000)).then(
        (started) => (replay = started),
        (err: unknown) => log.warn("demo replay could not start", { error: err }),
      );
    });
  }
  process.stdout.write(usageExamples(baseUrl, embedded !== undefined));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    replay?.stop();
    await server.close();
    await db.end();
    await embedded?.close();
    // The last spans are sent before the process ends.
    await tracing?.shutdown();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  return -1;
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof UnsupportedSchemaError) {
      process.stderr.write(`tonquery: ${err.message}\n`);
      process.exit(err instanceof ConfigError ? 2 : 1);
    }
    log.error("start-up failed", { error: err });
    process.exit(1);
  },
);
