import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { tmpdir } from "node:os";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoRecordings, readRecording } from "../src/demo/dataset.ts";
import type { RecordedMasterchainInfo } from "../src/recordings/recorded.ts";
import { demoJettonTransferHex } from "../src/server/usage.ts";
import postgres from "postgres";
import { startDemoDatabase } from "../src/embedded/pglite.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";

// What a newcomer does: `npm start`, then paste the commands it prints. `npm start` builds the service into dist/
// and runs that; this file runs the build the suite made (test/support/build.ts), and so also finds out that the
// build reads the project's files (the schema, the demo's recordings, the TL-B schema) from where they are.

const projectRoot = new URL("..", import.meta.url).pathname;
const run = promisify(execFile);

interface Started {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function start(env: Record<string, string>, args: string[] = []): Started {
  const child = spawn(process.execPath, ["dist/src/main.js", ...args], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", HOST: "127.0.0.1", PORT: "0", ...env },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function waitFor(started: Started, text: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!started.stdout().includes(text)) {
    if (started.child.exitCode !== null) throw new Error(`exited early: ${started.stderr()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for "${text}"; stderr: ${started.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs a streaming command as pasted until its output holds `marker` (or 30 s), then stops it; returns the output. */
async function firstOutput(command: string, marker: string): Promise<string> {
  const child = spawn("sh", ["-c", `exec ${command}`], {
    cwd: tmpdir(),
    env: { ...process.env, PATH: `${projectRoot}node_modules/.bin:${process.env.PATH ?? ""}` },
  });
  let out = "";
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 30_000);
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(marker)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  child.kill("SIGTERM");
  return out;
}

/** The printed command lines, continuation-free, in order. */
function printedCommands(stdout: string): string[] {
  return stdout
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("curl ") || /^npx --prefix \S+ buf curl /.test(line) || line.startsWith("Health: curl "));
}

describe("npm start with no DATABASE_URL", () => {
  let started: Started;
  let recording: RecordedMasterchainInfo;

  beforeAll(async () => {
    recording = await readRecording<RecordedMasterchainInfo>(demoRecordings.masterchainInfo);
    started = start({});
    await waitFor(started, "Health: curl");
  });
  afterAll(async () => {
    if (started.child.exitCode === null) started.child.kill("SIGKILL");
  });

  it("prints a REST, a Connect, a gRPC and a gRPC-web command", () => {
    const commands = printedCommands(started.stdout());
    expect(commands.some((c) => c.startsWith("curl http") && c.endsWith("/api/v3/masterchainInfo"))).toBe(true);
    expect(commands.some((c) => c.includes("/api/v3/adjacentTransactions?hash="))).toBe(true);
    expect(commands.some((c) => c.startsWith("curl -H 'content-type: application/json' -d '{}'"))).toBe(true);
    expect(commands.some((c) => c.includes("--protocol grpc --http2-prior-knowledge"))).toBe(true);
    expect(commands.some((c) => c.includes("--protocol grpcweb"))).toBe(true);
  });

  it("answers every printed command, run as pasted in a shell in another directory", async () => {
    const commands = printedCommands(started.stdout());
    expect(commands.length).toBe(19);
    for (const line of commands) {
      const command = line.replace(/^Health: /, "");
      if (/streaming\/v2\/sse|StreamTraces/.test(command)) {
        // A live stream never ends by itself: read until its first block, as someone watching it would.
        const marker = command.includes("StreamTraces") ? '"position"' : "event: event";
        expect(await firstOutput(command, marker), command).toContain(marker);
        continue;
      }
      const { stdout } = await run("sh", ["-c", command], {
        cwd: tmpdir(),
        env: { ...process.env, PATH: `${projectRoot}node_modules/.bin:${process.env.PATH ?? ""}` },
      });
      const body = JSON.parse(stdout) as Record<string, unknown>;
      if (command.includes("/readyz")) {
        expect(body).toEqual({ status: "ok" });
      } else if (command.includes("/api/v3/masterchainInfo")) {
        expect(body).toEqual(recording);
      } else if (command.includes("getBlockTransactionsExt")) {
        expect(body).toMatchObject({ ok: true, result: { req_count: 2, incomplete: true } });
      } else if (command.includes("GetBlockTransactionsExt")) {
        expect((body.transactions as unknown[]).length, command).toBe(3);
      } else if (/\/api\/v3\/traces|GetTraces/.test(command)) {
        const traces = body.traces as { trace_id?: string; traceId?: string }[];
        expect(traces.length, command).toBeGreaterThan(0);
      } else if (command.includes(demoJettonTransferHex)) {
        // The USDT transfer's child was received through a message decoded as a jetton transfer.
        const [child] = body.transactions as { in_msg: { decoded_opcode: string; message_content: { decoded: Record<string, unknown> } } }[];
        expect(child?.in_msg.decoded_opcode).toBe("jetton_transfer");
        expect(child?.in_msg.message_content.decoded).toMatchObject({ "@type": "jetton_transfer", amount: { "@type": "var_uint" } });
      } else if (/adjacentTransactions|GetAdjacentTransactions/i.test(command)) {
        const transactions = body.transactions as { hash: string }[];
        expect(transactions.length, command).toBeGreaterThan(0);
      } else {
        const info = body as { first: { seqno: number }; last: { seqno: number } };
        expect([info.first.seqno, info.last.seqno], command).toEqual([recording.first.seqno, recording.last.seqno]);
      }
    }
  });

  it("stops cleanly on SIGTERM", async () => {
    started.child.kill("SIGTERM");
    expect(await started.exited).toBe(0);
    expect(started.stderr()).toContain('"message":"shutting down"');
  });
});

describe("npm start against a database", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("serves it and says where, without the password", async () => {
    const url = new URL(db.url);
    url.password = "secret";
    const started = start({ DATABASE_URL: url.toString() });
    try {
      await waitFor(started, "Health: curl");
      expect(started.stderr()).not.toContain("secret");
      expect(started.stdout()).not.toContain("demo dataset");
    } finally {
      started.child.kill("SIGTERM");
      await started.exited;
    }
  });

  it("refuses an unsupported schema version with a clear message", async () => {
    await db.admin`update ton_db_version set minor = 3, patch = 0`;
    const started = start({ DATABASE_URL: db.url });
    expect(await started.exited).toBe(1);
    expect(started.stderr()).toContain("unsupported ton-index-worker schema 1.3.0: tonquery reads schema 1.2.x");
    await db.admin`update ton_db_version set minor = 2, patch = 10`;
  });
});

describe("npm start --help", () => {
  it("documents the configuration and exits", async () => {
    const started = start({}, ["--help"]);
    expect(await started.exited).toBe(0);
    expect(started.stdout()).toContain("DATABASE_URL");
    expect(started.stdout()).toContain("STATEMENT_TIMEOUT_MS");
  });

  it("refuses a bad setting with exit code 2", async () => {
    const started = start({ PORT: "abc" });
    expect(await started.exited).toBe(2);
    expect(started.stderr()).toContain("PORT must be a whole number");
  });
});

describe("the embedded demo database", () => {
  it("holds the demo data and refuses writes from any connection", async () => {
    const embedded = await startDemoDatabase(2);
    const client = postgres(embedded.url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await client`select count(*)::int as n from transactions`;
      expect(row?.n).toBeGreaterThan(250);
      const failure = await client`insert into marketplace_names values ('0:00', 'x')`.catch((err: unknown) => err);
      expect((failure as { code?: string }).code).toBe("25006");
    } finally {
      await client.end();
      await embedded.close();
    }
  });
});
