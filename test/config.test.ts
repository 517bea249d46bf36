import { describe, expect, it } from "vitest";
import { ConfigError, helpText, loadConfig, settings, startCommandFromSources } from "../src/runtime/config.ts";
import { parseProcLimits } from "../src/server/open-file-limit.ts";
import { shardToUnsignedHex, unsignedHexToShard } from "../src/ton/shard.ts";

describe("configuration", () => {
  it("has documented defaults", () => {
    expect(loadConfig({}, { openFileLimit: () => 1_048_576 })).toEqual({
      databaseUrl: undefined,
      databaseReplicaUrls: [],
      maxReplicaLagMs: 3000,
      dbProbeIntervalMs: 1000,
      host: "0.0.0.0",
      port: 8080,
      poolSize: 10,
      maxConcurrentRequests: 8,
      statementTimeoutMs: 3000,
      requestTimeoutMs: 10000,
      defaultLimit: 10,
      maxLimit: 1000,
      maxTraceTransactions: 4000,
      traceChunkSize: 100,
      testnet: false,
      corsOrigin: "*",
      shutdownTimeoutMs: 10000,
      headersTimeoutMs: 10000,
      bodyTimeoutMs: 20000,
      idleTimeoutMs: 65000,
      maxConnections: 2000,
      dbConnectTimeoutMs: 1000,
      decodeBodies: true,
      decodedBodyCache: 10000,
      transactionBocCacheMb: 32,
      cursorSecret: "",
      maxListValues: 256,
      logLevel: "info",
      accessLog: true,
      otlpEndpoint: undefined,
      otlpTracesEndpoint: undefined,
      compression: true,
      compressionMinBytes: 1024,
      restHoldMaxBytes: 1048576,
      idleMemoryReleaseMs: 10000,
      memorySoftLimitMb: 200,
      streamMaxStreams: 1000,
      streamMaxAddresses: 1000,
      streamPollIntervalMs: 500,
      streamHeartbeatMs: 15000,
      streamBufferBlocks: 64,
      streamResumeWindowBlocks: 10000,
      streamGapWaitMs: 30000,
      streamActionsWaitMs: 10000,
    });
  });

  it("caps client connections by default at what the descriptor limit leaves beside the database's connections", () => {
    const limited = (openFiles: number | undefined, env: Record<string, string> = {}) => loadConfig(env, { openFileLimit: () => openFiles }).maxConnections;
    // 64 descriptors for the service's own files, and the pool's 10 connections plus the probe's.
    expect(limited(256)).toBe(256 - 64 - 11);
    expect(limited(1024)).toBe(1024 - 64 - 11);
    // Each replica has a pool and a probe of its own.
    expect(limited(256, { DATABASE_URL: "postgres://db/index", DATABASE_REPLICA_URLS: "postgres://replica/index", DB_POOL_SIZE: "4" })).toBe(256 - 64 - 2 * 5);
    // Past the ceiling, or unlimited, or unknown: 2000, what an idle connection may cost in memory allows.
    expect(limited(1_048_576)).toBe(2000);
    expect(limited(undefined)).toBe(2000);
    // A limit too small for anything still allows one connection; MAX_CONNECTIONS set wins.
    expect(limited(50)).toBe(1);
    expect(limited(256, { MAX_CONNECTIONS: "500" })).toBe(500);
  });

  it("reads the open-file limit's soft value from /proc/self/limits", () => {
    const limits = [
      "Limit                     Soft Limit           Hard Limit           Units     ",
      "Max processes             127431               127431               processes ",
      "Max open files            256                  20000                files     ",
      "Max locked memory         8388608              8388608              bytes     ",
    ].join("\n");
    expect(parseProcLimits(limits)).toBe(256);
    expect(parseProcLimits(limits.replace("256 ", "unlimited"))).toBeUndefined();
    expect(() => parseProcLimits("Max processes 1 1 processes")).toThrow();
  });

  it("reads every setting from its environment variable", () => {
    const config = loadConfig({
      DATABASE_URL: "postgres://reader@db/index",
      HOST: "127.0.0.1",
      PORT: "9000",
      DB_POOL_SIZE: "4",
      STATEMENT_TIMEOUT_MS: "500",
      DEFAULT_LIMIT: "20",
      MAX_LIMIT: "200",
      MAX_TRACE_TRANSACTIONS: "100",
      TESTNET: "true",
      CORS_ORIGIN: "https://app.example",
      SHUTDOWN_TIMEOUT_MS: "0",
      LOG_LEVEL: "WARN",
      ACCESS_LOG: "false",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
    });
    expect(config).toMatchObject({ databaseUrl: "postgres://reader@db/index", port: 9000, poolSize: 4, testnet: true, maxLimit: 200 });
    expect(config).toMatchObject({ logLevel: "warn", accessLog: false, otlpEndpoint: "http://collector:4318", otlpTracesEndpoint: undefined });
    const replicated = loadConfig({
      DATABASE_URL: "postgres://reader@db/index",
      DATABASE_REPLICA_URLS: " postgres://reader@replica-1/index,postgres://reader@replica-2:5433/index ,",
      MAX_REPLICA_LAG_MS: "1500",
      DB_PROBE_INTERVAL_MS: "200",
    });
    expect(replicated).toMatchObject({
      databaseReplicaUrls: ["postgres://reader@replica-1/index", "postgres://reader@replica-2:5433/index"],
      maxReplicaLagMs: 1500,
      dbProbeIntervalMs: 200,
    });
  });

  it.each([
    [{ PORT: "http" }, "PORT must be a whole number"],
    [{ PORT: "70000" }, "PORT must be between 0 and 65535"],
    [{ TESTNET: "maybe" }, "TESTNET must be true or false"],
    [{ DECODE_BODIES: "sometimes" }, "DECODE_BODIES must be true or false"],
    [{ DB_POOL_SIZE: "0" }, "DB_POOL_SIZE must be between 1 and 1000"],
    [{ DEFAULT_LIMIT: "2000" }, "DEFAULT_LIMIT (2000) must not exceed MAX_LIMIT (1000)"],
    [{ LOG_LEVEL: "verbose" }, 'LOG_LEVEL must be one of debug, info, warn, error, got "verbose"'],
    [{ ACCESS_LOG: "some" }, "ACCESS_LOG must be true or false"],
    [{ DATABASE_REPLICA_URLS: "postgres://reader@replica/index" }, "DATABASE_REPLICA_URLS needs DATABASE_URL"],
    [{ DATABASE_URL: "postgres://reader@db/index", DATABASE_REPLICA_URLS: "postgres://a/index, replica-2:5432" }, "DATABASE_REPLICA_URLS: entry 2 is not a postgres:// URL"],
    [{ MAX_REPLICA_LAG_MS: "0" }, "MAX_REPLICA_LAG_MS must be between 1 and 3600000"],
  ])("refuses %o", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("lists every variable in --help", () => {
    const text = helpText();
    for (const setting of Object.values(settings)) expect(text).toContain(setting.env);
  });

  it("shows in --help the command line npm start runs, with its Node flags, from the sources", () => {
    const command = startCommandFromSources();
    expect(command).toMatch(/^MALLOC_ARENA_MAX=2 node (--[a-z-]+(=\d+)? )+src\/main\.ts$/);
    expect(command).toContain("--no-allocation-site-pretenuring");
    expect(helpText()).toContain(`(or: ${command} [--help])`);
  });
});

describe("shard ids", () => {
  it.each([
    ["-9223372036854775808", "8000000000000000"],
    ["6917529027641081856", "6000000000000000"],
    ["-6917529027641081856", "A000000000000000"],
  ])("prints %s as toncenter's %s and back", (signed, hex) => {
    expect(shardToUnsignedHex(signed)).toBe(hex);
    expect(unsignedHexToShard(hex)).toBe(signed);
  });
});
