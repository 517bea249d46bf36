import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { publicErrors } from "../src/server/errors.ts";
import { loadConfig } from "../src/runtime/config.ts";
import type { StreamHub } from "../src/streams/hub.ts";
import { streamingDoors } from "../src/streams/rest.ts";
import { openSse, openWs, sseEvents } from "./support/stream-clients.ts";

// The streaming doors (REST and RPC) answer a failure they did not expect (a bug, a driver's plain Error) as every other door does:
// "internal error", its details in the log, never in the answer. The hub here fails with such an error, whose message
// stands for what must not leave the server (SQL, hosts, paths).

const secret = "relation \"blocks\" at 10.0.0.7:5432 said no";
const subscription = { types: ["transactions"], addresses: ["0:64BBFE7CD6D7EB61728F1F09824DC7DAAB95C3110A260908F0B482C223DA132C"] };

/** A hub that admits no stream, or admits it and then fails its stream: both with a plain Error. */
function failingHub(where: "admit" | "stream"): StreamHub {
  return {
    admit: async () => {
      if (where === "admit") throw new Error(secret);
    },
    open: async function* () {
      throw new Error(secret);
    },
  } as unknown as StreamHub;
}

async function serve(hub: StreamHub): Promise<{ baseUrl: string; server: Server }> {
  const doors = streamingDoors(hub, loadConfig({}), (_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const server = createServer((req, res) => void doors.http(req, res));
  server.on("upgrade", (req, socket, head) => doors.upgrade(req, socket, head));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("the streaming doors' unexpected failures", () => {
  const servers: Server[] = [];
  let refusing: string;
  let failing: string;
  beforeAll(async () => {
    const a = await serve(failingHub("admit"));
    const b = await serve(failingHub("stream"));
    servers.push(a.server, b.server);
    refusing = a.baseUrl;
    failing = b.baseUrl;
  });
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("SSE: a subscription that fails to be admitted gets a 500 saying internal error, nothing of the cause", async () => {
    const response = await openSse(refusing, subscription);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: "internal error", code: "Internal" });
  });

  it("SSE: a stream that fails gets an error event saying internal error, nothing of the cause", async () => {
    const response = await openSse(failing, subscription);
    expect(response.status).toBe(200);
    const events = [];
    for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) events.push(event);
    expect(events.map((event) => event.event)).toEqual(["connected", "error"]);
    expect(JSON.parse(events[1]?.data ?? "null")).toEqual({ error: "internal error", code: "Internal" });
  });

  it.each([
    ["refused", () => refusing],
    ["failing", () => failing],
  ])("WebSocket: a %s subscription is answered with internal error, nothing of the cause", async (_name, baseUrl) => {
    const ws = await openWs(baseUrl());
    try {
      ws.send({ id: "1", operation: "subscribe", ...subscription });
      let message = await ws.next();
      if (message.status === "subscribed") message = await ws.next();
      expect(message).toEqual({ id: "1", error: "internal error", code: "Internal" });
    } finally {
      ws.close();
    }
  });
});

describe("the RPC doors' unexpected failures", () => {
  const method = TonQueryService.method.streamTraces;
  const request = { method, service: TonQueryService } as unknown as Parameters<ReturnType<typeof publicErrors>>[0];

  it("a unary or streaming call failing before its answer: internal error, nothing of the cause", async () => {
    const failing = publicErrors(async () => {
      throw new Error(secret);
    });
    await expect(failing(request)).rejects.toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
  });

  it("a stream failing after its first message: internal error, nothing of the cause", async () => {
    const messages = async function* () {
      yield { position: 1n };
      throw new Error(secret);
    };
    const response = await publicErrors(async () => ({ stream: true, message: messages() }) as never)(request);
    const received: unknown[] = [];
    const failure = await (async () => {
      for await (const message of (response as unknown as { message: AsyncIterable<unknown> }).message) received.push(message);
    })().catch((err: unknown) => err);
    expect(received).toHaveLength(1);
    expect(failure).toBeInstanceOf(ConnectError);
    expect(failure).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
  });
});
