import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { startTracing } from "../src/observability/tracing.ts";

// Tracing as an operator turns it on: the real server process (`npm start`'s entry, demo database) with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver started here, which decodes what the SDK's exporter
// posts to /v1/traces. OTEL_EXPORTER_OTLP_PROTOCOL=http/json (the SDK's default is http/protobuf): the SDK honours
// it, and JSON is what the receiver can read without the OTLP schema.

const projectRoot = new URL("..", import.meta.url).pathname;
const probe = new URL("./support/otel-sdk-probe.ts", import.meta.url).pathname;

interface Attribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean };
}
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind: number;
  attributes: Attribute[];
  status?: { code?: number };
  resource: Record<string, unknown>;
}
interface OtlpTraces {
  resourceSpans: { resource: { attributes: Attribute[] }; scopeSpans: { spans: Omit<ExportedSpan, "resource">[] }[] }[];
}

/** OTLP/JSON's SPAN_KIND_SERVER and SPAN_KIND_CLIENT. */
const kindServer = 2;
const kindClient = 3;

function attributes(list: Attribute[]): Record<string, unknown> {
  return Object.fromEntries(list.map((a) => [a.key, a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue)]));
}

interface Receiver {
  url: string;
  spans: ExportedSpan[];
  contentTypes: string[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const spans: ExportedSpan[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(req.headers["content-type"] ?? "");
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpTraces;
      for (const resourceSpans of body.resourceSpans) {
        const resource = attributes(resourceSpans.resource.attributes);
        for (const scope of resourceSpans.scopeSpans) for (const span of scope.spans) spans.push({ ...span, resource });
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, contentTypes, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

interface Started {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  baseUrl: string;
}

/** The service's entry with the demo database, the SDK probe preloaded; resolves once it is listening. */
async function startService(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ["--import", probe, "src/main.ts"], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", HOST: "127.0.0.1", PORT: "0", ACCESS_LOG: "false", ...env },
  });
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  child.stdout.resume();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = err.split("\n").find((line) => line.includes('"message":"tonquery ready"'));
    if (ready !== undefined) return { child, stderr: () => err, baseUrl: (JSON.parse(ready) as { url: string }).url };
    if (child.exitCode !== null) throw new Error(`exited early: ${err}`);
    if (Date.now() > deadline) throw new Error(`not ready in time: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stop(started: Started | undefined): Promise<void> {
  if (started === undefined || started.child.exitCode !== null) return;
  const exited = new Promise((resolve) => started.child.once("exit", resolve));
  started.child.kill("SIGTERM");
  await exited;
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

describe("tracing", () => {
  let receiver: Receiver;
  let traced: Started;
  let untraced: Started;

  beforeAll(async () => {
    receiver = await startReceiver();
    [traced, untraced] = await Promise.all([
      startService({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "tonquery-tracing-test",
        OTEL_BSP_SCHEDULE_DELAY: "50",
      }),
      startService({}),
    ]);
  });
  afterAll(async () => {
    await Promise.all([stop(traced), stop(untraced)]);
    await receiver?.close();
  });

  /** The spans of trace `traceId` once its server span has arrived (the exporter sends every 50 ms). */
  async function traceOf(traceId: string): Promise<ExportedSpan[]> {
    const deadline = Date.now() + 10_000;
    const mine = () => receiver.spans.filter((s) => s.traceId === traceId);
    while (!mine().some((s) => s.kind === kindServer) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    return mine();
  }

  it("exports a server span per REST request, continuing the caller's trace, with a child span per SQL statement", async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const response = await fetch(`${traced.baseUrl}/api/v3/masterchainInfo`, { headers: { traceparent: `00-${traceId}-${callerSpanId}-01`, tracestate: "caller=1" } });
    expect(response.status).toBe(200);

    const spans = await traceOf(traceId);
    const server = spans.find((s) => s.kind === kindServer);
    expect(server).toMatchObject({ name: "GetMasterchainInfo", parentSpanId: callerSpanId, traceState: "caller=1" });
    expect(attributes(server?.attributes ?? [])).toMatchObject({
      "tonquery.door": "rest",
      "tonquery.operation": "GetMasterchainInfo",
      "http.request.method": "GET",
      "url.path": "/api/v3/masterchainInfo",
      "http.response.status_code": 200,
      "tonquery.request_id": response.headers.get("x-request-id"),
    });
    expect(server?.resource["service.name"]).toBe("tonquery-tracing-test");

    const statements = spans.filter((s) => s.kind === kindClient);
    expect(statements.map((s) => s.name)).toEqual(["masterchain_range"]);
    expect(statements[0]?.parentSpanId).toBe(server?.spanId);
    // The statement's name and system, never its text or parameter values.
    expect(attributes(statements[0]?.attributes ?? [])).toEqual({ "db.system": "postgresql", "db.system.name": "postgresql", "db.query.summary": "masterchain_range" });
    expect(receiver.contentTypes.every((type) => type === "application/json")).toBe(true);
  });

  it("exports a server span per gRPC call with its code, and a span per statement of a many-statement request", async () => {
    const traceId = hex(16);
    const callerSpanId = hex(8);
    const client = createClient(TonQueryService, createGrpcTransport({ baseUrl: traced.baseUrl }));
    // A recorded wallet transfer of the demo dataset and its trace: several statements.
    await client.getTraces({ txHash: ["79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f"] }, { headers: { traceparent: `00-${traceId}-${callerSpanId}-01` } });

    const spans = await traceOf(traceId);
    const server = spans.find((s) => s.kind === kindServer);
    expect(server).toMatchObject({ name: "GetTraces", parentSpanId: callerSpanId });
    expect(attributes(server?.attributes ?? [])).toMatchObject({ "tonquery.door": "grpc", "rpc.system": "grpc", "rpc.method": "GetTraces", "rpc.response.status_code": "OK" });
    const statements = spans.filter((s) => s.kind === kindClient);
    expect(statements.length).toBeGreaterThan(2);
    expect(new Set(statements.map((s) => s.parentSpanId))).toEqual(new Set([server?.spanId]));
    expect(statements.map((s) => s.name)).toContain("trace_transactions");
  });

  it("starts a trace of its own without a traceparent, and records none for an unsampled caller", async () => {
    const unsampled = hex(16);
    await fetch(`${traced.baseUrl}/api/v3/masterchainInfo`, { headers: { traceparent: `00-${unsampled}-${hex(8)}-00` } });
    const response = await fetch(`${traced.baseUrl}/api/v3/masterchainInfo`, { headers: { "x-request-id": "own-trace" } });
    expect(response.status).toBe(200);
    const deadline = Date.now() + 10_000;
    const own = () => receiver.spans.find((s) => s.kind === kindServer && attributes(s.attributes)["tonquery.request_id"] === "own-trace");
    while (own() === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(own()?.parentSpanId ?? "").toBe("");
    // The unsampled request came first: spans are exported in the order they end, so it would have arrived by now.
    expect(receiver.spans.filter((s) => s.traceId === unsampled)).toEqual([]);
  });

  it("loads the SDK only when an OTLP endpoint is set", async () => {
    expect((await fetch(`${untraced.baseUrl}/api/v3/masterchainInfo`)).status).toBe(200);
    expect(untraced.stderr()).toContain('"tracing":"off"');
    expect(untraced.stderr()).not.toContain("otel-sdk-module");
    expect(traced.stderr()).toContain('"tracing":"OTLP"');
    expect(traced.stderr()).toMatch(/otel-sdk-module \S+\/@opentelemetry\/sdk-node\//);
    expect(await startTracing(loadConfig({}))).toBeUndefined();
    expect(await startTracing(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: " ", OTEL_SERVICE_NAME: "x" }))).toBeUndefined();
    const disabled = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: "true" };
    expect(await startTracing(loadConfig(disabled), disabled)).toBeUndefined();
  });
});
