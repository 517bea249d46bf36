import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, type ExpectStatic } from "vitest";
import { usageExamples } from "../src/server/usage.ts";
import { codeBlocks, documentedUrl, matchOutput, shellExamples, type CodeBlock, type ShellExample } from "./support/readme-examples.ts";
import { testEngine } from "./support/database.ts";

// The README's examples, run as a reader pastes them, against `npm start`'s demo, with the output the README shows
// checked (see test/support/readme-examples.ts for how output is shown and abbreviated). A README edit that breaks
// an example, or a change of the service that makes one lie, fails here.
//
// One demo for every example: `npm start` on a free port, the README's 127.0.0.1:8080 rewritten to it in commands
// and back in output. Blocks run concurrently, the commands of a block one after another (a later one may use what
// an earlier one started or set). The live-stream examples resume after the demo's last recorded block, so the
// replayed blocks they show are the same whichever stream opened first.
//
// Skipped under TEST_DATABASE=pglite: the examples run against the embedded demo whatever TEST_DATABASE says, so CI's
// second pass would only run them again; the one block that needs a PostgreSQL server (the generator) needs the real
// one, which every other run has (CI's first pass must reach it, see test/support/database.ts).

const projectRoot = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const readme = await readFile(`${projectRoot}/README.md`, "utf8");
const blocks = codeBlocks(readme);
const engine = await testEngine();

/** The blocks the test does not run, by their first line: each README marker says why, here it is agreed to. */
const agreedNotRun = [
  "npm ci && npm start", // the test's own demo is this `npm start`, after the `npm ci` that CI and every reader ran
  "DATABASE_URL=postgres://reader:password@db-host:5432/ton_index npm start", // a placeholder host
  "CREATE ROLE tonquery LOGIN PASSWORD 'change-me' IN ROLE pg_read_all_data;", // roles are the server's, not a test database's
  "ports:", // a Kubernetes pod spec
  "DATABASE_URL=postgres://reader:password@primary:5432/ton_index \\", // placeholder hosts
  "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=tonquery npm start", // needs a collector; test/tracing.test.ts runs one
  "npm test", // the suite itself, which runs this test
];

/** The TypeScript blocks test/readme-client.test.ts type-checks and runs, by their marker. */
const clientMarkers = ["client:node", "client:browser"];

/** The README's address of the service, and of the database its generator example writes. */
const readmeBaseUrl = "127.0.0.1:8080";
const readmeGeneratedDatabase = "postgres://postgres@127.0.0.1:5432/tonquery_demo";

/** How long a command may run: the streams' first replayed block comes 3 s after the first stream opens. */
const commandTimeoutMs = 25_000;

interface Demo {
  child: ChildProcess;
  port: number;
  stderr: () => string;
}

function startDemo(): Promise<Demo> {
  const child = spawn("npm", ["start"], {
    cwd: projectRoot,
    // Without prestart's build: the suite has built dist/ (test/support/build.ts), and a second build would rewrite
    // it under the servers other files run from it.
    env: { ...commandEnv(), HOST: "127.0.0.1", PORT: "0", npm_config_ignore_scripts: "true" },
    detached: true,
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`the demo did not start in 50 s: ${err}`)), 50_000);
    const check = () => {
      const serving = /tonquery is serving .* on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (serving !== null && out.includes(`Health: curl`)) {
        clearTimeout(deadline);
        child.stdout?.off("data", check);
        resolve({ child, port: Number(serving[1]), stderr: () => err });
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => reject(new Error(`npm start exited with ${code}: ${err}`)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** The project's own bins first, as `npm ci` leaves them for `npx`: buf, and the pinned Node. */
function commandEnv(): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${projectRoot}/node_modules/.bin:${process.env.PATH ?? ""}` };
}

/** Stops a process and everything it started (npm start runs node under a shell). */
function stopGroup(child: ChildProcess): void {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

interface Run {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  /** Whether the test stopped it once its shown output was there (a stream, a server). */
  stopped: boolean;
}

/**
 * Runs `command` in the project's directory until it exits, or, when it is still running, until its output holds
 * everything `shown` promises of a command that does not end (the lines above a last `...`).
 */
function runCommand(command: string, shown: string[] | undefined, env: NodeJS.ProcessEnv, toReadme: (text: string) => string): Promise<Run> {
  const child = spawn("bash", ["-c", command], { cwd: projectRoot, env, detached: true });
  let stdout = "";
  let stderr = "";
  return new Promise((resolve) => {
    let stopped = false;
    const stop = () => {
      stopped = true;
      stopGroup(child);
    };
    const timer = setTimeout(stop, commandTimeoutMs);
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (shown !== undefined && shown.at(-1) === "..." && matchOutput(shown, toReadme(stdout), false).matched) stop();
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, exitCode: code, stopped });
    });
  });
}

/** An answer that is an error body: shown output must say so, else the example fails. */
function isErrorBody(stdout: string): boolean {
  try {
    const body = JSON.parse(stdout) as Record<string, unknown>;
    return typeof body === "object" && body !== null && ("error" in body || body.ok === false);
  } catch {
    return false;
  }
}

const firstLine = (block: CodeBlock) => block.lines.find((line) => line.trim() !== "")?.trim() ?? "";
const firstCommand = (block: CodeBlock) => shellExamples(block)[0]?.command.split("\n")[0] ?? "";
const notRunMarker = /^doc-test: not run: (.+)$/;

describe.skipIf(engine === "pglite")("the README's examples, run against npm start's demo", () => {
  let demo: Demo;
  let generatedDatabase: string;
  let rewriteCommand: (text: string) => string;
  let toReadme: (text: string) => string;
  let env: NodeJS.ProcessEnv;
  /** The port a command that starts its own server (the generator example) is given. */
  let secondPort: number;

  beforeAll(async () => {
    demo = await startDemo();
    secondPort = await freePort();
    const server = new URL(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    server.pathname = `/tonquery_doc_${process.pid}_${randomBytes(3).toString("hex")}`;
    generatedDatabase = server.toString();
    rewriteCommand = (text) => text.replaceAll(readmeBaseUrl, `127.0.0.1:${demo.port}`).replaceAll(readmeGeneratedDatabase, generatedDatabase);
    toReadme = (text) => text.replaceAll(`127.0.0.1:${demo.port}`, readmeBaseUrl).replaceAll(`127.0.0.1:${secondPort}`, readmeBaseUrl);
    env = { ...commandEnv(), HOST: "127.0.0.1", PORT: String(secondPort) };
  }, 60_000);

  afterAll(async () => {
    if (demo !== undefined) stopGroup(demo.child);
    if (generatedDatabase !== undefined) {
      const server = postgres(process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", { max: 1, onnotice: () => {} });
      await server.unsafe(`drop database if exists ${new URL(generatedDatabase).pathname.slice(1)} with (force)`);
      await server.end();
    }
  });

  it("runs every block or says why not", () => {
    const unexplained = blocks.filter((block) => {
      if (block.language === "sh" && block.marker === undefined) return false;
      if (block.language === "text" && documentedUrl(block) !== undefined) return false;
      if (block.language === "ts" && clientMarkers.includes(block.marker ?? "")) return false;
      if (block.language === "json" && block.marker === "doc-test: the access line of the command above") return false;
      return !notRunMarker.test(block.marker ?? "");
    });
    expect(unexplained.map((block) => `README line ${block.line}: a \`\`\`${block.language} block the test neither runs nor is told why`)).toEqual([]);
    const notRun = blocks.filter((block) => notRunMarker.test(block.marker ?? "")).map(firstLine);
    expect(notRun.sort()).toEqual([...agreedNotRun].sort());
  });

  it("shows every command the start-up banner prints (the README's Quick start is the banner, explained)", () => {
    const readmeCommands = new Set(
      blocks.filter((block) => block.language === "sh").flatMap((block) => shellExamples(block).map((example) => example.command.replace(/\s*\\\n\s*/g, " "))),
    );
    const bannerCommands = usageExamples(`http://${readmeBaseUrl}`, true)
      .split("\n")
      .map((line) => line.trim().replace(/^Health: /, ""))
      .filter((line) => line.startsWith("curl ") || line.startsWith("npx "))
      .map((line) => line.replace(/^npx --prefix \S+ buf/, "npx buf"));
    expect(bannerCommands.filter((command) => !readmeCommands.has(command))).toEqual([]);
  });

  // The demo adds replayed blocks from its first stream on, and with them traces: the examples that show sizes and
  // ETags of trace pages describe the demo as `npm start` leaves it, so every block that opens no stream runs first.
  const shellBlocks = blocks.filter((block) => block.language === "sh" && block.marker === undefined);
  const opensStream = (block: CodeBlock) => shellExamples(block).some((example) => /streaming\/v2|StreamTraces/.test(example.command));
  let quietBlocksLeft = shellBlocks.filter((block) => !opensStream(block)).length;
  let quietBlocksDone: () => void = () => {};
  const quietBlocksRan = new Promise<void>((resolve) => (quietBlocksDone = resolve));
  if (quietBlocksLeft === 0) quietBlocksDone();
  // Registered quiet blocks first: concurrent tests start in that order, a few at a time, so a stream block can never
  // hold a slot that a quiet block it waits for needs.
  for (const block of [...shellBlocks.filter((b) => !opensStream(b)), ...shellBlocks.filter(opensStream)]) {
    const examples = shellExamples(block);
    it.concurrent(`README line ${block.line}: ${examples.length} command(s), ${firstCommand(block).slice(0, 70)}`, async ({ expect }) => {
      if (opensStream(block)) await quietBlocksRan;
      else
        onTestFinished(() => {
          if (--quietBlocksLeft === 0) quietBlocksDone();
        });
      // A command that only sets a variable is run again in front of each later command of its block.
      const assignments: string[] = [];
      for (const example of examples) {
        if (/^\w+=\$\(/.test(example.command)) {
          assignments.push(example.command);
          continue;
        }
        await checkExample(expect, example, [...assignments, example.command].join("\n"));
      }
    }, 150_000);
  }

  /** Soft expectations: every command of a block is run and reported, not only the first that fails. */
  async function checkExample(expect: ExpectStatic, example: ShellExample, script: string): Promise<void> {
    const run = await runCommand(rewriteCommand(script), example.output, env, toReadme);
    const output = toReadme(run.stdout);
    const where = `README line ${example.line}:\n${example.command}\nstdout:\n${output.slice(0, 2000)}\nstderr:\n${run.stderr.slice(0, 2000)}`;
    if (example.output === undefined) {
      expect.soft(run.stopped, `${where}\nran longer than ${commandTimeoutMs} ms: show the output it starts with, ending in a "..." line`).toBe(false);
      expect.soft(run.exitCode, where).toBe(0);
      expect.soft(output.trim(), `${where}\nprinted nothing`).not.toBe("");
      expect.soft(isErrorBody(output), `${where}\nanswered an error: show it`).toBe(false);
      return;
    }
    if (!run.stopped) expect.soft(run.exitCode, where).toBe(0);
    const match = matchOutput(example.output, output, !run.stopped);
    expect.soft(match.matched ? "" : match.reason, where).toBe("");
  }

  for (const block of blocks.filter((b) => b.language === "text" && documentedUrl(b) !== undefined)) {
    it.concurrent(`README line ${block.line}: ${documentedUrl(block)} opens`, async () => {
      const response = await fetch(rewriteCommand(documentedUrl(block) as string));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    });
  }

  for (const block of blocks.filter((b) => b.language === "json" && b.marker === "doc-test: the access line of the command above")) {
    it.concurrent(`README line ${block.line}: the access line is written as shown`, async () => {
      const shown = JSON.parse(block.lines.join("\n")) as Record<string, unknown>;
      // Written once the request of the block above has run; the time and duration are the moment's.
      const deadline = Date.now() + 30_000;
      let written: Record<string, unknown> | undefined;
      while (written === undefined && Date.now() < deadline) {
        written = demo
          .stderr()
          .split("\n")
          .filter((line) => line.includes(`"request_id":"${String(shown.request_id)}"`))
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .at(0);
        if (written === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(written, `no access line with request_id ${String(shown.request_id)}`).toBeDefined();
      const { time: _shownTime, duration_ms: _shownDuration, ...stable } = shown;
      expect(Object.keys(written ?? {})).toEqual(Object.keys(shown));
      expect(written).toMatchObject(stable);
      expect(typeof written?.duration_ms).toBe("number");
    });
  }
});
