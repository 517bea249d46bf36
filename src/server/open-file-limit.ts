import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/**
 * The process's limit on open file descriptors (RLIMIT_NOFILE's soft limit, which Node raises to the hard limit at
 * start-up); undefined when it is unlimited or cannot be read. Node has no getrlimit: Linux tells it in
 * /proc/self/limits, elsewhere a shell inherits the limit and `ulimit -n` prints it.
 */
export function openFileLimit(): number | undefined {
  try {
    return parseProcLimits(readFileSync("/proc/self/limits", "utf8"));
  } catch {
    // not Linux
  }
  try {
    return parseLimit(execFileSync("/bin/sh", ["-c", "ulimit -n"], { encoding: "utf8", timeout: 2000 }).trim());
  } catch {
    return undefined;
  }
}

/** The soft limit of the "Max open files" row of a /proc/<pid>/limits text. */
export function parseProcLimits(text: string): number | undefined {
  const row = /^Max open files\s+(\S+)/m.exec(text);
  if (row === null) throw new Error("no Max open files row in /proc/self/limits");
  return parseLimit(row[1] as string);
}

function parseLimit(value: string): number | undefined {
  if (value === "unlimited") return undefined;
  if (!/^\d+$/.test(value)) throw new Error(`not a descriptor limit: ${value}`);
  return Number(value);
}
