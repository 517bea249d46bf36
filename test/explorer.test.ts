import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Trace } from "../gen/tonquery/v1/trace_pb.ts";
import type { GetTracesResponse } from "../gen/tonquery/v1/service_pb.ts";
import { Names, ton } from "../explorer/src/format.ts";
import { actionPhrase, phraseText } from "../explorer/src/sentences.ts";
import { messageType, transactionOutcome } from "../explorer/src/summary.ts";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { demoJettonTransferHex, usageExamples } from "../src/server/usage.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { decodedBody, rawRequest } from "./support/raw-http.ts";
import { rawHttp } from "./support/raw-rpc.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// The trace explorer (/explorer) in a real browser: Debian's Chromium driven by playwright-core, against the demo's
// recorded traces plus generated ones (a 1000-transaction trace, an account with more traces than a page). What the
// page draws is checked against what the typed API answers for the same trace, written by the page's own rules
// (explorer/src/format.ts, sentences.ts, summary.ts).

const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);
const chromiumFlags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const hexToBase64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");
const base64ToHex = (base64: string) => Buffer.from(base64, "base64").toString("hex");
const base64url = (base64: string) => Buffer.from(base64, "base64").toString("base64url");
const hashOf = (text: string) => createHash("sha256").update(text).digest("base64");

/** The demo's USDT transfer: the wallet's transaction (root, and so the trace id) and the message it sent the jetton wallet. */
const usdt = {
  rootTx: hexToBase64(demoJettonTransferHex),
  walletToJettonWallet: "Mqzjz0DqO++8i7g4CiJrq49YKpwmI0+VKhEK+LRVyPU=",
  jettonWalletTx: "3BXRPvM5k0P7Yi88h6Y3zCn6NjF0A7gMBodvcJsls6M=",
  external: "Bipiu5Wd8Z87Vz1d8jVXTXPPRJbsT4ydVT2TWrMgmqg=",
};
/** A recorded swap of 19 transactions and four actions (fixtures/toncenter/traces_mainnet_swapCoffee_usdtSwapBuild2Split_mtw.json). */
const swapTraceId = "7VQkh2PR9p2C/snZ6nPCHkFcDC2HRb+6KcKutxR2tIc=";
/** A failed NFT transfer: an aborted transaction (exit code 413) and its bounced message (fixtures/toncenter/traces_mainnet_failedNftTransfer_mtw.json). */
const failedTransferTx = "s0cLqMif/nCuZTyG5pvsq3rLd9uVMWeNQG0Mm7HI9Qo=";

// Generated data beside the demo's.
const bigTraceSize = 1000;
const bigFanOut = 600;
const busyAccount = `0:${createHash("sha256").update("explorer busy account").digest("hex").toUpperCase()}`;
const busyTraceCount = 27;

interface GeneratedTx {
  hash: string;
  lt: bigint;
  account: string;
  parent: GeneratedTx | undefined;
  inMsg: string;
}

/**
 * One trace of 1000 transactions: the root sent 600 messages (a wide fan-out, past the page's per-node cap), and the
 * first child's transaction starts a chain of 399 (deep, past any budget). The root came from an external message.
 */
function bigTrace(): { id: string; txs: GeneratedTx[] } {
  const txs: GeneratedTx[] = [];
  let lt = 900_000_000n;
  const account = (i: number) => `0:${createHash("sha256").update(`explorer big ${i % 40}`).digest("hex").toUpperCase()}`;
  const add = (parent: GeneratedTx | undefined) => {
    const i = txs.length;
    lt += 2n;
    const tx = { hash: hashOf(`big tx ${i}`), lt, account: account(i), parent, inMsg: hashOf(`big msg ${i}`) };
    txs.push(tx);
    return tx;
  };
  const root = add(undefined);
  const children = Array.from({ length: bigFanOut }, () => add(root));
  let chain = children[0] as GeneratedTx;
  while (txs.length < bigTraceSize) chain = add(chain);
  return { id: root.hash, txs };
}

async function insertTraces(db: TestDatabase, traces: Array<{ id: string; txs: GeneratedTx[] }>): Promise<void> {
  const sql = db.admin;
  const transactions = traces.flatMap((trace) =>
    trace.txs.map((tx) => ({ account: tx.account, hash: tx.hash, lt: String(tx.lt), trace_id: trace.id, now: 1_760_000_000 + Number(tx.lt % 100_000n), aborted: false, descr: "ord" })),
  );
  const messages = traces.flatMap((trace) =>
    trace.txs.flatMap((tx) => {
      const message = { msg_hash: tx.inMsg, trace_id: trace.id, source: tx.parent?.account ?? null, destination: tx.account, value: tx.parent === undefined ? null : "1000000", created_lt: tx.parent === undefined ? null : String(tx.lt - 1n) };
      return [
        { ...message, tx_hash: tx.hash, tx_lt: String(tx.lt), direction: "in" },
        ...(tx.parent === undefined ? [] : [{ ...message, tx_hash: tx.parent.hash, tx_lt: String(tx.parent.lt), direction: "out" }]),
      ];
    }),
  );
  const traceRows = traces.map((trace) => ({
    trace_id: trace.id,
    external_hash: (trace.txs[0] as GeneratedTx).inMsg,
    start_lt: String(trace.txs[0]?.lt),
    end_lt: String(trace.txs[trace.txs.length - 1]?.lt),
    start_utime: 1_760_000_000,
    end_utime: 1_760_000_000 + trace.txs.length,
    state: "complete",
    nodes_: trace.txs.length,
    edges_: trace.txs.length - 1,
    pending_edges_: 0,
  }));
  for (let i = 0; i < transactions.length; i += 500) await sql`insert into transactions ${sql(transactions.slice(i, i + 500))}`;
  for (let i = 0; i < messages.length; i += 500) await sql`insert into messages ${sql(messages.slice(i, i + 500))}`;
  await sql`insert into traces ${sql(traceRows)}`;
}

/** Traces of one transaction each, all of `busyAccount`: more than a page of the account view. */
function busyTraces(): Array<{ id: string; txs: GeneratedTx[] }> {
  return Array.from({ length: busyTraceCount }, (_, i) => {
    const hash = hashOf(`busy tx ${i}`);
    return { id: hash, txs: [{ hash, lt: 800_000_000n + BigInt(i) * 10n, account: busyAccount, parent: undefined, inMsg: hashOf(`busy msg ${i}`) }] };
  });
}

/** A trace whose id is no transaction's hash (the id of a trace whose root the index lacks): found by the id alone. */
const detached = { id: hashOf("explorer detached trace"), txs: [{ hash: hashOf("detached tx"), lt: 700_000_000n, account: busyAccount.replace(/^0:../, "0:DE"), parent: undefined, inMsg: hashOf("detached msg") }] };

const undelivered = hashOf("detached undelivered message");

/** An account that gains a trace while its view is open (the live test): one trace before, one in a new block. */
const liveAccount = `0:${createHash("sha256").update("explorer live account").digest("hex").toUpperCase()}`;
const liveTrace = (name: string, lt: bigint) => {
  const hash = hashOf(`live tx ${name}`);
  return { id: hash, txs: [{ hash, lt, account: liveAccount, parent: undefined, inMsg: hashOf(`live msg ${name}`) }] };
};

/**
 * Appends masterchain block `seqno` completing `trace` the way the worker leaves it (classified, mc_seqno_end set),
 * the trace first and the block last: a stream reads a block's traces once it sees the block.
 */
async function appendBlock(seqno: number, trace: { id: string; txs: GeneratedTx[] }): Promise<void> {
  await insertTraces(db, [trace]);
  await db.admin`update traces set mc_seqno_start = ${seqno}, mc_seqno_end = ${seqno}, classification_state = 'ok' where trace_id = ${trace.id}`;
  const mcShard = "-9223372036854775808";
  await db.admin`insert into blocks ${db.admin({ workchain: -1, shard: mcShard, seqno, root_hash: hashOf(`live block ${seqno}`), file_hash: hashOf(`live block file ${seqno}`), mc_block_workchain: -1, mc_block_shard: mcShard, mc_block_seqno: seqno, gen_utime: Math.floor(Date.now() / 1000), start_lt: "0", end_lt: "0", tx_count: 1 })}`;
}

let db: TestDatabase;
let server: TestServer;
let browser: Browser | undefined;
let big: { id: string; txs: GeneratedTx[] };

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  big = bigTrace();
  await insertTraces(db, [big, ...busyTraces(), detached]);
  // A message the detached trace's transaction sent that no transaction has received (yet, once the trace is pending).
  const sender = detached.txs[0] as GeneratedTx;
  await db.admin`insert into messages ${db.admin({ tx_hash: sender.hash, tx_lt: String(sender.lt), msg_hash: undelivered, direction: "out", trace_id: detached.id, source: sender.account, destination: busyAccount, value: "5000000", created_lt: String(sender.lt + 1n) })}`;
  server = await startTestServer(db.url);
  if (hasChromium) browser = await chromium.launch({ executablePath: chromiumPath, args: chromiumFlags });
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await db?.drop();
});

/** What the page did that it should not: errors, failed requests, and any request to another origin or a REST path. */
interface Watched {
  page: Page;
  problems: string[];
  requests: string[];
}

/** A fresh page in the shared browser, watched. In CI a missing browser fails the test; elsewhere it is skipped. */
async function openPage(skip: (condition: boolean, note: string) => void): Promise<Watched> {
  if (!hasChromium && process.env.CI) throw new Error(`CI: no Chromium at ${chromiumPath}; .ci/run should have installed Debian's chromium package`);
  if (!hasChromium) console.warn(`skipping an explorer browser test: no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);
  skip(!hasChromium, `no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);
  const page = await (browser as Browser).newPage({ viewport: { width: 1500, height: 950 } });
  // A step that does not happen fails the test at that step, well within the test's own timeout.
  page.setDefaultTimeout(8000);
  const watched: Watched = { page, problems: [], requests: [] };
  page.on("request", (request) => watched.requests.push(`${request.method()} ${request.url()} ${request.headers()["content-type"] ?? ""}`));
  page.on("console", (message) => {
    if (message.type() === "error") watched.problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => watched.problems.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) => {
    // The page cancels the request of a view it leaves (a search typed while the first page loads): that is no failure.
    if (request.failure()?.errorText !== "net::ERR_ABORTED") watched.problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ""}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) watched.problems.push(`${response.status()} ${response.url()}`);
  });
  return watched;
}

/** Only this origin's page, its assets and the typed API over gRPC-web; nothing went wrong. */
async function closeClean(watched: Watched, baseUrl = server.baseUrl): Promise<void> {
  await watched.page.close();
  const origin = new URL(baseUrl).origin;
  for (const request of watched.requests) {
    const [method, url, type] = request.split(" ") as [string, string, string];
    expect(new URL(url).origin, request).toBe(origin);
    const path = new URL(url).pathname;
    if (path.startsWith("/tonquery.v1.TonQueryService/")) expect([method, type], request).toEqual(["POST", "application/grpc-web+proto"]);
    else expect(path, request).toMatch(/^\/explorer(\/assets\/(explorer\.js|explorer\.css|favicon\.svg))?$/);
  }
  expect(watched.problems).toEqual([]);
}

async function traceAnswer(query: { traceId?: string[]; txHash?: string[] }): Promise<{ answer: GetTracesResponse; trace: Trace; names: Names }> {
  const answer = await server.client("grpc-web").getTraces({ ...query, includeActions: true, limit: 1 });
  const trace = answer.traces[0] as Trace;
  expect(trace, JSON.stringify(query)).toBeDefined();
  return { answer, trace, names: new Names(answer.addressBook, answer.metadata) };
}

const drawnTree = "svg.tree [data-tx]";

async function openTrace(page: Page, query: string): Promise<void> {
  await page.goto(`${server.baseUrl}/explorer?${query}`);
  await page.waitForSelector(drawnTree);
}

describe("/explorer's files", () => {
  it("are served from this server with a strict CSP; other methods and other paths are refused", async () => {
    const page = await fetch(`${server.baseUrl}/explorer`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain("unsafe");
    const html = await page.text();
    const linked = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(linked.map((url) => url.replace(/\?v=.*/, ""))).toEqual(["explorer/assets/favicon.svg", "explorer/assets/explorer.css", "explorer/assets/explorer.js"]);
    for (const url of linked) {
      const asset = await fetch(new URL(url, `${server.baseUrl}/explorer`));
      expect(asset.status, url).toBe(200);
      expect((await asset.arrayBuffer()).byteLength, url).toBeGreaterThan(100);
      if (url.includes("?v=")) expect(asset.headers.get("cache-control"), url).toBe("public, max-age=604800");
    }
    // The script compressed as asked, the same bytes once decoded.
    const script = linked.find((url) => url.includes("explorer.js")) as string;
    const plain = await rawRequest(server.baseUrl, `/${script}`, { "accept-encoding": "identity" });
    for (const coding of ["br", "gzip"]) {
      const coded = await rawRequest(server.baseUrl, `/${script}`, { "accept-encoding": coding });
      expect([coded.headers["content-encoding"], coded.headers.vary], coding).toEqual([coding, "Accept-Encoding"]);
      expect(coded.body.length, coding).toBeLessThan(plain.body.length / 2);
      expect(decodedBody(coded).equals(plain.body), coding).toBe(true);
    }
    const post = await fetch(`${server.baseUrl}/explorer`, { method: "POST" });
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
    const slash = await fetch(`${server.baseUrl}/explorer/?q=abc`, { redirect: "manual" });
    expect([slash.status, slash.headers.get("location")]).toEqual([301, "../explorer?q=abc"]);
    // The addresses the start-up banner prints for it.
    const printed = [...usageExamples(server.baseUrl, true).matchAll(/^\s+(http\S+\/explorer\S*)/gm)].map((m) => m[1] as string);
    expect(printed).toEqual([`${server.baseUrl}/explorer`, `${server.baseUrl}/explorer?q=${demoJettonTransferHex}`]);
    for (const url of printed) expect((await fetch(url)).status, url).toBe(200);
    for (const target of ["/explorer/assets/main.ts", "/explorer/assets/%2e%2e/%2e%2e/package.json", "/explorer/src/main.ts", "/explorer/dist/explorer.js"]) {
      expect(await rawHttp(server.baseUrl, `GET ${target} HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n`), target).toMatch(/^HTTP\/1\.1 404 /);
    }
  });
});

describe("/explorer in headless Chromium", () => {
  it("opens the recorded USDT transfer by each form of its transaction hash, a message hash and the trace id, and a trace by its id alone", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    const traceParam = `trace=${base64url(usdt.rootTx).replace(/=+$/, "")}`;
    const forms: Array<[typed: string, selected: string]> = [
      [base64ToHex(usdt.jettonWalletTx), `tx=${base64url(usdt.jettonWalletTx)}`],
      [`0x${base64ToHex(usdt.jettonWalletTx).toUpperCase()}`, `tx=${base64url(usdt.jettonWalletTx)}`],
      [usdt.jettonWalletTx, `tx=${base64url(usdt.jettonWalletTx)}`],
      [base64url(usdt.jettonWalletTx), `tx=${base64url(usdt.jettonWalletTx)}`],
      [base64ToHex(usdt.walletToJettonWallet), `msg=${base64url(usdt.walletToJettonWallet)}`],
      [base64url(usdt.external), `msg=${base64url(usdt.external)}`],
    ];
    // The first by typing into the search box, the rest as links that hold the search.
    await page.goto(`${server.baseUrl}/explorer`);
    await page.fill("input[name=q]", forms[0]?.[0] as string);
    await page.press("input[name=q]", "Enter");
    await page.waitForSelector(drawnTree);
    expect(new URL(page.url()).search).toBe(`?${traceParam}&${forms[0]?.[1]}`);
    for (const [typed, selected] of forms.slice(1)) {
      await openTrace(page, `q=${encodeURIComponent(typed)}`);
      expect(new URL(page.url()).search, typed).toBe(`?${traceParam}&${selected}`);
      const [kind, hash] = selected.split("=") as [string, string];
      const standard = Buffer.from(hash, "base64url").toString("base64");
      expect(await page.getAttribute(`[data-${kind}="${standard}"]`, "class"), typed).toContain("selected");
      expect(await page.getAttribute(".panel [data-panel]", "data-hash"), typed).toBe(standard);
    }
    // The trace id, in hex: the trace opens (the id is its root transaction's hash, selected).
    await openTrace(page, `q=${demoJettonTransferHex}`);
    expect(new URL(page.url()).search).toBe(`?${traceParam}&tx=${base64url(usdt.rootTx)}`);
    expect(await page.textContent("h1")).toContain(usdt.rootTx);
    // A trace id that names no transaction, in each form: the trace opens with nothing selected.
    for (const form of [base64ToHex(detached.id), detached.id, base64url(detached.id)]) {
      await openTrace(page, `q=${encodeURIComponent(form)}`);
      expect(new URL(page.url()).search, form).toBe(`?trace=${base64url(detached.id)}`);
      expect(await page.$$("svg.tree .selected"), form).toHaveLength(0);
    }
    await closeClean(watched);
  });

  it("draws the nodes, edges and action lines of the API's answer", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    for (const traceId of [usdt.rootTx, swapTraceId, failedTransferTx]) {
      const { trace, names } = await traceAnswer({ traceId: [traceId] });
      await openTrace(page, `trace=${base64url(traceId)}`);

      const nodes = await page.$$eval(drawnTree, (elements) =>
        elements.map((e) => ({ hash: e.getAttribute("data-tx"), name: e.querySelector(".name")?.textContent, status: e.querySelector(".status")?.textContent ?? "" })),
      );
      expect(nodes.map((n) => n.hash).sort(), traceId).toEqual(trace.transactions.map((tx) => tx.hash).sort());
      for (const tx of trace.transactions) {
        const node = nodes.find((n) => n.hash === tx.hash);
        const outcome = transactionOutcome(tx);
        expect(node?.name, tx.hash).toBe(names.label(tx.account).slice(0, 24));
        expect(node?.status, tx.hash).toContain(`${outcome.ok ? "✓" : "✗"} ${outcome.text}`);
        if (outcome.codes !== "") expect(node?.status, tx.hash).toContain(outcome.codes);
      }

      // Every message that left or reached a transaction is an arrow, labelled with its type and value.
      const edges = await page.$$eval("svg.tree [data-msg]", (elements) =>
        elements.map((e) => ({ hash: e.getAttribute("data-msg"), type: e.querySelector(".edge-type")?.textContent, value: e.querySelector(".edge-value")?.textContent, bounced: e.classList.contains("bounced") })),
      );
      const messages = new Map(trace.transactions.flatMap((tx) => [tx.inMsg, ...tx.outMsgs]).filter((m) => m !== undefined).map((m) => [m.hash, m]));
      expect(edges.map((e) => e.hash).sort(), traceId).toEqual([...messages.keys()].sort());
      for (const edge of edges) {
        const message = messages.get(edge.hash as string);
        if (message === undefined) throw new Error(`no message ${edge.hash}`);
        expect(edge.type?.replace(/^↩ /, "").replace(/…$/, ""), edge.hash as string).toBe(messageType(message).slice(0, edge.type?.endsWith("…") ? 25 : undefined));
        expect(edge.value).toBe(ton(message.value ?? "0"));
        expect(edge.bounced).toBe(message.bounced === true);
      }

      const actions = await page.$$eval("li[data-action]", (elements) => elements.map((e) => ({ id: e.getAttribute("data-action"), text: e.textContent })));
      expect(actions.map((a) => a.id)).toEqual(trace.actions.map((a) => a.actionId));
      expect(actions.map((a) => a.text)).toEqual(trace.actions.map((a) => phraseText(actionPhrase(a, names), names)));
    }
    // The sentences a person reads, for the recorded transfer and swap.
    await openTrace(page, `trace=${base64url(usdt.rootTx)}`);
    expect(await page.textContent("li[data-action]")).toBe("jetton transfer 9 USD₮ from UQCg…N-qH to UQBG…3iD_");
    await openTrace(page, `trace=${base64url(swapTraceId)}`);
    expect(await page.textContent('li[data-type="jetton_swap"]')).toBe("swap 12.711411 USD₮ for 147.049519323 BUILD on dedust by UQC5…9Xi0");
    await closeClean(watched);
  });

  it("lights an action's transactions on hover, and shows a clicked node's or arrow's fields in the panel", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    const { trace, names } = await traceAnswer({ traceId: [swapTraceId] });
    await openTrace(page, `trace=${base64url(swapTraceId)}`);
    expect(await page.textContent(".panel")).toContain("Select a transaction");

    const swap = trace.actions.find((a) => a.type === "jetton_swap");
    await page.hover(`li[data-action="${swap?.actionId}"]`);
    const lit = await page.$$eval("svg.tree .lit", (elements) => elements.map((e) => e.getAttribute("data-tx")));
    expect(lit.sort()).toEqual([...(swap?.transactions ?? [])].sort());
    await page.mouse.move(0, 0);
    expect(await page.$$("svg.tree .lit")).toHaveLength(0);

    // A jetton wallet's transaction: its account, outcome, fees and messages.
    const tx = trace.transactions.find((t) => t.inMsg?.decodedOpcode === "jetton_internal_transfer" && t.description?.computePh?.exitCode === 0);
    if (tx === undefined) throw new Error("the swap has no jetton_internal_transfer");
    await page.click(`[data-tx="${tx.hash}"] .name`);
    await page.waitForSelector(`.panel [data-panel="tx"][data-hash="${tx.hash}"]`);
    const panel = (await page.textContent(".panel")) ?? "";
    expect(panel).toContain(names.label(tx.account));
    expect(panel).toContain(names.friendly(tx.account));
    expect(panel).toContain(`total fees${ton(tx.totalFees)}`);
    expect(panel).toContain("exit code0");
    expect(new URL(page.url()).searchParams.get("tx")).toBe(base64url(tx.hash));

    // Its inbound message, from the panel's list: the decoded body with the amount the API decoded.
    await page.click(`.panel [data-select="msg:${tx.inMsg?.hash}"]`);
    await page.waitForSelector(`.panel [data-panel="msg"][data-hash="${tx.inMsg?.hash}"]`);
    expect(await page.getAttribute(`svg.tree [data-msg="${tx.inMsg?.hash}"]`, "class")).toContain("selected");
    const body = (await page.textContent(".panel .decoded-body")) ?? "";
    const decoded = tx.inMsg?.messageContent?.decoded?.data as { amount: { value: string }; query_id: string };
    expect(body).toContain("jetton_internal_transfer");
    expect(body).toContain(`amount${decoded.amount.value}`);
    expect(body).toContain(`query_id${decoded.query_id}`);
    expect(new URL(page.url()).searchParams.get("msg")).toBe(base64url(tx.inMsg?.hash as string));

    // An arrow clicked in the drawing, and a reload of the URL it left: the same selection.
    const other = trace.transactions.find((t) => t.inMsg?.decodedOpcode === "excess");
    await page.click(`svg.tree [data-msg="${other?.inMsg?.hash}"] .edge-type`);
    await page.waitForSelector(`.panel [data-panel="msg"][data-hash="${other?.inMsg?.hash}"]`);
    await page.reload();
    await page.waitForSelector(`.panel [data-panel="msg"][data-hash="${other?.inMsg?.hash}"]`);
    await closeClean(watched);
  });

  it("follows links: an account's traces newest first, older ones by cursor, and back to a trace", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    const client = server.client("grpc-web");
    await openTrace(page, `trace=${base64url(usdt.rootTx)}`);
    // The transfer's sender, linked from the action's sentence.
    await page.click("li[data-action] a.address >> nth=0");
    await page.waitForSelector("table.traces tbody tr");
    const account = new URL(page.url()).searchParams.get("account") as string;
    expect(account).toBe("UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH");
    const expected = await client.getTraces({ account, limit: 20 });
    expect(await page.$$eval("tr[data-trace]", (rows) => rows.map((r) => r.getAttribute("data-trace")))).toEqual(expected.traces.map((t) => t.traceId));
    expect(await page.textContent("h1")).toBe("Traces of UQCg…N-qH");

    // An account with more traces than a page: the next page through the API's cursor, and back to the newest.
    await page.fill("input[name=q]", busyAccount);
    await page.press("input[name=q]", "Enter");
    await page.waitForSelector("nav.pager a");
    const first = await client.getTraces({ account: busyAccount, limit: 20 });
    const second = await client.getTraces({ account: busyAccount, limit: 20, pageToken: first.nextPageToken });
    const rows = () => page.$$eval("tr[data-trace]", (list) => list.map((r) => r.getAttribute("data-trace")));
    expect(await rows()).toEqual(first.traces.map((t) => t.traceId));
    await page.click("text=Older traces →");
    await page.waitForURL(/page=/);
    await page.waitForSelector(`tr[data-trace="${second.traces[0]?.traceId}"]`);
    expect(await rows()).toEqual(second.traces.map((t) => t.traceId));
    expect(first.traces.length + second.traces.length).toBe(busyTraceCount);
    expect(await page.$("text=Older traces →")).toBeNull();
    await page.click("text=← Newest traces");
    await page.waitForSelector(`tr[data-trace="${first.traces[0]?.traceId}"]`);

    // A trace from the list, and the browser's back button to the list again.
    await page.click(`tr[data-trace="${first.traces[3]?.traceId}"] a`);
    await page.waitForSelector(drawnTree);
    expect(new URL(page.url()).searchParams.get("trace")).toBe(base64url(first.traces[3]?.traceId as string).replace(/=+$/, ""));
    await page.goBack();
    await page.waitForSelector(`tr[data-trace="${first.traces[0]?.traceId}"]`);
    await closeClean(watched);
  });

  it("answers an unknown hash and input that is no hash or address with a clear message", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    const unknown = "ab".repeat(32);
    await page.goto(`${server.baseUrl}/explorer?q=${unknown}`);
    await page.waitForSelector("[data-message=error]");
    expect(await page.textContent("[data-message=error]")).toBe(
      `Nothing indexed has the hash ${unknown}: no transaction, message or trace. It may not have happened yet, or not be indexed.`,
    );
    await page.goto(`${server.baseUrl}/explorer?q=hello`);
    await page.waitForSelector("[data-message=error]");
    expect(await page.textContent("[data-message=error]")).toMatch(/^"hello" is neither a hash nor an address\. Paste a transaction hash/);
    // An address-shaped text the service refuses: its own words.
    await page.goto(`${server.baseUrl}/explorer?account=${"A".repeat(48)}`);
    await page.waitForSelector("[data-message=error]");
    expect(await page.textContent("[data-message=error]")).toMatch(/^The service refused the request: /);
    await page.goto(`${server.baseUrl}/explorer?trace=${base64url(unknown)}`);
    await page.waitForSelector("[data-message=error]");
    expect(await page.textContent("[data-message=error]")).toContain("No trace with id");
    // The refused request is the one 4xx the page met: drop it from the problems before the common checks.
    watched.problems = watched.problems.filter((problem) => !problem.startsWith("console: Failed to load resource"));
    await closeClean(watched);
  });

  it("says so when a trace is pending (with its messages in flight), and when it is too large to load", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    await db.admin`update traces set state = 'pending', pending_edges_ = 2 where trace_id = ${usdt.rootTx}`;
    try {
      await openTrace(page, `trace=${base64url(usdt.rootTx)}`);
      expect(await page.textContent("[data-banner=pending]")).toBe("Pending: 2 messages are still on the way. The trace is not finished; open it again later for the rest.");
      expect(await page.textContent("[data-state]")).toBe("pending");
    } finally {
      await db.admin`update traces set state = 'complete', pending_edges_ = 0 where trace_id = ${usdt.rootTx}`;
    }
    // A pending trace's message that no transaction received yet: an arrow to an "in flight" end.
    await db.admin`update traces set state = 'pending', pending_edges_ = 1 where trace_id = ${detached.id}`;
    try {
      await openTrace(page, `trace=${base64url(detached.id)}`);
      expect(await page.textContent("[data-banner=pending]")).toContain("Pending: 1 message is still on the way.");
      expect(await page.textContent(`[data-msg-end="${undelivered}"]`)).toBe("in flight");
      expect(await page.textContent(`[data-msg="${undelivered}"] .edge-value`)).toBe("0.005 TON");
    } finally {
      await db.admin`update traces set state = 'complete', pending_edges_ = 0 where trace_id = ${detached.id}`;
    }
    const small = await startTestServer(db.url, { MAX_TRACE_TRANSACTIONS: "500" });
    try {
      await page.goto(`${small.baseUrl}/explorer?trace=${base64url(big.id)}`);
      await page.waitForSelector("[data-banner=incomplete]");
      expect(await page.textContent("[data-banner=incomplete]")).toContain("Incomplete: trace is too large. It has 1000 transactions");
      expect(await page.$$(drawnTree)).toHaveLength(0);
    } finally {
      await page.close();
      await small.close();
    }
    expect(watched.problems).toEqual([]);
  });

  it("keeps a 1000-transaction trace usable: a budget of boxes, '+N' boxes that open more, a deep transaction revealed", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    await openTrace(page, `trace=${base64url(big.id)}`);
    const drawn = async () => (await page.$$(drawnTree)).length;
    const first = await drawn();
    expect(first).toBeGreaterThan(10);
    expect(first).toBeLessThanOrEqual(150);
    const more = await page.$$eval("svg.tree [data-more]", (elements) => elements.map((e) => e.textContent ?? ""));
    expect(more.length).toBeGreaterThan(0);
    // The root's hidden branches: its 600 children less those shown, each one transaction, plus the chain below the first.
    expect(more.some((text) => /^\+\d+ transactions/.test(text))).toBe(true);
    await page.click(`svg.tree [data-more="0"]`);
    expect(await drawn()).toBeGreaterThan(first);

    // The chain's last transaction, 400 levels down, opened by its URL: drawn and selected.
    const deepest = big.txs[big.txs.length - 1] as GeneratedTx;
    await openTrace(page, `trace=${base64url(big.id)}&tx=${base64url(deepest.hash)}`);
    expect(await page.getAttribute(`[data-tx="${deepest.hash}"]`, "class")).toContain("selected");
    expect(await drawn()).toBeLessThan(700);
    // Closing the root's subtree leaves one box.
    await page.click(`[data-index="0"] [data-toggle]`);
    expect(await drawn()).toBe(1);
    await closeClean(watched);
  });

  it("follows an account live: a trace of a block the index gains while the view is open appears at the top, without a reload", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    const before = liveTrace("before", 600_000_000n);
    const landed = liveTrace("landed", 600_000_010n);
    await insertTraces(db, [before]);
    // Polled every 100 ms and a heartbeat every 300 ms: the page learns its stream is open within a second.
    const live = await startTestServer(db.url, { STREAM_POLL_INTERVAL_MS: "100", STREAM_HEARTBEAT_MS: "300" });
    try {
      await page.goto(`${live.baseUrl}/explorer?account=${liveAccount}`);
      await page.waitForSelector(`tr[data-trace="${before.id}"]`);
      expect(await page.textContent(".live[data-live=following]")).toMatch(/^Following live/);
      // A heartbeat's position on the indicator: the stream is open on the server, so the next block is its to deliver.
      await page.waitForSelector(".live[data-live=following][data-position]");
      await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }));
      const [newest] = await db.admin<{ seqno: number }[]>`select coalesce(max(seqno), 0) as seqno from blocks where workchain = -1`;
      const seqno = (newest?.seqno ?? 0) + 1;
      const appendedAt = performance.now();
      await appendBlock(seqno, landed);
      await page.waitForSelector(`tr.arrived[data-trace="${landed.id}"]`);
      const delayMs = performance.now() - appendedAt;
      expect(await page.$$eval("tr[data-trace]", (rows) => rows.map((r) => r.getAttribute("data-trace")))).toEqual([landed.id, before.id]);
      expect(await page.textContent(`tr[data-trace="${landed.id}"] .count`)).toBe("1");
      expect(await page.getAttribute(".live", "data-position")).toBe(String(seqno));
      expect(await page.textContent(".live")).toBe(`Following live (up to masterchain block ${seqno}): new traces appear at the top as they land.`);
      expect(await page.evaluate(() => (globalThis as { sameDocument?: boolean }).sameDocument)).toBe(true);
      expect(delayMs).toBeLessThan(3000);
      // One stream (StreamTraces over gRPC-web) beside the first page's GetTraces: nothing polled.
      const calls = watched.requests.map((request) => new URL(request.split(" ")[1] as string).pathname).filter((path) => path.startsWith("/tonquery.v1."));
      expect(calls).toEqual(["/tonquery.v1.TonQueryService/GetTraces", "/tonquery.v1.TonQueryService/StreamTraces"]);
      await closeClean(watched, live.baseUrl);
    } finally {
      if (!watched.page.isClosed()) await watched.page.close();
      await live.close();
    }
  });

  it("draws the recorded USDT transfer for the README's screenshot", async ({ skip }) => {
    const watched = await openPage(skip);
    const { page } = watched;
    await openTrace(page, `trace=${base64url(usdt.rootTx)}&msg=${base64url(usdt.walletToJettonWallet)}`);
    await page.hover("li[data-action]");
    const dir = await mkdtemp(join(tmpdir(), "explorer-shot-"));
    try {
      const path = join(dir, "explorer.png");
      await page.screenshot({ path });
      const png = await readFile(path);
      expect(png.subarray(1, 4).toString()).toBe("PNG");
      // Width and height from the PNG's header: the viewport's.
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1500, 950]);
      // UPDATE_SCREENSHOT=1 writes it where the README shows it.
      if (process.env.UPDATE_SCREENSHOT) await writeFile(new URL("../docs/explorer.png", import.meta.url), png);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await closeClean(watched);
  });
});
