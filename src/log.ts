// One JSON line per event on stderr: readable by people, parseable by log shippers.

type Fields = Record<string, unknown>;

function write(level: "info" | "warn" | "error", message: string, fields: Fields): void {
  const line: Fields = { time: new Date().toISOString(), level, message, ...fields };
  process.stderr.write(`${JSON.stringify(line, (_key, value: unknown) => (value instanceof Error ? describeError(value) : value))}\n`);
}

function describeError(err: Error): Fields {
  const out: Fields = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (err.cause !== undefined) out.cause = err.cause instanceof Error ? describeError(err.cause) : err.cause;
  return out;
}

export const log = {
  info: (message: string, fields: Fields = {}) => write("info", message, fields),
  warn: (message: string, fields: Fields = {}) => write("warn", message, fields),
  error: (message: string, fields: Fields = {}) => write("error", message, fields),
};
