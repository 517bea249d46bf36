// The server's on-CPU samples over a run's measured phase, taken by Linux perf (`npm run bench -- --perf DIR`).
//
// V8's own profiler (--cpu-prof) samples the event loop thread by the clock: it leaves out the collector's helper
// threads (a quarter of the server's CPU at concurrency 16) and counts as busy the time the thread spends descheduled
// inside a system call. Writing a statement to PostgreSQL over loopback wakes a backend that often takes the core at
// once, and the V8 profile of a hot 100-trace page put 10 % of its samples in that one write (`writeBuffer`), which
// /proc's schedstat shows as waiting for a core, not running. perf's cpu-clock event samples every thread of the
// process only while it runs, kernel time included; the server then runs with --perf-basic-prof-only-functions so
// that its JavaScript frames have names. bench/profile-summary.ts reads what this writes.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * Node flags that make V8 write /tmp/perf-<pid>.map, naming the JIT's functions for perf, and give interpreted
 * functions frames of their own (else they all show as the interpreter's entry).
 */
export const perfNodeFlags = ["--perf-basic-prof-only-functions", "--interpreted-frames-native-stack"];

/** Why perf cannot record here, or undefined when it can. */
export function perfUnavailable(): string | undefined {
  const probe = spawnSync("perf", ["record", "-e", "cpu-clock", "-o", "/dev/null", "-q", "--", "true"], { encoding: "utf8" });
  if (probe.error !== undefined) return `perf is not installed (${probe.error.message})`;
  if (probe.status !== 0) return `perf cannot record (${probe.stderr.trim().split("\n")[0] ?? `exit ${probe.status}`}): run as root or lower kernel.perf_event_paranoid`;
  return undefined;
}

/** A recording of one process, from start() until stop() writes `<file>.txt` (perf script: thread, then its stack). */
export function perfRecorder(pid: number, file: string) {
  let recording: ChildProcess | undefined;
  const data = `${file}.data`;
  return {
    start(): void {
      recording = spawn("perf", ["record", "-e", "cpu-clock", "-F", "999", "-g", "-q", "-p", String(pid), "-o", data], { stdio: "ignore" });
    },
    /** Ends the recording at once; the promise settles once its samples are written out. */
    stop(): Promise<void> {
      const child = recording;
      if (child === undefined) return Promise.resolve();
      recording = undefined;
      const ended = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      return ended.then(() => writeScript(data, file));
    },
  };
}

/** perf's binary recording as text (perf script resolves JIT frames through /tmp/perf-<pid>.map), then dropped. */
async function writeScript(data: string, file: string): Promise<void> {
  const script = spawn("perf", ["script", "-i", data, "-F", "comm,tid,ip,sym,dso"], { stdio: ["ignore", "pipe", "ignore"] });
  const out = createWriteStream(`${file}.txt`);
  script.stdout.pipe(out);
  await new Promise<void>((resolve) => out.once("finish", () => resolve()));
  await rm(data, { force: true });
}

/** Where a run's samples go: one file per (case, protocol, concurrency). */
export function perfFile(dir: string, run: { case: string; protocol: string; concurrency: number }): string {
  return join(dir, `${run.case}.${run.protocol}.c${run.concurrency}`);
}
