import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// The README's TypeScript clients, exactly as printed there: type-checked with the project's compiler settings and
// run against a real server, so the README cannot drift from the generated code or the service.

const projectRoot = new URL("..", import.meta.url).pathname;
const run = promisify(execFile);
/** The address the README's snippets call; the test points them at its own server instead. */
const readmeBaseUrl = "http://127.0.0.1:8080";

async function snippet(name: string): Promise<string> {
  const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
  const match = new RegExp(`<!-- client:${name} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\`\\n`).exec(readme);
  if (match?.[1] === undefined) throw new Error(`README.md has no \`\`\`ts block after <!-- client:${name} -->`);
  expect(match[1]).toContain(readmeBaseUrl);
  return match[1];
}

/**
 * `npx node client.ts` from the project's root, as the README says: the project's Node 24 (the machine's own `node`
 * may be one that refuses a .ts file), which npx finds in node_modules/.bin whatever the PATH.
 */
function runAsDocumented(file: string) {
  return run("npx", ["node", file], { cwd: projectRoot });
}

let db: TestDatabase;
let server: TestServer;
/** The snippets as files at the project's root, where their `./gen/...` imports resolve. */
const written: string[] = [];
async function writeSnippet(name: string, baseUrl: string): Promise<string> {
  const file = `${projectRoot}.readme-client-${name}-${randomBytes(4).toString("hex")}.ts`;
  written.push(file);
  await writeFile(file, (await snippet(name)).replaceAll(readmeBaseUrl, baseUrl));
  return file;
}

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  server = await startTestServer(db.url);
});
afterAll(async () => {
  await Promise.all(written.map((file) => rm(file, { force: true })));
  await server?.close();
  await db?.drop();
});

describe("the README's TypeScript clients", () => {
  it("type-check with the project's settings", async () => {
    const files = [await writeSnippet("node", readmeBaseUrl), await writeSnippet("browser", readmeBaseUrl)];
    const config = ts.getParsedCommandLineOfConfigFile(`${projectRoot}tsconfig.json`, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    if (config === undefined) throw new Error("tsconfig.json does not parse");
    const program = ts.createProgram(files, config.options);
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(problems).toEqual([]);
  });

  it("Node: Connect over HTTP/2 prints the masterchain range, a trace and a NOT_FOUND", async () => {
    const { stdout } = await runAsDocumented(await writeSnippet("node", server.baseUrl));

    const info = await server.client("grpc").getMasterchainInfo({});
    const { traces } = await server.client("grpc").getTraces({ txHash: ["79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f"], includeActions: true });
    expect(traces.length).toBe(1);
    expect(stdout.trim().split("\n")).toEqual([
      `masterchain blocks ${info.first?.seqno} to ${info.last?.seqno}`,
      ...traces.map((trace) => `trace ${trace.traceId}: ${trace.transactions.length} transactions, actions ${trace.actions.map((action) => action.type).join(", ")}`),
      "not found: adjacent transactions not found",
    ]);
  });

  it("browser: gRPC-web over fetch prints the last masterchain block (run in Node, which has fetch too)", async () => {
    const { stdout } = await runAsDocumented(await writeSnippet("browser", server.baseUrl));
    const info = await server.client("grpc").getMasterchainInfo({});
    expect(stdout.trim()).toBe(`last indexed masterchain block: ${info.last?.seqno}`);
  });
});
