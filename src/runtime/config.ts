// Service configuration, read from the environment so the same build runs in a container, under a
// process manager or from `npm start`.

import { readFileSync } from "node:fs";
import { logLevels, type LogLevel } from "./log.ts";
import { projectFile } from "./project-files.ts";
import { openFileLimit } from "../server/open-file-limit.ts";
import { defaultHoldMaxBytes } from "../rest/body.ts";

export interface Config {
  /** PostgreSQL URL of the ton-index-worker database; absent = embedded PGlite with demo data. */
  databaseUrl: string | undefined;
  /** Streaming replicas of that database: reads are spread over them (see src/db/replicas.ts). */
  databaseReplicaUrls: string[];
  /** A replica further behind the primary than this is not read from. */
  maxReplicaLagMs: number;
  /** Between probes of each database member (availability, and with replicas its position). */
  dbProbeIntervalMs: number;
  host: string;
  port: number;
  /** Connections the service may open to PostgreSQL (see openDatabase for how they are split). */
  poolSize: number;
  /** Slots of work at once (250 transactions take one); more wait their turn, which bounds memory under load. */
  maxConcurrentRequests: number;
  /** Per-statement bound, also applied as PostgreSQL's statement_timeout. */
  statementTimeoutMs: number;
  /** Whole-request bound (queue wait included) for REST and for RPCs whose client sets no deadline; the longest deadline a client may set. */
  requestTimeoutMs: number;
  /** /traces limit when the request gives none. */
  defaultLimit: number;
  maxLimit: number;
  /** Traces with more transactions are returned incomplete, without transactions. */
  maxTraceTransactions: number;
  /** Traces of a page read per round of statements (see streamTraces). */
  traceChunkSize: number;
  /** Print user-friendly addresses in their testnet form. */
  testnet: boolean;
  /** Decode message bodies (`decoded`, `decoded_opcode`) against the TL-B schema. */
  decodeBodies: boolean;
  /** Decoded bodies kept by body hash for later responses. */
  decodedBodyCache: number;
  /** Value of Access-Control-Allow-Origin for browser (gRPC-web, Connect, REST) clients. */
  corsOrigin: string;
  /** How long SIGTERM waits for requests in flight before closing connections. */
  shutdownTimeoutMs: number;
  /** A connection must send a request's complete headers (HTTP/2: its preface) within this. */
  headersTimeoutMs: number;
  /** A request's body must have arrived within this of its headers. */
  bodyTimeoutMs: number;
  /** An HTTP/1.1 keep-alive connection or HTTP/2 session with no request in flight is closed after this. */
  idleTimeoutMs: number;
  /**
   * Client connections open at once; past it the longest-idle connection makes room for the new one. By default
   * what the process's descriptor limit leaves (see defaultMaxConnections).
   */
  maxConnections: number;
  /** Bound of opening a database connection and of the health probe: an unreachable database is known this fast. */
  dbConnectTimeoutMs: number;
  /** Megabytes of rebuilt v2 transaction BOCs kept by transaction hash. */
  transactionBocCacheMb: number;
  /** Key of the HMAC that marks /traces cursors as ours ("" = a built-in key). */
  cursorSecret: string;
  /** Values one list parameter (trace_id, tx_hash, msg_hash, supported_action_types) may hold, repeats removed. */
  maxListValues: number;
  /** Log lines below this level are dropped. */
  logLevel: LogLevel;
  /** One line per request at info level. */
  accessLog: boolean;
  /** OTLP collector: spans are exported there when set (see startTracing). */
  otlpEndpoint: string | undefined;
  /** OTLP traces endpoint (a full URL), instead of or beside otlpEndpoint. */
  otlpTracesEndpoint: string | undefined;
  /** Compress REST answers (gzip, br) for clients that accept it. */
  compression: boolean;
  /** REST answers smaller than this go out uncompressed. */
  compressionMinBytes: number;
  /** REST answers up to this size are held and sent whole (ETag, Content-Length); larger ones are sent as they are written. */
  restHoldMaxBytes: number;
  idleMemoryReleaseMs: number;
  memorySoftLimitMb: number;
  /** Live streams (StreamTraces, SSE, WebSocket subscriptions) open at once on this instance. */
  streamMaxStreams: number;
  /** Accounts one stream may follow. */
  streamMaxAddresses: number;
  /** Between polls of the index for new masterchain blocks (one poll per instance, whatever the number of streams). */
  streamPollIntervalMs: number;
  /** A stream with nothing to send sends a heartbeat carrying its position this often. */
  streamHeartbeatMs: number;
  /** Blocks' messages a stream may hold unsent; a stream whose client reads slower is ended with its position. */
  streamBufferBlocks: number;
  /** How many masterchain blocks behind the index a stream may resume from. */
  streamResumeWindowBlocks: number;
  /** How long a missing masterchain seqno below committed ones is waited for before the stream moves past it. */
  streamGapWaitMs: number;
  /** How long a block is held back for its traces to be classified, for streams that ask for actions. */
  streamActionsWaitMs: number;
}

/** Descriptors the service needs beside client and database connections: stdio, its listener, Node's own (event loop, threads), files it reads. */
const reservedFileDescriptors = 64;
/** The default connection cap where the descriptor limit allows more: what idle connections may cost in memory. */
const maxConnectionsCeiling = 2000;

/**
 * MAX_CONNECTIONS when it is not set: as many client connections as the descriptor limit leaves once the database
 * connections and the service's own files have theirs, so that a flood of connections is met by the cap (the
 * longest-idle connection makes room) rather than by EMFILE, which fails the database's connections and the probes
 * along with the flood's. At most maxConnectionsCeiling; that ceiling when the limit is unknown or unlimited.
 */
export function defaultMaxConnections(openFiles: number | undefined, databaseConnections: number): number {
  if (openFiles === undefined) return maxConnectionsCeiling;
  return Math.max(1, Math.min(maxConnectionsCeiling, openFiles - databaseConnections - reservedFileDescriptors));
}

/** What the configuration's defaults depend on beside the environment. */
export interface Host {
  /** The process's open-file limit; undefined when unlimited or unknown. */
  openFileLimit(): number | undefined;
}

const thisProcess: Host = { openFileLimit };

interface Setting {
  env: string;
  default: string;
  help: string;
}

export const settings = {
  databaseUrl: { env: "DATABASE_URL", default: "", help: "PostgreSQL URL of the index database (read-only access is enough). Empty: start an embedded PGlite database with the demo dataset." },
  databaseReplicaUrls: {
    env: "DATABASE_REPLICA_URLS",
    default: "",
    help: "Comma-separated PostgreSQL URLs of streaming replicas of DATABASE_URL. Requests are spread over the replicas that answer and are at most MAX_REPLICA_LAG_MS behind; the primary serves when none is. Each member gets its own DB_POOL_SIZE connections.",
  },
  maxReplicaLagMs: {
    env: "MAX_REPLICA_LAG_MS",
    default: "3000",
    help: "A replica whose replayed WAL is further behind the primary's than this (measured every DB_PROBE_INTERVAL_MS) takes no new requests until it catches up.",
  },
  dbProbeIntervalMs: {
    env: "DB_PROBE_INTERVAL_MS",
    default: "1000",
    help: "Between probes of each database (primary and replicas) while it answers; 250 ms at most while it does not. Bounds how late an outage or a replica's lag is noticed.",
  },
  host: { env: "HOST", default: "0.0.0.0", help: "Address to listen on." },
  port: { env: "PORT", default: "8080", help: "Port serving Connect, gRPC, gRPC-web and REST (0 = any free port)." },
  poolSize: {
    env: "DB_POOL_SIZE",
    default: "10",
    help: "Maximum PostgreSQL connections (at least 2), plus one for the health probe: a fifth of them, at least one, run statements planned for each call's values, the rest prepared statements.",
  },
  maxConcurrentRequests: {
    env: "MAX_CONCURRENT_REQUESTS",
    default: "8",
    help: "Slots of work served at once: a request takes one per 250 transactions it loads (at least one). A quarter of them (at least one) is kept for light requests (one slot); heavy ones share the rest in arrival order (a page that turns out heavier keeps its place). The others queue; one whose queue ahead would outlast its deadline is refused at once with 503 / UNAVAILABLE and Retry-After. Bounds memory under load.",
  },
  statementTimeoutMs: { env: "STATEMENT_TIMEOUT_MS", default: "3000", help: "Statement timeout in milliseconds; requests that exceed it fail with 504 / DEADLINE_EXCEEDED." },
  requestTimeoutMs: {
    env: "REQUEST_TIMEOUT_MS",
    default: "10000",
    help: "Deadline of a request, waiting for its turn included: REST always, RPCs whose client sets none, and the longest deadline an RPC client may set (a longer one is cut to it). 504 / DEADLINE_EXCEEDED after it.",
  },
  defaultLimit: { env: "DEFAULT_LIMIT", default: "10", help: "Default `limit` of /api/v3/traces." },
  maxLimit: { env: "MAX_LIMIT", default: "1000", help: "Largest accepted `limit` of /api/v3/traces." },
  maxTraceTransactions: { env: "MAX_TRACE_TRANSACTIONS", default: "4000", help: "Traces with more transactions are returned with is_incomplete=true and no transactions." },
  traceChunkSize: {
    env: "TRACE_CHUNK_SIZE",
    default: "100",
    help: "Traces of a /traces page read per round of statements: a page holds the rows of about two chunks at once (the one being written, the next being read), and a larger chunk costs fewer statements per page.",
  },
  testnet: { env: "TESTNET", default: "false", help: "true: user-friendly addresses use the testnet flag." },
  decodeBodies: {
    env: "DECODE_BODIES",
    default: "true",
    help: "false: return every message's decoded and decoded_opcode as null instead of decoding bodies against the TL-B schema.",
  },
  decodedBodyCache: {
    env: "DECODED_BODY_CACHE",
    default: "10000",
    help: "Decoded message bodies kept by body hash for later responses (0: decode every response's bodies afresh).",
  },
  corsOrigin: { env: "CORS_ORIGIN", default: "*", help: "Access-Control-Allow-Origin sent to browsers." },
  shutdownTimeoutMs: { env: "SHUTDOWN_TIMEOUT_MS", default: "10000", help: "Grace period for requests in flight after SIGTERM." },
  headersTimeoutMs: {
    env: "HEADERS_TIMEOUT_MS",
    default: "10000",
    help: "A client connection must send a request's complete headers (HTTP/2: its connection preface) within this; else it is closed.",
  },
  bodyTimeoutMs: { env: "BODY_TIMEOUT_MS", default: "20000", help: "A request's body must arrive within this of its headers; else 408 and the connection is closed." },
  idleTimeoutMs: {
    env: "IDLE_TIMEOUT_MS",
    default: "65000",
    help: "An HTTP/1.1 keep-alive connection or HTTP/2 session with no request in flight is closed after this (longer than common load balancers' 60 s).",
  },
  maxConnections: {
    env: "MAX_CONNECTIONS",
    default: "",
    help: `Client connections open at once; a new one past it closes the longest-idle connection (one with no request in flight), or is refused when none is idle. Empty: the process's open-file limit (ulimit -n) less the database connections (DB_POOL_SIZE + 1 per database) and ${reservedFileDescriptors} descriptors for the service's own files, at most ${maxConnectionsCeiling}.`,
  },
  dbConnectTimeoutMs: {
    env: "DB_CONNECT_TIMEOUT_MS",
    default: "1000",
    help: "Bound of opening a database connection and of the database health probe: while the database is unreachable requests fail with 503 this fast.",
  },
  transactionBocCacheMb: {
    env: "TRANSACTION_BOC_CACHE_MB",
    default: "32",
    help: "Megabytes of rebuilt transaction BOCs (getBlockTransactionsExt's data) kept by transaction hash for later responses (0: rebuild every time).",
  },
  cursorSecret: {
    env: "CURSOR_SECRET",
    default: "",
    help: "Key that signs /traces cursors (next_cursor, next_page_token), so that an altered one is refused; give every instance behind one load balancer the same. Empty: a built-in key (cursors are still checked, but anyone can make one).",
  },
  maxListValues: {
    env: "MAX_LIST_VALUES",
    default: "256",
    help: "Most values one list parameter (trace_id, tx_hash, msg_hash, supported_action_types) may hold once repeats are removed; more is a 422 / INVALID_ARGUMENT.",
  },
  logLevel: { env: "LOG_LEVEL", default: "info", help: "Least severe log line written to stderr: debug, info, warn or error." },
  accessLog: {
    env: "ACCESS_LOG",
    default: "true",
    help: "true: one JSON line per request (at info level, with its X-Request-Id); false: none, the other info lines stay.",
  },
  otlpEndpoint: {
    env: "OTEL_EXPORTER_OTLP_ENDPOINT",
    default: "",
    help: "OpenTelemetry collector base URL (http://host:4318): set, requests and SQL statements are traced and their spans sent to <URL>/v1/traces; the SDK's other OTEL_* variables apply. Empty: no tracing, the SDK is not even loaded.",
  },
  otlpTracesEndpoint: {
    env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    default: "",
    help: "Full URL of an OTLP traces endpoint; turns tracing on like OTEL_EXPORTER_OTLP_ENDPOINT, and wins over it for spans.",
  },
  compression: {
    env: "COMPRESSION",
    default: "true",
    help: "Compress REST answers with brotli or gzip as the client's Accept-Encoding asks (false: never, and no Vary). Connect, gRPC and gRPC-web negotiate their own.",
  },
  compressionMinBytes: {
    env: "COMPRESSION_MIN_BYTES",
    default: "1024",
    help: "REST answers smaller than this many bytes go out uncompressed, unless the client refuses identity.",
  },
  restHoldMaxBytes: {
    env: "REST_HOLD_MAX_BYTES",
    default: String(defaultHoldMaxBytes),
    help: "REST answers up to this many bytes of JSON are held and sent whole, with an ETag and Content-Length; a larger one is sent as it is written (chunked, Cache-Control: no-cache, no ETag), its pages read as fast as the client takes them.",
  },
  idleMemoryReleaseMs: {
    env: "IDLE_MEMORY_RELEASE_MS",
    default: "10000",
    help: "After this long without a request in flight (following some), one garbage collection gives the operating system back the heap pages the work left empty, which V8 otherwise keeps for good (a pause of tens of milliseconds, once per stretch of activity); 0: never.",
  },
  memorySoftLimitMb: {
    env: "MEMORY_SOFT_LIMIT_MB",
    default: "200",
    help: "Under load, when the resident set passes this many megabytes, one garbage collection gives back the heap pages work left empty, as after IDLE_MEMORY_RELEASE_MS; at most once a second, and no sooner after the last than a hundred times its pause (1 % of the time), twice as long after each that gave back less than a tenth of the limit (up to 64 times); 0: never.",
  },
  streamMaxStreams: {
    env: "STREAM_MAX_STREAMS",
    default: "1000",
    help: "Live streams (StreamTraces, /api/streaming/v2/sse, WebSocket subscriptions) open at once on this instance; one more is refused with 429 / RESOURCE_EXHAUSTED.",
  },
  streamMaxAddresses: {
    env: "STREAM_MAX_ADDRESSES",
    default: "1000",
    help: "Accounts one stream may follow; more is a 400 / INVALID_ARGUMENT (\"too many addresses\").",
  },
  streamPollIntervalMs: {
    env: "STREAM_POLL_INTERVAL_MS",
    default: "500",
    help: "Between polls of the index for newly committed masterchain blocks while streams are open: one statement per interval per instance, whatever the number of streams.",
  },
  streamHeartbeatMs: {
    env: "STREAM_HEARTBEAT_MS",
    default: "15000",
    help: "A stream that has sent nothing for this long sends a heartbeat with its position (SSE: an event with an id; WebSocket: a message and a ping; RPC: a message with heartbeat set).",
  },
  streamBufferBlocks: {
    env: "STREAM_BUFFER_BLOCKS",
    default: "64",
    help: "Blocks' messages a stream may hold while its client has not read the previous ones; one more ends the stream with a resumable error carrying its position (RESOURCE_EXHAUSTED).",
  },
  streamResumeWindowBlocks: {
    env: "STREAM_RESUME_WINDOW_BLOCKS",
    default: "10000",
    help: "How many masterchain blocks behind the index a stream may resume from (replayed from the index, then live); an older position is refused (410 / OUT_OF_RANGE) with the oldest one accepted.",
  },
  streamGapWaitMs: {
    env: "STREAM_GAP_WAIT_MS",
    default: "30000",
    help: "A masterchain seqno missing below committed ones (the worker commits batches out of order) is waited for this long; then streams move past it as a block the index does not hold (logged, and counted in tonquery_stream_gaps_skipped_total).",
  },
  streamActionsWaitMs: {
    env: "STREAM_ACTIONS_WAIT_MS",
    default: "10000",
    help: "For streams that ask for actions, how long a block is held back until the classifier has classified its traces; after it those traces go out without actions (classification_state unclassified).",
  },
} satisfies Record<keyof Config, Setting>;

export class ConfigError extends Error {}

function integer(name: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value)) throw new ConfigError(`${name} must be a whole number, got "${value}"`);
  const n = Number(value);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  const found = allowed.find((a) => a === value.toLowerCase());
  if (found === undefined) throw new ConfigError(`${name} must be one of ${allowed.join(", ")}, got "${value}"`);
  return found;
}

function boolean(name: string, value: string): boolean {
  const v = value.toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

function urlList(name: string, value: string): string[] {
  const urls = value
    .split(",")
    .map((url) => url.trim())
    .filter((url) => url !== "");
  // The value is not echoed: it may hold a password.
  urls.forEach((url, index) => {
    const protocol = URL.canParse(url) ? new URL(url).protocol : undefined;
    if (protocol !== "postgres:" && protocol !== "postgresql:") throw new ConfigError(`${name}: entry ${index + 1} is not a postgres:// URL`);
  });
  return urls;
}

export function loadConfig(env: Record<string, string | undefined> = process.env, host: Host = thisProcess): Config {
  const read = (s: Setting) => (env[s.env] ?? "").trim() || s.default;
  const s = settings;
  const poolSize = integer(s.poolSize.env, read(s.poolSize), 1, 1000);
  const databaseReplicaUrls = urlList(s.databaseReplicaUrls.env, read(s.databaseReplicaUrls));
  // Each database (the primary, each replica) gets the pool's connections plus the probe's.
  const databaseConnections = (poolSize + 1) * (1 + databaseReplicaUrls.length);
  const config: Config = {
    databaseUrl: read(s.databaseUrl) || undefined,
    databaseReplicaUrls,
    maxReplicaLagMs: integer(s.maxReplicaLagMs.env, read(s.maxReplicaLagMs), 1, 3_600_000),
    dbProbeIntervalMs: integer(s.dbProbeIntervalMs.env, read(s.dbProbeIntervalMs), 10, 600_000),
    host: read(s.host),
    port: integer(s.port.env, read(s.port), 0, 65535),
    poolSize,
    maxConcurrentRequests: integer(s.maxConcurrentRequests.env, read(s.maxConcurrentRequests), 1, 10_000),
    statementTimeoutMs: integer(s.statementTimeoutMs.env, read(s.statementTimeoutMs), 1, 3_600_000),
    requestTimeoutMs: integer(s.requestTimeoutMs.env, read(s.requestTimeoutMs), 1, 3_600_000),
    defaultLimit: integer(s.defaultLimit.env, read(s.defaultLimit), 1, 1_000_000),
    maxLimit: integer(s.maxLimit.env, read(s.maxLimit), 1, 1_000_000),
    maxTraceTransactions: integer(s.maxTraceTransactions.env, read(s.maxTraceTransactions), 1, 10_000_000),
    traceChunkSize: integer(s.traceChunkSize.env, read(s.traceChunkSize), 1, 100_000),
    testnet: boolean(s.testnet.env, read(s.testnet)),
    decodeBodies: boolean(s.decodeBodies.env, read(s.decodeBodies)),
    decodedBodyCache: integer(s.decodedBodyCache.env, read(s.decodedBodyCache), 0, 10_000_000),
    corsOrigin: read(s.corsOrigin),
    shutdownTimeoutMs: integer(s.shutdownTimeoutMs.env, read(s.shutdownTimeoutMs), 0, 600_000),
    headersTimeoutMs: integer(s.headersTimeoutMs.env, read(s.headersTimeoutMs), 1, 3_600_000),
    bodyTimeoutMs: integer(s.bodyTimeoutMs.env, read(s.bodyTimeoutMs), 1, 3_600_000),
    idleTimeoutMs: integer(s.idleTimeoutMs.env, read(s.idleTimeoutMs), 1, 3_600_000),
    maxConnections:
      read(s.maxConnections) === ""
        ? defaultMaxConnections(host.openFileLimit(), databaseConnections)
        : integer(s.maxConnections.env, read(s.maxConnections), 1, 1_000_000),
    dbConnectTimeoutMs: integer(s.dbConnectTimeoutMs.env, read(s.dbConnectTimeoutMs), 1, 600_000),
    transactionBocCacheMb: integer(s.transactionBocCacheMb.env, read(s.transactionBocCacheMb), 0, 100_000),
    cursorSecret: read(s.cursorSecret),
    maxListValues: integer(s.maxListValues.env, read(s.maxListValues), 1, 100_000),
    logLevel: oneOf(s.logLevel.env, read(s.logLevel), logLevels),
    accessLog: boolean(s.accessLog.env, read(s.accessLog)),
    otlpEndpoint: read(s.otlpEndpoint) || undefined,
    otlpTracesEndpoint: read(s.otlpTracesEndpoint) || undefined,
    compression: boolean(s.compression.env, read(s.compression)),
    compressionMinBytes: integer(s.compressionMinBytes.env, read(s.compressionMinBytes), 0, 1_000_000_000),
    restHoldMaxBytes: integer(s.restHoldMaxBytes.env, read(s.restHoldMaxBytes), 0, 1_000_000_000),
    idleMemoryReleaseMs: integer(s.idleMemoryReleaseMs.env, read(s.idleMemoryReleaseMs), 0, 86_400_000),
    memorySoftLimitMb: integer(s.memorySoftLimitMb.env, read(s.memorySoftLimitMb), 0, 1_048_576),
    streamMaxStreams: integer(s.streamMaxStreams.env, read(s.streamMaxStreams), 0, 1_000_000),
    streamMaxAddresses: integer(s.streamMaxAddresses.env, read(s.streamMaxAddresses), 1, 1_000_000),
    streamPollIntervalMs: integer(s.streamPollIntervalMs.env, read(s.streamPollIntervalMs), 10, 600_000),
    streamHeartbeatMs: integer(s.streamHeartbeatMs.env, read(s.streamHeartbeatMs), 10, 3_600_000),
    streamBufferBlocks: integer(s.streamBufferBlocks.env, read(s.streamBufferBlocks), 1, 1_000_000),
    streamResumeWindowBlocks: integer(s.streamResumeWindowBlocks.env, read(s.streamResumeWindowBlocks), 0, 100_000_000),
    streamGapWaitMs: integer(s.streamGapWaitMs.env, read(s.streamGapWaitMs), 0, 86_400_000),
    streamActionsWaitMs: integer(s.streamActionsWaitMs.env, read(s.streamActionsWaitMs), 0, 3_600_000),
  };
  if (config.databaseReplicaUrls.length > 0 && config.databaseUrl === undefined) {
    throw new ConfigError("DATABASE_REPLICA_URLS needs DATABASE_URL: replicas of the embedded demo database cannot exist");
  }
  if (config.defaultLimit > config.maxLimit) {
    throw new ConfigError(`DEFAULT_LIMIT (${config.defaultLimit}) must not exceed MAX_LIMIT (${config.maxLimit})`);
  }
  return config;
}

/** The command line `npm start` runs (package.json's start script): the one place its environment and Node flags are written. */
export function startScript(): string {
  const manifest = JSON.parse(readFileSync(projectFile("package.json"), "utf8")) as { scripts: { start: string } };
  return manifest.scripts.start;
}

/** `npm start`'s command line, run from the sources. */
export function startCommandFromSources(): string {
  return startScript().replace("dist/src/main.js", "src/main.ts");
}

export function helpText(): string {
  const rows = Object.values(settings).map((s) => `  ${s.env.padEnd(24)}${s.help}${s.default ? ` Default: ${s.default}.` : ""}`);
  return [
    "tonquery: Connect, gRPC, gRPC-web and toncenter-compatible REST over a ton-index-worker database.",
    "",
    `Usage: npm start            (or: ${startCommandFromSources()} [--help])`,
    "",
    "Configuration (environment variables):",
    ...rows,
    "",
  ].join("\n");
}
