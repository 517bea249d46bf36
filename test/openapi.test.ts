import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { startDemoReplay } from "../src/demo/replay.ts";
import { ssePath, wsPath } from "../src/streams/rest.ts";
import { parseSubscription } from "../src/streams/toncenter.ts";
import { demoJettonTransferHex, demoTransactionHex, usageExamples } from "../src/server/usage.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startOutageProxy, type OutageProxy } from "./support/proxy.ts";
import { rawHttp } from "./support/raw-rpc.ts";
import { startTestServer, type TestServer } from "./support/server.ts";
import { openWs, sseEvents } from "./support/stream-clients.ts";

// The OpenAPI document against what the service really does: the document is valid OpenAPI 3.1, every body the
// demo answers with (200s and errors) validates against the schema the document gives for its path, method and
// status, every documented status of the REST paths is met, and every bound the document states for a parameter
// is exactly where the service starts refusing it. The live streams' doors likewise: their subscription, their
// refusals, and the events and WebSocket messages of a live index. Then /docs, drawn by a real browser.

type Json = Record<string, unknown>;
type Doc = {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: Json; responses: Record<string, Json> }>>;
  components: { schemas: Record<string, Json & { properties?: Record<string, Json> }>; responses: Json };
} & Json;
interface Parameter {
  name: string;
  in: string;
  required: boolean;
  schema: Json & { type?: string; minimum?: number; maximum?: number; enum?: string[]; pattern?: string; items?: Json };
  "x-max-distinct-values"?: number;
}
interface Answer {
  status: number;
  body: unknown;
  headers: Headers;
}

const restPaths = ["/api/v3/masterchainInfo", "/api/v3/adjacentTransactions", "/api/v3/traces", "/api/v2/getBlockTransactionsExt"];
const b64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");
const b64url = (hex: string) => Buffer.from(hex, "hex").toString("base64url");
/** The demo's recorded v2 block. */
const demoBlock = "workchain=-1&shard=-9223372036854775808&seqno=39984096";
/** The jetton wallet's transaction, child of the demo USDT transfer (fixtures/toncenter/traces_mainnet_usdtTransfer_mtw.json). */
const demoJettonChildHex = Buffer.from("3BXRPvM5k0P7Yi88h6Y3zCn6NjF0A7gMBodvcJsls6M=", "base64").toString("hex");
const pointerPart = (part: string) => part.replace(/~/g, "~0").replace(/\//g, "~1");

/** One server's document, compiled: answers are checked against it as they arrive, and the statuses met are counted. */
class DocumentCheck {
  readonly covered = new Set<string>();
  readonly #ajv: InstanceType<typeof Ajv2020.default>;
  readonly #base = "https://tonquery.test/openapi.json";
  readonly doc: Doc;
  readonly baseUrl: string;

  constructor(doc: Doc, baseUrl: string) {
    this.doc = doc;
    this.baseUrl = baseUrl;
    // Strict: a keyword ajv does not know (a typo in a schema) is an error, not silently ignored. Not strictRequired:
    // it refuses `then: {required: [...]}` naming properties defined beside the `if`.
    this.#ajv = new Ajv2020.default({ strict: true, strictRequired: false, allErrors: true, allowUnionTypes: true });
    addFormats.default(this.#ajv);
    // The document's own members are no schema keywords: declared, so strict mode lets ajv hold the whole document
    // and resolve the schemas' #/components/... references inside it.
    // x-max-distinct-values: the OpenAPI extension the document gives a list its bound of distinct values with.
    this.#ajv.addVocabulary(["openapi", "info", "servers", "tags", "paths", "components", "x-max-distinct-values"]);
    this.#ajv.addSchema({ ...doc, $id: this.#base });
  }

  /** Every component schema compiles (is valid JSON Schema 2020-12 under ajv's strict mode). */
  compileComponents(): void {
    for (const name of Object.keys(this.doc.components.schemas)) {
      this.#ajv.compile({ $ref: `${this.#base}#/components/schemas/${name}` });
    }
  }

  /** The JSON pointer to the body schema of one documented answer, or undefined when the status is not documented. */
  schemaPointer(path: string, method: string, status: number): string | undefined {
    const responses = this.doc.paths[path]?.[method]?.responses;
    const response = responses?.[String(status)];
    if (response === undefined) return undefined;
    const at =
      typeof response.$ref === "string"
        ? response.$ref.slice(1)
        : `/paths/${pointerPart(path)}/${method}/responses/${status}`;
    return `${at}/content/application~1json/schema`;
  }

  validate(path: string, method: string, answer: Answer): void {
    const pointer = this.schemaPointer(path, method, answer.status);
    expect(pointer, `${method.toUpperCase()} ${path}: status ${answer.status} is not documented (body ${JSON.stringify(answer.body)})`).toBeDefined();
    const validate = this.#ajv.getSchema(`${this.#base}#${pointer}`) ?? this.#ajv.compile({ $ref: `${this.#base}#${pointer}` });
    const valid = validate(answer.body);
    expect(valid, `${method.toUpperCase()} ${path} ${answer.status}: ${this.#ajv.errorsText(validate.errors, { separator: "\n" })}`).toBe(true);
    this.covered.add(`${method} ${path} ${answer.status}`);
  }

  /** Validates a value against a schema of the document's components (an event's data, a WebSocket message). */
  validateSchema(name: string, value: unknown): void {
    const validate = this.#ajv.getSchema(`${this.#base}#/components/schemas/${name}`) ?? this.#ajv.compile({ $ref: `${this.#base}#/components/schemas/${name}` });
    expect(validate(value), `${name} ${JSON.stringify(value).slice(0, 300)}: ${this.#ajv.errorsText(validate.errors, { separator: "\n" })}`).toBe(true);
  }

  /** Validates a body against a response of the document's components (an answer no operation lists: a 405). */
  validateComponent(response: string, body: unknown): void {
    const validate = this.#ajv.compile({ $ref: `${this.#base}#/components/responses/${response}/content/application~1json/schema` });
    expect(validate(body), `${response}: ${this.#ajv.errorsText(validate.errors, { separator: "\n" })}`).toBe(true);
  }

  async request(pathAndQuery: string, method = "GET", init: RequestInit = {}): Promise<Answer> {
    const response = await fetch(`${this.baseUrl}${pathAndQuery}`, { ...init, method });
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const answer = { status: response.status, body: (await response.json()) as unknown, headers: response.headers };
    this.validate(new URL(pathAndQuery, this.baseUrl).pathname, method.toLowerCase(), answer);
    return answer;
  }

  parameters(path: string): Parameter[] {
    return this.doc.paths[path]?.get?.parameters ?? [];
  }
}

async function documentOf(server: TestServer): Promise<DocumentCheck> {
  const response = await fetch(`${server.baseUrl}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return new DocumentCheck((await response.json()) as Doc, server.baseUrl);
}

let db: TestDatabase;
let server: TestServer;
let check: DocumentCheck;

beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
  server = await startTestServer(db.url);
  check = await documentOf(server);
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

describe("/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document whose schemas compile strictly", async () => {
    const validator = new Validator();
    const result = await validator.validate(check.doc);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    check.compileComponents();
    expect(Object.keys(check.doc.paths)).toEqual(expect.arrayContaining([...restPaths, ssePath, wsPath, "/healthz", "/openapi.json", "/docs"]));
  });

  it("states the running configuration's limits", async () => {
    const limit = (c: DocumentCheck) => c.parameters("/api/v3/traces").find((p) => p.name === "limit")?.schema;
    expect(limit(check)).toMatchObject({ minimum: 1, maximum: server.config.maxLimit, default: server.config.defaultLimit });
    const other = await startTestServer(db.url, { MAX_LIMIT: "5", DEFAULT_LIMIT: "2", MAX_LIST_VALUES: "3" });
    try {
      const otherCheck = await documentOf(other);
      expect(limit(otherCheck)).toMatchObject({ minimum: 1, maximum: 5, default: 2 });
      const lists = otherCheck.parameters("/api/v3/traces").filter((p) => p["x-max-distinct-values"] !== undefined);
      expect(lists.map((p) => [p.name, p["x-max-distinct-values"]])).toEqual([
        ["trace_id", 3],
        ["tx_hash", 3],
        ["msg_hash", 3],
        ["supported_action_types", 3],
      ]);
    } finally {
      await other.close();
    }
  });

  it("answers HEAD without a body, and refuses other methods", async () => {
    const head = await fetch(`${server.baseUrl}/openapi.json`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const post = await fetch(`${server.baseUrl}/openapi.json`, { method: "POST" });
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
  });
});

describe("/docs and its assets", () => {
  it("are served from this server, with their types, and nothing else under /docs", async () => {
    const page = await fetch(`${server.baseUrl}/docs`);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await page.text();
    const linked = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(linked.length).toBe(4);
    const types = await Promise.all(
      linked.map(async (url) => {
        const response = await fetch(new URL(url, `${server.baseUrl}/docs`));
        expect(response.status, url).toBe(200);
        expect((await response.arrayBuffer()).byteLength, url).toBeGreaterThan(0);
        return response.headers.get("content-type");
      }),
    );
    expect(types.sort()).toEqual(["image/png", "text/css; charset=utf-8", "text/javascript; charset=utf-8", "text/javascript; charset=utf-8"]);
    // Files of the package that the page does not use, and attempts to leave the assets' folder.
    for (const target of ["/docs/assets/index.html", "/docs/assets/swagger-ui-bundle.js.map", "/docs/assets/%2e%2e/%2e%2e/package.json", "/docs/assets/..%2f..%2fpackage.json", "/docs/"]) {
      const raw = await rawHttp(server.baseUrl, `GET ${target} HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n`);
      expect(raw, target).toMatch(/^HTTP\/1\.1 404 /);
    }
  });
});

describe("the demo's answers match the document", () => {
  it("the requests the start-up banner prints", async () => {
    const printed = [...usageExamples("http://demo", true).matchAll(/curl '?http:\/\/demo(\/api\/[^'\s]+)/g)].map((m) => m[1] as string);
    expect(printed.length).toBeGreaterThanOrEqual(6);
    for (const pathAndQuery of printed) expect((await check.request(pathAndQuery)).status, pathAndQuery).toBe(200);
  });

  it("every path's 200, with the variations of each body", async () => {
    const ok = [
      "/api/v3/masterchainInfo",
      `/api/v3/adjacentTransactions?hash=${b64url(demoJettonChildHex)}&direction=in`,
      `/api/v3/adjacentTransactions?hash=0x${demoTransactionHex}`,
      // Every demo trace, with its actions: all the recorded transaction, message and action shapes at once.
      "/api/v3/traces?limit=1000&include_actions=true&supported_action_types=latest",
      `/api/v3/traces?tx_hash=${demoTransactionHex},${demoJettonTransferHex}&sort=asc`,
      `/api/v3/traces?trace_id=${encodeURIComponent(b64(demoTransactionHex))}&trace_id=${demoJettonTransferHex}&include_actions=1`,
      "/api/v3/traces?start_utime=1725051418&end_utime=1725051445.5&limit=2&offset=1&sort=a",
      "/api/v3/traces?mc_seqno=39984096",
      `/api/v2/getBlockTransactionsExt?${demoBlock}`,
      `/api/v2/getBlockTransactionsExt?${demoBlock}&count=1`,
    ];
    for (const pathAndQuery of ok) expect((await check.request(pathAndQuery)).status, pathAndQuery).toBe(200);

    const page = (await check.request(`/api/v2/getBlockTransactionsExt?${demoBlock}&count=1`)).body as {
      result: { incomplete: boolean; transactions: { transaction_id: { lt: string }; account: string }[] };
    };
    expect(page.result.incomplete).toBe(true);
    const last = page.result.transactions[0];
    const next = await check.request(`/api/v2/getBlockTransactionsExt?${demoBlock}&count=1&after_lt=${last?.transaction_id.lt}&after_hash=${last?.account}`);
    expect(next.status).toBe(200);
  });

  it("404 from an index without blocks", async () => {
    const empty = await createTestDatabase();
    const emptyServer = await startTestServer(empty.url);
    try {
      const emptyCheck = await documentOf(emptyServer);
      expect((await emptyCheck.request("/api/v3/masterchainInfo")).status).toBe(404);
      for (const key of emptyCheck.covered) check.covered.add(key);
    } finally {
      await emptyServer.close();
      await empty.drop();
    }
  });

  it("404s", async () => {
    const missing = randomBytes(32).toString("hex");
    for (const pathAndQuery of [
      `/api/v3/adjacentTransactions?hash=${missing}`,
      "/api/v3/traces?mc_seqno=7",
      "/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=7",
      `/api/v2/getBlockTransactionsExt?${demoBlock}&root_hash=${missing}`,
    ]) {
      expect((await check.request(pathAndQuery)).status, pathAndQuery).toBe(404);
    }
  });

  it("422s", async () => {
    for (const pathAndQuery of [
      "/api/v3/adjacentTransactions",
      "/api/v3/adjacentTransactions?hash=zz",
      `/api/v3/adjacentTransactions?hash=${demoTransactionHex}&direction=up`,
      `/api/v3/traces?account=0:${"0".repeat(64)}&tx_hash=${demoTransactionHex}`,
      "/api/v3/traces?limit=1001",
      "/api/v3/traces?sort=up",
      `/api/v3/traces?tx_hash=${demoTransactionHex},zz`,
      "/api/v2/getBlockTransactionsExt?workchain=-1",
      `/api/v2/getBlockTransactionsExt?${demoBlock}&count=0`,
      `/api/v2/getBlockTransactionsExt?${demoBlock}&after_lt=1`,
    ]) {
      expect((await check.request(pathAndQuery)).status, pathAndQuery).toBe(422);
    }
  });

  it("describes only the operations that exist: GET on every path, and POST on the SSE stream's", () => {
    for (const [path, item] of Object.entries(check.doc.paths)) expect(Object.keys(item).sort(), path).toEqual(path === ssePath ? ["get", "post"] : ["get"]);
  });

  it("405s, with Allow, as the MethodNotAllowed responses describe", async () => {
    for (const path of restPaths) {
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const response = await fetch(`${server.baseUrl}${path}`, { method });
        expect(response.status).toBe(405);
        expect(response.headers.get("allow")).toBe("GET, HEAD");
        check.validateComponent(path.startsWith("/api/v2/") ? "MethodNotAllowedV2" : "MethodNotAllowed", await response.json());
      }
    }
  });

  it("400s for a target that makes no URL", async () => {
    for (const path of restPaths) {
      const raw = await rawHttp(server.baseUrl, `GET http://[x${path} HTTP/1.1\r\nHost: x\r\nconnection: close\r\n\r\n`);
      const status = Number(/^HTTP\/1\.1 (\d+) /.exec(raw)?.[1]);
      check.validate(path, "get", { status, body: JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)), headers: new Headers() });
      expect(status).toBe(400);
    }
  });

  it("health", async () => {
    expect((await check.request("/healthz")).status).toBe(200);
  });

  it("traces too large to load, with their header only", async () => {
    const small = await startTestServer(db.url, { MAX_TRACE_TRANSACTIONS: "2" });
    try {
      const smallCheck = await documentOf(small);
      const { status, body } = await smallCheck.request("/api/v3/traces?limit=1000&include_actions=true");
      expect(status).toBe(200);
      const traces = (body as { traces: { is_incomplete: boolean }[] }).traces;
      expect(new Set(traces.map((t) => t.is_incomplete))).toEqual(new Set([true, false]));
    } finally {
      await small.close();
    }
  });

  const eachPath = [
    "/api/v3/masterchainInfo",
    `/api/v3/adjacentTransactions?hash=${demoTransactionHex}`,
    "/api/v3/traces",
    `/api/v2/getBlockTransactionsExt?${demoBlock}`,
  ];

  /** A server whose database connections go through a relay the test can cut or silence. */
  async function withFailingDatabase(env: Record<string, string>, run: (failing: DocumentCheck, proxy: OutageProxy) => Promise<void>) {
    const proxy = await startOutageProxy(db.url);
    const failing = await startTestServer(proxy.url, env);
    try {
      await run(await documentOf(failing), proxy);
    } finally {
      await proxy.restore();
      await failing.close();
      await proxy.close();
    }
  }

  // The relay is cut before the service ever connects: cutting live connections sometimes crashes the postgres
  // driver (a statement written on a reserved connection whose socket has closed), a fault of its own, reported
  // apart from this test.
  it("503 while the database refuses connections", async () => {
    await withFailingDatabase({}, async (failing, proxy) => {
      await proxy.cut();
      for (const path of [...eachPath, "/healthz"]) expect((await failing.request(path)).status, path).toBe(503);
      for (const key of failing.covered) check.covered.add(key);
    });
  });

  it("504 when the request's deadline passes first", async () => {
    // A database that stops answering is noticed after DB_CONNECT_TIMEOUT_MS: the request's deadline comes first.
    await withFailingDatabase({ REQUEST_TIMEOUT_MS: "1000", DB_CONNECT_TIMEOUT_MS: "30000" }, async (failing, proxy) => {
      expect((await failing.request("/api/v3/masterchainInfo")).status).toBe(200);
      await proxy.blackhole();
      for (const path of eachPath) expect((await failing.request(path)).status, path).toBe(504);
      for (const key of failing.covered) check.covered.add(key);
    });
  });

  it("every documented status of the REST paths was met (but 500, a bug)", () => {
    const documented = restPaths.flatMap((path) =>
      Object.entries(check.doc.paths[path] ?? {}).flatMap(([method, operation]) =>
        Object.keys(operation.responses).map((status) => `${method} ${path} ${status}`),
      ),
    );
    const unmet = documented.filter((key) => !check.covered.has(key));
    expect(unmet).toEqual(restPaths.map((path) => `get ${path} 500`));
  });
});

describe("every bound the document states is where the service refuses", () => {
  let bounded: TestServer;
  let boundedCheck: DocumentCheck;
  beforeAll(async () => {
    bounded = await startTestServer(db.url, { MAX_LIMIT: "5", DEFAULT_LIMIT: "2", MAX_LIST_VALUES: "3" });
    boundedCheck = await documentOf(bounded);
  });
  afterAll(async () => {
    await bounded?.close();
  });

  /** A query each path answers (200 or 404), to which one parameter at a time is added. */
  const valid: Record<string, string> = {
    "/api/v3/adjacentTransactions": `hash=${demoTransactionHex}`,
    "/api/v3/traces": "include_actions=true",
    "/api/v2/getBlockTransactionsExt": demoBlock,
  };
  /** Parameters that are only valid together. */
  const companions: Record<string, string> = { after_lt: `after_hash=0:${"0".repeat(64)}`, after_hash: "after_lt=0" };

  it.each(Object.keys(valid))("%s", async (path) => {
    const base = new URLSearchParams(valid[path]);
    const ask = async (name: string, value: string | string[]) => {
      const query = new URLSearchParams(base);
      query.delete(name);
      for (const v of Array.isArray(value) ? value : [value]) query.append(name, v);
      for (const [k, v] of new URLSearchParams(companions[name] ?? "")) query.set(k, v);
      return (await boundedCheck.request(`${path}?${query}`)).status;
    };
    const refused = async (name: string, value: string | string[]) => expect(await ask(name, value), `${name}=${value}`).toBe(422);
    const accepted = async (name: string, value: string | string[]) => expect([200, 404], `${name}=${value}`).toContain(await ask(name, value));

    const parameters = boundedCheck.parameters(path);
    expect(parameters.length).toBeGreaterThan(0);
    for (const p of parameters) {
      const { type, minimum, maximum, pattern, items } = p.schema;
      if (p.required) {
        const query = new URLSearchParams(base);
        query.delete(p.name);
        expect((await boundedCheck.request(`${path}?${query}`)).status, `without ${p.name}`).toBe(422);
      }
      if (type === "integer") {
        await refused(p.name, "zz");
        if (minimum !== undefined) {
          await refused(p.name, String(minimum - 1));
          await accepted(p.name, String(minimum));
        }
        if (maximum !== undefined) {
          await refused(p.name, String(maximum + 1));
          await accepted(p.name, String(maximum));
        }
      }
      if (type === "boolean") {
        await refused(p.name, "maybe");
        await accepted(p.name, "false");
      }
      if (p.schema.enum !== undefined) {
        await refused(p.name, "zz");
        for (const value of p.schema.enum) await accepted(p.name, value);
      }
      if (pattern !== undefined) await refused(p.name, "zz");
      if (type === "array" && items?.pattern !== undefined) await refused(p.name, ["zz"]);
      const most = p["x-max-distinct-values"];
      if (most !== undefined) {
        const distinct = (n: number) =>
          Array.from({ length: n }, () => (items?.pattern === undefined ? randomBytes(4).toString("hex") : randomBytes(32).toString("hex")));
        await accepted(p.name, distinct(most));
        await refused(p.name, distinct(most + 1));
      }
    }
  });
});

describe("the live streams' doors match the document", () => {
  const demoAddress = "0:64BBFE7CD6D7EB61728F1F09824DC7DAAB95C3110A260908F0B482C223DA132C";
  const subscriptionOf = (c: DocumentCheck) => c.doc.components.schemas.StreamSubscription as Json & { properties: Record<string, Json>; required: string[] };
  const queryOf = (c: DocumentCheck) => (c.doc.paths[ssePath]?.get?.parameters ?? []).filter((p) => p.in === "query");
  const post = (c: DocumentCheck, body: unknown, headers: Record<string, string> = {}) =>
    c.request(ssePath, "POST", { body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });

  it("the subscription names every field parseSubscription reads, in the POST body and in the GET query", () => {
    const read = new Set<string>();
    const body = new Proxy<Record<string, unknown>>(
      { types: ["transactions"], addresses: [demoAddress] },
      {
        get(target, key) {
          if (typeof key === "string") read.add(key);
          return target[key as string];
        },
      },
    );
    parseSubscription(body, server.config);
    expect(read.size).toBeGreaterThan(5);
    const fields = Object.keys(subscriptionOf(check).properties).sort();
    expect(fields).toEqual([...read].sort());
    expect(subscriptionOf(check).required).toEqual(["types"]);
    expect(queryOf(check).map((p) => p.name).sort()).toEqual([...fields, "last_event_id"].sort());
    expect(queryOf(check).filter((p) => p.required).map((p) => p.name)).toEqual(["types"]);
    expect(check.doc.paths[ssePath]?.post?.requestBody).toMatchObject({ content: { "application/json": { schema: { $ref: "#/components/schemas/StreamSubscription" } } } });
  });

  it("states the running configuration's stream limits, where the doors refuse", async () => {
    const bounded = await startTestServer(db.url, { STREAM_MAX_ADDRESSES: "3", MAX_LIST_VALUES: "2" });
    try {
      const boundedCheck = await documentOf(bounded);
      const stated: [string, number][] = [
        ["addresses", 3],
        ["trace_external_hash_norms", 3],
        ["action_types", 2],
        ["supported_action_types", 2],
      ];
      const inBody = Object.entries(subscriptionOf(boundedCheck).properties).filter(([, schema]) => schema["x-max-distinct-values"] !== undefined);
      expect(inBody.map(([name, schema]) => [name, schema["x-max-distinct-values"]])).toEqual(stated);
      expect(queryOf(boundedCheck).filter((p) => p["x-max-distinct-values"] !== undefined).map((p) => [p.name, p["x-max-distinct-values"]])).toEqual(stated);
      for (const [name, most] of stated) {
        const values = (n: number) =>
          Array.from({ length: n }, (_, i) => (name === "addresses" ? `0:${String(i).padStart(64, "0")}` : name === "trace_external_hash_norms" ? randomBytes(32).toString("hex") : `Type${i}`));
        const body = (n: number) => ({ types: [name === "trace_external_hash_norms" ? "trace" : name === "addresses" ? "transactions" : "actions"], [name]: values(n) });
        expect((await post(boundedCheck, body(most + 1))).status, name).toBe(400);
        const controller = new AbortController();
        const admitted = await fetch(`${bounded.baseUrl}${ssePath}`, { method: "POST", body: JSON.stringify(body(most)), signal: controller.signal });
        expect(admitted.status, name).toBe(200);
        controller.abort();
      }
    } finally {
      await bounded.close();
    }
  });

  it("refuses as documented: 400, 410, 405 and 426", async () => {
    for (const body of [{ types: ["transactions"], min_finality: "pending" }, "{", { types: ["jettons_change"] }, { types: "transactions" }, { types: ["transactions"], include_metadata: "yes" }]) {
      expect((await post(check, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await post(check, { types: ["transactions"] }, { "last-event-id": "x" })).status).toBe(400);
    for (const query of [`addresses=${demoAddress}`, "types=transactions&include_metadata=maybe", "types=trace"]) {
      expect((await check.request(`${ssePath}?${query}`)).status, query).toBe(400);
    }
    const old = await post(check, { types: ["transactions"] }, { "last-event-id": "1" });
    expect(old.status).toBe(410);
    expect(old.body).toMatchObject({ code: "OutOfRange", position: expect.any(Number), last_event_id: expect.any(String) });
    const ahead = await check.request(`${ssePath}?types=transactions&last_event_id=2000000000`);
    expect(ahead.status).toBe(410);
    expect(ahead.body).not.toHaveProperty("position");

    for (const method of ["HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const response = await fetch(`${server.baseUrl}${ssePath}`, { method });
      expect([response.status, response.headers.get("allow")], method).toEqual([405, "POST, GET"]);
      if (method !== "HEAD") check.validateComponent("StreamingMethodNotAllowed", await response.json());
    }
    expect((await check.request(wsPath)).status).toBe(426);
    for (const method of ["HEAD", "POST", "PUT"]) {
      const response = await fetch(`${server.baseUrl}${wsPath}`, { method });
      expect([response.status, response.headers.get("upgrade")], method).toEqual([426, "websocket"]);
    }
    const handshake = (method: string, key: string) =>
      rawHttp(server.baseUrl, `${method} ${wsPath} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n${key}\r\n`);
    const badKey = await handshake("GET", "");
    expect(badKey).toMatch(/^HTTP\/1\.1 400 [^]*content-type: text\/html/i);
    const post405 = await handshake("POST", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n");
    expect(post405).toMatch(/^HTTP\/1\.1 405 [^]*Invalid HTTP method$/);
    expect(post405).not.toMatch(/^allow:/im);
  });

  it("the events and WebSocket messages of a live index validate against their schemas", async () => {
    const live = await createTestDatabase();
    await loadDemoDataset(live.admin);
    const liveServer = await startTestServer(live.url, { STREAM_POLL_INTERVAL_MS: "50", STREAM_ACTIONS_WAIT_MS: "500" });
    // The demo's own live index: recorded traces appended as new masterchain blocks.
    const replay = await startDemoReplay(liveServer.db, 100, 4);
    try {
      const liveCheck = await documentOf(liveServer);
      const traces = (await liveServer.rest("/api/v3/traces?limit=1000")).body as { traces: { transactions?: Record<string, { account: string }> }[] };
      const subscription = {
        types: ["transactions", "actions", "trace", "account_state_change"],
        addresses: [...new Set(traces.traces.flatMap((t) => Object.values(t.transactions ?? {}).map((tx) => tx.account)))],
        trace_external_hash_norms: (await live.admin<{ norm: string }[]>`select distinct external_hash_norm::text as norm from traces where external_hash_norm is not null`).map((row) => row.norm),
        include_address_book: true,
        include_metadata: true,
      };
      const blocks = 3;

      const sse = (async () => {
        const controller = new AbortController();
        const response = await fetch(`${liveServer.baseUrl}${ssePath}`, { method: "POST", body: JSON.stringify(subscription), signal: controller.signal });
        expect(response.status).toBe(200);
        expect(Object.keys(liveCheck.doc.paths[ssePath]?.post?.responses["200"]?.content as Json)).toEqual(["text/event-stream"]);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        const types = new Set<string>();
        let ended = 0;
        try {
          for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
            const data = JSON.parse(event.data) as Json;
            const schema = { connected: "StreamConnected", event: "StreamEvent", heartbeat: "StreamHeartbeat" }[event.event];
            expect(schema, event.event).toBeDefined();
            liveCheck.validateSchema(schema as string, data);
            if (event.event === "event") types.add(data.type as string);
            if (event.event === "event" && !event.id?.includes(":") && ++ended === blocks) break;
          }
        } finally {
          controller.abort();
        }
        return types;
      })();

      const ws = (async () => {
        const client = await openWs(liveServer.baseUrl);
        const send = (message: Json) => {
          liveCheck.validateSchema("StreamWsClientMessage", message);
          client.send(message);
        };
        const next = async () => {
          const message = await client.next();
          liveCheck.validateSchema("StreamWsServerMessage", message);
          return message;
        };
        send({ operation: "ping", id: 1 });
        expect(await next()).toEqual({ id: 1, status: "pong" });
        // Messages the document refuses: the server's answers to them are described.
        client.send({ operation: "nope", id: "n" });
        expect(await next()).toMatchObject({ id: "n", error: expect.any(String) });
        client.send({ operation: "subscribe", id: "bad", ...subscription, min_finality: "confirmed" });
        expect(await next()).toMatchObject({ id: "bad", code: "InvalidArgument" });
        send({ operation: "subscribe", id: "s", ...subscription });
        expect(await next()).toEqual({ id: "s", status: "subscribed" });
        const types = new Set<string>();
        for (let ended = 0; ended < blocks; ) {
          const message = await next();
          types.add(message.type as string);
          if (message.type !== "heartbeat" && !String(message.event_id).includes(":")) ended++;
        }
        send({ operation: "unsubscribe" });
        client.close();
        return types;
      })();

      const [sseTypes, wsTypes] = await Promise.all([sse, ws]);
      for (const types of [sseTypes, wsTypes]) expect([...types].filter((type) => type !== "heartbeat").sort()).toEqual(["account_state_change", "actions", "trace", "transactions"]);
    } finally {
      replay.stop();
      await liveServer.close();
      await live.drop();
    }
  }, 60_000);
});

const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const hasChromium = existsSync(chromiumPath);

describe("/docs in headless Chromium", () => {
  it("draws the four REST operations and the streams' from /openapi.json, with nothing from another origin and no console error", async ({ skip }) => {
    // In CI a missing browser is a failure (.ci/run installs it), never a silent skip.
    if (!hasChromium && process.env.CI) throw new Error(`CI: no Chromium at ${chromiumPath}; .ci/run should have installed Debian's chromium package`);
    if (!hasChromium) console.warn(`skipping the /docs browser test: no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);
    skip(!hasChromium, `no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);

    const browser = await chromium.launch({ executablePath: chromiumPath });
    try {
      const page = await browser.newPage();
      const origin = new URL(server.baseUrl).origin;
      const requested: string[] = [];
      const problems: string[] = [];
      page.on("request", (request) => requested.push(request.url()));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`console: ${message.text()}`);
      });
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("requestfailed", (request) => problems.push(`request failed: ${request.url()}`));
      page.on("response", (response) => {
        if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
      });

      const response = await page.goto(`${server.baseUrl}/docs`);
      expect(response?.status()).toBe(200);
      expect(response?.headers()["content-type"]).toMatch(/^text\/html/);
      for (const path of restPaths) {
        await page.waitForSelector(`.opblock-get .opblock-summary-path[data-path="${path}"]`, { timeout: 20_000 });
      }
      const drawn = await page.$$eval(".opblock-get .opblock-summary-path", (elements) => elements.map((e) => e.textContent));
      expect(drawn).toEqual(expect.arrayContaining([...restPaths, ssePath, wsPath]));
      expect(await page.$$eval(".opblock-post .opblock-summary-path", (elements) => elements.map((e) => e.textContent))).toEqual([ssePath]);
      expect(await page.textContent("body")).toContain("tonquery REST API");

      // Open /traces: its parameters are drawn from the document, with the configured default limit.
      await page.click(`.opblock-get .opblock-summary-path[data-path="/api/v3/traces"]`);
      const limitRow = `.opblock-get.is-open tr[data-param-name="limit"]`;
      await page.waitForSelector(limitRow, { timeout: 10_000 });
      expect(await page.textContent(limitRow)).toContain(`Default value : ${server.config.defaultLimit}`);

      const foreign = requested.filter((url) => !url.startsWith("data:") && new URL(url).origin !== origin);
      expect(foreign).toEqual([]);
      expect(requested).toContain(`${origin}/openapi.json`);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
