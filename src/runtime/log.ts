// One JSON line per event on stderr: readable by people, parseable by log shippers. A line written while a request
// is served carries that request's id (request_id), so every error of a request can be found from its access line.

import { currentRequest } from "../observability/request-context.ts";

type Fields = Record<string, unknown>;

export const logLevels = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof logLevels)[number];

const rank: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
let threshold = rank.info;

/** Lines below `level` are dropped from now on. */
export function setLogLevel(level: LogLevel): void {
  threshold = rank[level];
}

function write(level: LogLevel, message: string, fields: Fields): void {
  if (rank[level] < threshold) return;
  const requestId = currentRequest()?.id;
  const line: Fields = requestId === undefined ? { time: new Date().toISOString(), level, message, ...fields } : { time: new Date().toISOString(), level, message, request_id: requestId, ...fields };
  // A replacer takes JSON.stringify off its fast path: only a line that carries an error needs one (an access line never does).
  emit(`${hasError(fields) ? JSON.stringify(line, errorsDescribed) : JSON.stringify(line)}\n`);
}

function hasError(value: unknown): boolean {
  if (value instanceof Error) return true;
  if (typeof value !== "object" || value === null) return false;
  for (const key in value) if (hasError((value as Record<string, unknown>)[key])) return true;
  return false;
}

function errorsDescribed(_key: string, value: unknown): unknown {
  return value instanceof Error ? describeError(value) : value;
}

// Lines are written in batches, once per turn of the event loop: at thousands of requests per second one write per
// access line (a system call each, stderr being synchronous for pipes and files) cost more than building the line.
// No line waits past the turn it was logged in, and the process's exit writes out what is left.
let pending = "";
let flushScheduled = false;

function emit(text: string): void {
  pending += text;
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flush);
}

function flush(): void {
  flushScheduled = false;
  if (pending === "") return;
  const text = pending;
  pending = "";
  process.stderr.write(text);
}

process.on("exit", flush);

function describeError(err: Error): Fields {
  const out: Fields = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (err.cause !== undefined) out.cause = err.cause instanceof Error ? describeError(err.cause) : err.cause;
  return out;
}

export const log = {
  /** Whether lines of `level` are written: lets a caller skip building fields nobody will read. */
  enabled: (level: LogLevel) => rank[level] >= threshold,
  debug: (message: string, fields: Fields = {}) => write("debug", message, fields),
  info: (message: string, fields: Fields = {}) => write("info", message, fields),
  warn: (message: string, fields: Fields = {}) => write("warn", message, fields),
  error: (message: string, fields: Fields = {}) => write("error", message, fields),
};
