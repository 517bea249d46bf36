// The server's child process and what the bench reads about it and PostgreSQL from /proc: resident memory
// (VmRSS sampled every 50 ms, VmHWM the kernel's own peak) and CPU time (utime + stime, of the server, of every
// postgres process, and of the bench process itself), and the whole machine's (/proc/stat): what went to other
// processes, what stayed idle and what the hypervisor took; and the server's event loop thread's schedule (time on a
// core, time waiting for one), the one thread every request passes through.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import postgres from "postgres";
import { startScript } from "../src/runtime/config.ts";

const clockTicks = 100; // USER_HZ on Linux

/** The bench's own connection for watching the database (its sessions and their activity), named so as to be told apart. */
export function openMonitorSql(databaseUrl: string): postgres.Sql {
  return postgres(databaseUrl, { max: 1, onnotice: () => {}, connection: { application_name: "tonquery-bench-monitor" } });
}

/** pids of the PostgreSQL backends connected to the bench's database, the monitor's own left out: whose CPU a run counts. */
export async function databaseBackendPids(monitorSql: postgres.Sql): Promise<string[]> {
  const rows = await monitorSql<{ pid: string }[]>`select pid::text as pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
  return rows.map((r) => r.pid);
}

export interface ServerProcess {
  pid: number;
  port: number;
  poolSize: number;
  /** Peak VmRSS seen by the sampler since the last call, in MB; resets the window. */
  takePeakRssMb(): number;
  /** Current VmRSS and the kernel's high-water mark VmHWM, in MB. */
  memory(): { rssMb: number; hwmMb: number };
  cpuMs(): number;
  /** Its main thread's (the event loop's) time on a core and waiting for one, from schedstat. */
  eventLoop(): ThreadSchedule;
  /** How the process ended, if it did (a crash, an out-of-memory kill). */
  exit(): { code: number | null; signal: string | null } | undefined;
  /** Highest VmRSS the sampler saw over the process's whole life, in MB. */
  lifetimePeakRssMb(): number;
  /** Resolves when the server has used under 5% of a core for 300 ms (or after 60 s). */
  waitIdle(): Promise<void>;
  /** Access log lines the server has written (they are counted, not shown). */
  accessLines(): number;
  /** The server's /metrics, as Prometheus would scrape it. */
  scrapeMetrics(): Promise<string>;
  stop(): Promise<void>;
}

function statusField(pid: number, field: string): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** A process's CPU from /proc/<pid>/stat (`ms`: utime + stime), or undefined when it is gone. */
function processStat(pid: number | string): { comm: string; parent: string; ms: number; exitedChildrenMs: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // comm is in parentheses and may contain spaces; the fields after it are space separated.
    const close = text.lastIndexOf(")");
    const comm = text.slice(text.indexOf("(") + 1, close);
    const fields = text.slice(close + 2).split(" ");
    // Fields 4 (ppid) and 14-17 of stat (utime, stime, cutime, cstime) are at 1 and 11-14 after the comm.
    const ms = (ticks: number) => (ticks * 1000) / clockTicks;
    return {
      comm,
      parent: fields[1] ?? "",
      ms: ms(Number(fields[11]) + Number(fields[12])),
      exitedChildrenMs: ms(Number(fields[13]) + Number(fields[14])),
    };
  } catch {
    return undefined;
  }
}

/** A thread's time on a core and time runnable but waiting for one (the run queue), in ms since it started. */
export interface ThreadSchedule {
  runMs: number;
  waitMs: number;
}

/** /proc/<pid>/task/<tid>/schedstat: nanoseconds on a core, nanoseconds waiting on the run queue, timeslices. */
export function parseSchedstat(text: string): ThreadSchedule {
  const [run, wait] = text.trim().split(/\s+/).map(Number);
  if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait)) {
    throw new Error(`not a schedstat line: ${JSON.stringify(text.slice(0, 40))}`);
  }
  return { runMs: run / 1e6, waitMs: wait / 1e6 };
}

function threadSchedule(pid: number, tid: number): ThreadSchedule {
  try {
    return parseSchedstat(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8"));
  } catch {
    return { runMs: Number.NaN, waitMs: Number.NaN };
  }
}

/**
 * A postgres process's CPU: its own, and that of its children it has reaped (for a postmaster: the parallel workers
 * and other backends that exited).
 */
export interface PostgresProcessCpu {
  ms: number;
  parent: string;
  exitedChildrenMs: number;
}

/** Every postgres process on this machine (postmasters, backends, workers), by pid. */
export function postgresCpu(): Map<string, PostgresProcessCpu> {
  const byPid = new Map<string, PostgresProcessCpu>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(entry);
    if (stat !== undefined && stat.comm.startsWith("postgres")) byPid.set(entry, { ms: stat.ms, parent: stat.parent, exitedChildrenMs: stat.exitedChildrenMs });
  }
  return byPid;
}

/**
 * PostgreSQL CPU spent between two readings by the given backends: those alive at both count their difference,
 * those started in between all of theirs; plus what their postmaster reaped in between, which is mostly the
 * parallel workers their statements started (a worker lives for one statement, so no reading sees most of them:
 * the hot account's page at offset 10,000 ran 1.3-1.5 cores of them that were counted nowhere). A child that was
 * already there at the first reading and exits in between counts only what it ran since: its life before the first
 * reading, which its reaped time also holds, is taken off (round3j counted the floor's pool's backends, closed by
 * their idle timeout during later runs, as up to 2.6 s of PostgreSQL CPU per request). What other databases'
 * backends run and exit with during the run still counts, so the bench runs alone. One of the given backends that
 * exited in between (the pools keep theirs open) counts the same way, as its postmaster's child, while another of
 * them keeps that postmaster in view.
 */
export function postgresCpuDeltaMs(
  before: ReadonlyMap<string, PostgresProcessCpu>,
  after: ReadonlyMap<string, PostgresProcessCpu>,
  pids: ReadonlySet<string>,
): number {
  let total = 0;
  const postmasters = new Set<string>();
  for (const [pid, cpu] of after) {
    if (!pids.has(pid)) continue;
    total += cpu.ms - (before.get(pid)?.ms ?? 0);
    postmasters.add(cpu.parent);
  }
  for (const pid of postmasters) {
    const now = after.get(pid);
    if (now === undefined) continue;
    let reaped = now.exitedChildrenMs - (before.get(pid)?.exitedChildrenMs ?? now.exitedChildrenMs);
    // A child that was there at the first reading and exited since (an idle pool's backend closed by its timeout)
    // is reaped with its whole life: what it ran before the first reading is not this run's.
    for (const [child, then] of before) if (then.parent === pid && !after.has(child)) reaped -= then.ms;
    total += Math.max(0, reaped);
  }
  return total;
}

/** The machine's CPU time since boot in ms, all cores together, from the first line of /proc/stat. */
export interface MachineCpuMs {
  /** Running anything: user, nice, system, irq, softirq (guest time is inside user). */
  busy: number;
  /** Idle, waiting for I/O included. */
  idle: number;
  /** Wanted by this machine but given to another guest by the hypervisor. */
  steal: number;
}

export function parseMachineCpu(procStat: string): MachineCpuMs {
  const line = procStat.split("\n", 1)[0] ?? "";
  if (!line.startsWith("cpu ")) throw new Error(`not /proc/stat: ${JSON.stringify(line.slice(0, 40))}`);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  const ms = (ticks: number) => (ticks * 1000) / clockTicks;
  return { busy: ms(user + nice + system + irq + softirq), idle: ms(idle + iowait), steal: ms(steal) };
}

function machineCpuMs(): MachineCpuMs {
  return parseMachineCpu(readFileSync("/proc/stat", "utf8"));
}

export function benchCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export interface CpuSpentMs {
  server: number;
  postgres: number;
  bench: number;
  machine: MachineCpuMs;
  /** The server's event loop thread: on a core and waiting for one (part of `server` is its other threads: the collector's helpers, libuv). */
  eventLoop: ThreadSchedule;
}

/**
 * CPU spent between start() and stop() by the server process, by the given PostgreSQL backends (those connected to
 * the bench's database: other databases on the same PostgreSQL are not ours), by the bench process, and by the
 * machine as a whole.
 */
export function cpuMeter(server: ServerProcess | undefined) {
  const read = () => ({
    server: server?.cpuMs() ?? 0,
    postgres: postgresCpu(),
    bench: benchCpuMs(),
    machine: machineCpuMs(),
    eventLoop: server?.eventLoop() ?? { runMs: 0, waitMs: 0 },
  });
  let before = {
    server: 0,
    postgres: new Map<string, PostgresProcessCpu>(),
    bench: 0,
    machine: { busy: 0, idle: 0, steal: 0 },
    eventLoop: { runMs: 0, waitMs: 0 },
  };
  let after = before;
  return {
    start() {
      before = read();
    },
    stop() {
      after = read();
    },
    spentMs(backends: ReadonlySet<string>): CpuSpentMs {
      return {
        server: after.server - before.server,
        postgres: postgresCpuDeltaMs(before.postgres, after.postgres, backends),
        bench: after.bench - before.bench,
        machine: { busy: after.machine.busy - before.machine.busy, idle: after.machine.idle - before.machine.idle, steal: after.machine.steal - before.machine.steal },
        eventLoop: { runMs: after.eventLoop.runMs - before.eventLoop.runMs, waitMs: after.eventLoop.waitMs - before.eventLoop.waitMs },
      };
    },
  };
}

/**
 * What the rest of the machine did over a run of `elapsedMs`, in cores: processes other than the three measured
 * (another bench, PostgreSQL's own background processes, the system), idle time, and time the hypervisor gave to
 * other guests. Where the three measured ones leave cores over, these say whether they were free or taken.
 */
export function machineCores(spent: Omit<CpuSpentMs, "eventLoop">, elapsedMs: number): { others: number; idle: number; steal: number } {
  const cores = (cpuMs: number) => (elapsedMs > 0 ? cpuMs / elapsedMs : Number.NaN);
  const ours = spent.server + spent.postgres + spent.bench;
  return { others: cores(Math.max(0, spent.machine.busy - ours)), idle: cores(spent.machine.idle), steal: cores(spent.machine.steal) };
}

/**
 * How `npm start` (package.json) runs the service, so that a bench measures it as it is run: the environment it
 * sets before `node` (VAR=value words), its Node flags, and the build it runs (`npm run build`, as `prestart` does),
 * whose bench/server-process.js `entry` is the server under test.
 */
export function serviceLaunch(): { env: Record<string, string>; nodeFlags: string[]; entry: string } {
  const script = startScript();
  const words = script.split(/\s+/);
  const env: Record<string, string> = {};
  for (let assignment = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(words[0] ?? ""); assignment !== null; assignment = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(words[0] ?? "")) {
    env[assignment[1] as string] = assignment[2] as string;
    words.shift();
  }
  if (words[0] !== "node") throw new Error(`package.json "start" does not run node: ${script}`);
  buildOnce();
  return { env, nodeFlags: words.slice(1).filter((word) => word.startsWith("--")), entry: new URL("../dist/bench/server-process.js", import.meta.url).pathname };
}

let built = false;
/** Builds the service once per bench (servers started together share the build). */
function buildOnce(): void {
  if (built) return;
  const build = spawnSync("npm", ["run", "--silent", "build"], { cwd: new URL("..", import.meta.url).pathname, stdio: "inherit" });
  if (build.status !== 0) throw new Error("npm run build failed");
  built = true;
}

/**
 * Starts the server under test: this checkout's build, or `entry` (another checkout's bench/server-process.js, for
 * comparing builds, see ab.ts), run as `npm start` runs the service.
 */
export async function startServer(databaseUrl: string, env: Record<string, string>, nodeArgs: string[], entry?: string): Promise<ServerProcess> {
  const launch = serviceLaunch();
  const child: ChildProcess = spawn(process.execPath, [...launch.nodeFlags, ...nodeArgs, entry ?? launch.entry], {
    env: { ...process.env, ...launch.env, ...env, DATABASE_URL: databaseUrl, BENCH_PARENT_PIPE: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error("could not start the server process");
  // The server writes its log as it would in production (to a pipe someone reads); its access lines, one per
  // request, are counted rather than shown, its other lines are passed on.
  let accessLines = 0;
  createInterface({ input: child.stderr! }).on("line", (line) => {
    if (line.includes('"message":"request"')) accessLines++;
    else process.stderr.write(`${line}\n`);
  });
  const ready = await new Promise<{ port: number; poolSize: number }>((resolve, reject) => {
    // A node flag may print to stdout before the server listens (--trace-deopt, --log-deopt): those lines are
    // passed on, and the first line that starts a JSON object is the server's.
    const lines = createInterface({ input: child.stdout! });
    let listening = false;
    lines.on("line", (line) => {
      if (listening || !line.startsWith("{")) {
        process.stderr.write(`${line}\n`);
        return;
      }
      listening = true;
      try {
        resolve(JSON.parse(line) as { port: number; poolSize: number });
      } catch {
        reject(new Error(`unexpected line from the server process: ${line}`));
      }
    });
    child.once("exit", (code) => reject(new Error(`the server process exited with ${code} before listening`)));
  });

  let peak = 0;
  let lifetimePeak = 0;
  const sample = () => {
    const rss = statusField(pid, "VmRSS");
    if (rss > peak) peak = rss;
    if (rss > lifetimePeak) lifetimePeak = rss;
  };
  const timer = setInterval(sample, 50);
  timer.unref();

  let exit: { code: number | null; signal: string | null } | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exit = { code, signal };
      clearInterval(timer);
      resolve();
    }),
  );
  return {
    pid,
    port: ready.port,
    poolSize: ready.poolSize,
    takePeakRssMb() {
      sample();
      const p = peak;
      peak = statusField(pid, "VmRSS");
      return p;
    },
    memory: () => ({ rssMb: statusField(pid, "VmRSS"), hwmMb: statusField(pid, "VmHWM") }),
    cpuMs: () => processStat(pid)?.ms ?? Number.NaN,
    eventLoop: () => threadSchedule(pid, pid),
    exit: () => exit,
    lifetimePeakRssMb: () => lifetimePeak,
    async waitIdle() {
      const deadline = Date.now() + 60_000;
      let last = processStat(pid)?.ms ?? 0;
      while (Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 300));
        const now = processStat(pid)?.ms ?? 0;
        if (now - last < 15) return;
        last = now;
      }
    },
    accessLines: () => accessLines,
    async scrapeMetrics() {
      const response = await fetch(`http://127.0.0.1:${ready.port}/metrics`);
      if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
      return response.text();
    },
    async stop() {
      clearInterval(timer);
      if (exit !== undefined) return;
      child.kill("SIGTERM");
      const timeout = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
