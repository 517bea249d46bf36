import { parseArgs } from "node:util";

export const allProtocols = ["rest", "connect", "grpc", "grpc-web"] as const;

/** The index every bench tool reads unless told otherwise: `$DATABASE_URL`, else the generator's default database. */
export const defaultDatabaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/tonquery_bench";
export type Protocol = (typeof allProtocols)[number];

export interface BenchOptions {
  databaseUrl: string;
  /** Measured time of one (case, protocol, concurrency) run. */
  durationMs: number;
  /** Unmeasured time before it, at the same concurrency. */
  warmupMs: number;
  /**
   * Unmeasured time, in all, for which every case is sent over every protocol (and replayed as the floor) before the
   * first measured run, and to a server started again after a crash: V8 compiles the code a request runs over its
   * first seconds of work, which is not what the runs compare (0: none).
   */
  serverWarmupMs: number;
  /** A run also stops after this many measured requests (0 = no bound). */
  maxRequests: number;
  /** Hard bound of a run's measured phase, drain included: requests still in flight are aborted (censored). */
  maxRunMs: number;
  concurrency: number[];
  protocols: Protocol[];
  /** Substrings or globs (`*`) of case and mixed-scenario ids; empty = every case and scenario. */
  cases: string[];
  /** Mixed scenario: clients looping heavy pages, clients per probe kind and the least time between a probe client's
   * requests, its own warm-up and measured time. */
  mixedHeavyClients: number;
  mixedProbeClients: number;
  mixedProbeIntervalMs: number;
  mixedWarmupMs: number;
  mixedDurationMs: number;
  /**
   * Masterchain blocks per second the live writer (bench/generate/follow.ts) appends during a second run of each
   * mixed scenario (ids ending in .writer); 0: no writer. It writes to the bench's database.
   */
  writerRate: number;
  /** "raw": requests pre-encoded once, responses read as bytes (status checked, first one decoded); "sdk": @connectrpc clients. */
  client: "raw" | "sdk";
  /** Measure the SQL floor (off: only the server is measured). */
  floor: boolean;
  explain: boolean;
  /** Extra flags for the server's node process (for example --cpu-prof). */
  serverNodeArgs: string[];
  /** Where each run's on-CPU samples of the server go (Linux perf, see perf-record.ts); undefined: none taken. */
  perfDir: string | undefined;
  /** Environment for the server process on top of DATABASE_URL (DB_POOL_SIZE=…, …). */
  serverEnv: Record<string, string>;
  outDir: string;
  list: boolean;
  /** Iteration mode: short runs at concurrency 1 and 16 over REST and gRPC, the cases the targets judge less the slowest, no EXPLAIN, no mixed load unless asked for, one JSON line per run. */
  quick: boolean;
}

const help = `npm run bench -- [options]

Measures every case over each protocol and concurrency, the SQL floor of the same statements, EXPLAIN plans and
the server's peak RSS, then the mixed-load scenarios (cheap probes measured while heavy pages run); writes
bench/results/<timestamp>.json and bench/results/latest.md.

  --database-url URL      index database (default: $DATABASE_URL or postgres://postgres@127.0.0.1:5432/tonquery_bench)
  --duration-ms N         measured time per (case, protocol, concurrency) run (default 2500)
  --warmup-ms N           unmeasured warm-up before each run (default 500)
  --server-warmup-ms N    before the first measured run, every chosen case is sent over every chosen protocol
                          (and replayed as the floor) at concurrency 4, this long in all, unmeasured: the runs
                          then measure a service that has compiled its code, as one that has been up for a while
                          has, not its first seconds (default 20000; --quick 5000; 0: none)
  --max-requests N        also stop a run after N measured requests (default 0 = no bound)
  --max-run-ms N          hard bound of a run, drain included; requests still in flight are aborted and
                          count as slower than that (default 20000)
  --concurrency 1,16,64   requests in flight (default 1,16,64)
  --protocols LIST        rest,connect,grpc[,grpc-web] (default rest,connect,grpc)
  --cases LIST            case ids (exact), parts of them, or globs with * (default: all); --list prints them.
                          The mixed-load scenarios are selected the same way: --cases mixed runs only them
                          (mixed.rest: heavy pages over REST, mixed.grpc: over gRPC, each if in --protocols)
  --mixed-heavy-clients N clients looping hot-account pages of 1000 traces in a mixed scenario (default 6;
                          0 measures the probes alone)
  --mixed-probe-clients N clients looping each probe (REST masterchainInfo, one trace by tx_hash) (default 2)
  --mixed-probe-interval-ms N  a probe client sends at most one request per N ms, so that the probes stay light;
                          a slower answer is followed at once by the next request (default 50)
  --mixed-warmup-ms N     mixed scenario: heavy load and probes run unmeasured first (default 3000)
  --mixed-duration-ms N   mixed scenario: measured time; requests in flight at its end are waited for up to
                          --max-run-ms (default 20000)
  --writer-rate N         each mixed scenario runs a second time (mixed.rest.writer, ...) while the live writer
                          appends N masterchain blocks a second to the bench's database, as ton-index-worker does
                          (default 0: no writer; the database keeps what the writer appended)
  --client raw|sdk        raw (default): pre-encoded requests, bytes read; sdk: @connectrpc clients (decode cost included)
  --no-floor              skip the SQL floor
  --no-explain            skip EXPLAIN
  --server-node-arg ARG   extra node flag for the server process, repeatable (e.g. --cpu-prof)
  --perf DIR              record the server's on-CPU samples of each run (all its threads, kernel time included)
                          with Linux perf into DIR/<case>.<protocol>.c<N>.txt; summarise them with
                          node bench/profile-summary.ts DIR/*.txt (needs perf, and root or perf_event_paranoid <= 1)
  --server-env K=V        extra environment for the server process, repeatable (e.g. DB_POOL_SIZE=20)
  --out DIR               results directory (default bench/results)
  --list                  print the cases chosen from the data and exit
  --quick                 for iteration (under 3 min on a 200k index): checks the same targets on the cases
                          they judge, without the compressed, deep and large pages (see inQuickBench in
                          cases.ts); defaults become --duration-ms 1000 --warmup-ms 200 --server-warmup-ms 5000
                          --concurrency 1,16 --protocols rest,grpc --no-explain, the mixed load runs only when
                          --cases names it, and each run also prints one JSON line {"case","door","p50_ms",
                          "p99_ms","floor_p50_ms","ratio"}; explicit flags (--cases included) still win
`;

function numberList(value: string, name: string): number[] {
  const list = value.split(",").map((v) => Number(v.trim()));
  if (list.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`${name}: positive integers separated by commas, got "${value}"`);
  return list;
}

function wholeNumber(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name}: a whole number, got "${value}"`);
  return n;
}

export function parseOptions(argv: string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      "database-url": { type: "string" },
      "duration-ms": { type: "string" },
      "warmup-ms": { type: "string" },
      "server-warmup-ms": { type: "string" },
      "max-requests": { type: "string" },
      "max-run-ms": { type: "string" },
      concurrency: { type: "string" },
      protocols: { type: "string" },
      cases: { type: "string" },
      "mixed-heavy-clients": { type: "string" },
      "mixed-probe-clients": { type: "string" },
      "mixed-probe-interval-ms": { type: "string" },
      "mixed-warmup-ms": { type: "string" },
      "mixed-duration-ms": { type: "string" },
      "writer-rate": { type: "string" },
      client: { type: "string" },
      "no-floor": { type: "boolean" },
      "no-explain": { type: "boolean" },
      "server-node-arg": { type: "string", multiple: true },
      perf: { type: "string" },
      "server-env": { type: "string", multiple: true },
      out: { type: "string" },
      list: { type: "boolean" },
      quick: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(help);
    return undefined;
  }
  const quick = values.quick ?? false;
  const protocols = (values.protocols ?? (quick ? "rest,grpc" : "rest,connect,grpc")).split(",").map((p) => p.trim());
  for (const p of protocols) {
    if (!(allProtocols as readonly string[]).includes(p)) throw new Error(`--protocols: unknown protocol "${p}" (${allProtocols.join(", ")})`);
  }
  const client = values.client ?? "raw";
  if (client !== "raw" && client !== "sdk") throw new Error(`--client: raw or sdk, got "${client}"`);
  const serverEnv: Record<string, string> = {};
  for (const pair of values["server-env"] ?? []) {
    const eq = pair.indexOf("=");
    if (eq < 1) throw new Error(`--server-env: KEY=VALUE, got "${pair}"`);
    serverEnv[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return {
    databaseUrl: values["database-url"] ?? defaultDatabaseUrl,
    durationMs: wholeNumber(values["duration-ms"] ?? (quick ? "1000" : "2500"), "--duration-ms"),
    warmupMs: wholeNumber(values["warmup-ms"] ?? (quick ? "200" : "500"), "--warmup-ms"),
    serverWarmupMs: wholeNumber(values["server-warmup-ms"] ?? (quick ? "5000" : "20000"), "--server-warmup-ms"),
    maxRequests: wholeNumber(values["max-requests"] ?? "0", "--max-requests"),
    maxRunMs: wholeNumber(values["max-run-ms"] ?? "20000", "--max-run-ms"),
    concurrency: numberList(values.concurrency ?? (quick ? "1,16" : "1,16,64"), "--concurrency"),
    protocols: protocols as Protocol[],
    cases: (values.cases ?? "").split(",").map((c) => c.trim()).filter((c) => c !== ""),
    mixedHeavyClients: wholeNumber(values["mixed-heavy-clients"] ?? "6", "--mixed-heavy-clients"),
    mixedProbeClients: wholeNumber(values["mixed-probe-clients"] ?? "2", "--mixed-probe-clients"),
    mixedProbeIntervalMs: wholeNumber(values["mixed-probe-interval-ms"] ?? "50", "--mixed-probe-interval-ms"),
    mixedWarmupMs: wholeNumber(values["mixed-warmup-ms"] ?? "3000", "--mixed-warmup-ms"),
    mixedDurationMs: wholeNumber(values["mixed-duration-ms"] ?? "20000", "--mixed-duration-ms"),
    writerRate: wholeNumber(values["writer-rate"] ?? "0", "--writer-rate"),
    client,
    floor: !values["no-floor"],
    explain: !values["no-explain"] && !quick,
    serverNodeArgs: values["server-node-arg"] ?? [],
    perfDir: values.perf,
    serverEnv,
    outDir: values.out ?? new URL("./results/", import.meta.url).pathname,
    list: values.list ?? false,
    quick,
  };
}

/**
 * Whether a case id matches one of the --cases patterns: a pattern equal to some case id selects that case only,
 * a pattern with * is a glob, anything else a substring (traces.hot selects every hot-account case).
 */
export function caseSelected(id: string, patterns: readonly string[], allIds: readonly string[]): boolean {
  if (patterns.length === 0) return true;
  return patterns.some((p) => {
    if (allIds.includes(p)) return id === p;
    if (!p.includes("*")) return id.includes(p);
    const re = new RegExp(`^${p.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
    return re.test(id);
  });
}
