import postgres from "postgres";
import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chown, mkdtemp, rm, writeFile, appendFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

// A PostgreSQL primary with streaming replicas, started from the PostgreSQL binaries installed on the machine: the
// shared test server cannot serve replication (its pg_hba refuses it), so the replica tests and the scale-out bench
// run their own. Each server is a postmaster of its own on a free loopback port, in a temporary directory; the
// replicas are pg_basebackup copies of the primary (-R: they stream from it). PostgreSQL refuses to run as root, so
// when the tests run as root (CI does) every server runs as the `postgres` user.

const run = promisify(execFile);

export interface ClusterNode {
  name: string;
  port: number;
  dataDir: string;
  /** URL of the cluster's index database on this server. */
  url: string;
}

export interface ReplicaCluster {
  primary: ClusterNode;
  replicas: ClusterNode[];
  /** A writable connection to the primary's index database. */
  admin: postgres.Sql;
  /** Runs `text` on the node as the superuser (pg_wal_replay_pause() and the like). */
  query(node: ClusterNode, text: string): Promise<postgres.Row[]>;
  /** Stops the node: `immediate` is a crash (no shutdown checkpoint, connections cut). */
  stop(node: ClusterNode, mode?: "immediate" | "fast"): Promise<void>;
  start(node: ClusterNode): Promise<void>;
  /** Waits until every running replica has replayed what the primary has written so far. */
  caughtUp(replicas?: ClusterNode[]): Promise<void>;
  close(): Promise<void>;
}

export interface ClusterOptions {
  replicas: number;
  /** Fills the index database on the primary before the replicas are copied from it. */
  load(admin: postgres.Sql, url: string): Promise<void>;
  /** Lines added to the servers' postgresql.conf. */
  settings?: string[];
}

const database = "tonquery_index";
const quiet = { onnotice: () => {} };

/** Why the cluster cannot be started here (binaries or `extensions` missing), or undefined when it can. */
export async function replicaClusterUnsupported(extensions: string[] = []): Promise<string | undefined> {
  const bindir = await binDir();
  if (bindir === undefined) return "pg_config is not on PATH (the PostgreSQL server binaries are not installed)";
  const missing = ["initdb", "pg_ctl", "pg_basebackup", "postgres"].filter((tool) => !existsSync(join(bindir, tool)));
  if (missing.length > 0) return `${missing.join(", ")} missing from ${bindir} (pg_config --bindir)`;
  const sharedir = (await run("pg_config", ["--sharedir"])).stdout.trim();
  const absent = extensions.filter((name) => !existsSync(join(sharedir, "extension", `${name}.control`)));
  if (absent.length > 0) return `PostgreSQL extension ${absent.join(", ")} not installed (${sharedir}/extension)`;
  if (process.getuid?.() === 0) {
    const user = await run("id", ["-u", "postgres"]).catch(() => undefined);
    if (user === undefined) return "running as root, and there is no postgres user to run PostgreSQL as";
  }
  return undefined;
}

async function binDir(): Promise<string | undefined> {
  try {
    return (await run("pg_config", ["--bindir"])).stdout.trim();
  } catch {
    return undefined;
  }
}

/** The command line that runs a PostgreSQL tool as a user PostgreSQL accepts: `postgres` when we are root. */
function asServerUser(bindir: string, tool: string, args: string[]): [string, string[]] {
  const path = join(bindir, tool);
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", path, ...args]] : [path, args];
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startReplicaCluster(options: ClusterOptions): Promise<ReplicaCluster> {
  const bindir = await binDir();
  if (bindir === undefined) throw new Error("pg_config not found");
  const tool = async (name: string, args: string[]) => {
    const [command, argv] = asServerUser(bindir, name, args);
    try {
      // From the cluster's directory: the postgres user may not be allowed into ours.
      await run(command, argv, { timeout: 120_000, cwd: root });
    } catch (err) {
      const { stderr, stdout } = err as { stderr?: string; stdout?: string };
      throw new Error(`${name} ${args.join(" ")} failed: ${stderr ?? ""}${stdout ?? ""}`, { cause: err });
    }
  };
  const root = await mkdtemp(join(tmpdir(), "tonquery-replicas-"));
  if (process.getuid?.() === 0) {
    const uid = Number((await run("id", ["-u", "postgres"])).stdout);
    const gid = Number((await run("id", ["-g", "postgres"])).stdout);
    await chown(root, uid, gid);
  }
  const started = new Set<ClusterNode>();
  const connections: postgres.Sql[] = [];
  const node = async (name: string): Promise<ClusterNode> => {
    const port = await freePort();
    return { name, port, dataDir: join(root, name), url: `postgres://postgres@127.0.0.1:${port}/${database}` };
  };
  const ctl = (n: ClusterNode, args: string[]) => tool("pg_ctl", ["-D", n.dataDir, "-l", join(root, `${n.name}.log`), ...args]);
  const start = async (n: ClusterNode) => {
    // -w waits until the server accepts connections (a replica: until it has reached a consistent state).
    await ctl(n, ["-w", "-t", "60", "start"]);
    started.add(n);
  };
  const stop = async (n: ClusterNode, mode: "immediate" | "fast" = "fast") => {
    await ctl(n, ["-w", "-m", mode, "stop"]);
    started.delete(n);
  };
  // Should the test process end without its afterAll (a crash, a kill), the servers must not outlive it.
  const stopAllNow = () => {
    for (const n of started) {
      const [command, argv] = asServerUser(bindir, "pg_ctl", ["-D", n.dataDir, "-m", "immediate", "stop"]);
      try {
        execFileSync(command, argv, { stdio: "ignore", timeout: 10_000, cwd: root });
      } catch {
        // Already gone.
      }
    }
    started.clear();
  };
  process.once("exit", stopAllNow);

  const close = async () => {
    await Promise.all(connections.map((c) => c.end({ timeout: 1 })));
    await Promise.all([...started].map((n) => stop(n, "immediate").catch(() => {})));
    process.off("exit", stopAllNow);
    await rm(root, { recursive: true, force: true });
  };

  try {
    const primary = await node("primary");
    await tool("initdb", ["-D", primary.dataDir, "-U", "postgres", "-A", "trust", "--no-sync", "--locale=C", "-E", "UTF8"]);
    await appendFile(
      join(primary.dataDir, "postgresql.conf"),
      [
        "",
        "listen_addresses = '127.0.0.1'",
        `port = ${primary.port}`,
        `unix_socket_directories = '${root}'`,
        "wal_level = replica",
        "max_wal_senders = 10",
        "hot_standby = on",
        // Throwaway servers: durability buys nothing and costs the shared disk.
        "fsync = off",
        "synchronous_commit = off",
        "full_page_writes = off",
        "shared_buffers = 32MB",
        "max_connections = 60",
        ...(options.settings ?? []),
        "",
      ].join("\n"),
    );
    await writeFile(
      join(primary.dataDir, "pg_hba.conf"),
      ["local all all trust", "host replication all 127.0.0.1/32 trust", "host all all 127.0.0.1/32 trust", ""].join("\n"),
    );
    await start(primary);
    const server = postgres(primary.url.replace(`/${database}`, "/postgres"), { max: 1, ...quiet });
    await server.unsafe(`create database ${database}`);
    await server.end();
    const admin = postgres(primary.url, { max: 2, ...quiet });
    connections.push(admin);
    await options.load(admin, primary.url);

    const replicas: ClusterNode[] = [];
    for (let i = 1; i <= options.replicas; i++) {
      const replica = await node(`replica${i}`);
      await tool("pg_basebackup", ["-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", replica.dataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync"]);
      // The copied configuration is the primary's: the last setting wins.
      await appendFile(join(replica.dataDir, "postgresql.conf"), `\nport = ${replica.port}\n`);
      await start(replica);
      replicas.push(replica);
    }

    const query = async (n: ClusterNode, text: string) => {
      const sql = postgres(n.url, { max: 1, ...quiet });
      try {
        return [...(await sql.unsafe(text))];
      } finally {
        await sql.end({ timeout: 1 });
      }
    };
    const caughtUp = async (nodes = replicas) => {
      const [row] = await query(primary, "select pg_current_wal_lsn()::text as lsn");
      const target = String(row?.lsn);
      for (const replica of nodes.filter((n) => started.has(n))) {
        for (let waited = 0; ; waited += 20) {
          const [r] = await query(replica, `select pg_last_wal_replay_lsn() >= '${target}'::pg_lsn as done`);
          if (r?.done === true) break;
          if (waited > 30_000) throw new Error(`${replica.name} did not replay up to ${target} within 30 s`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    return { primary, replicas, admin, query, stop, start, caughtUp, close };
  } catch (err) {
    await close();
    throw err;
  }
}
