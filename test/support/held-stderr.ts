import { afterAll, beforeEach } from "vitest";

// Every test file's own stderr (the service's JSON log lines above all) is held, not printed: the fault tests
// provoke error lines on purpose (a database that refuses connections, a statement that times out), and a passing
// run printed 19 of them, which read like failures. A test's lines are printed when that test fails, next to its
// failure; lines written outside any test (a beforeAll, a server's shutdown) when any test of the file failed.
// Tests that read the log themselves (test/access-log.test.ts) replace process.stderr.write over this and restore it.

const writeToStderr = process.stderr.write.bind(process.stderr);
const outsideTests: string[] = [];
let held: string[] = outsideTests;
let anyTestFailed = false;

process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  held.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString());
  const callback = rest.find((arg) => typeof arg === "function") as ((err?: Error | null) => void) | undefined;
  if (callback !== undefined) queueMicrotask(() => callback());
  return true;
}) as typeof process.stderr.write;

beforeEach(({ onTestFailed, onTestFinished }) => {
  const mine: string[] = [];
  held = mine;
  onTestFailed(() => {
    anyTestFailed = true;
    if (mine.length > 0) writeToStderr(`--- what the failed test wrote to stderr ---\n${mine.join("")}`);
  });
  onTestFinished(() => {
    held = outsideTests;
  });
});

afterAll(() => {
  if (anyTestFailed && outsideTests.length > 0) writeToStderr(`--- written to stderr outside any test ---\n${outsideTests.join("")}`);
});
