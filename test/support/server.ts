import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import { loadConfig, type Config } from "../../src/runtime/config.ts";
import { databaseOptions, openDatabase, type Database, type Sql } from "../../src/db/client.ts";
import { testEngine } from "./database.ts";
import { createServer, type Server } from "../../src/server/server.ts";
import { Telemetry } from "../../src/observability/telemetry.ts";

export type RpcProtocol = "connect" | "grpc" | "grpc-web";
export const rpcProtocols: RpcProtocol[] = ["connect", "grpc", "grpc-web"];

export interface TestServer {
  baseUrl: string;
  config: Config;
  server: Server;
  telemetry: Telemetry;
  db: Database;
  /** The prepared-statement pool of `db`. */
  sql: Sql;
  client(protocol: RpcProtocol): Client<typeof TonQueryService>;
  /** The transport `client` uses, for clients of the server's other services. */
  transport(protocol: RpcProtocol): Transport;
  /** GET a REST path; returns the status and the parsed JSON body. */
  rest(pathAndQuery: string): Promise<{ status: number; body: unknown; headers: Headers }>;
  close(): Promise<void>;
}

/**
 * The real server, listening on a free loopback port, reading `databaseUrl` as the service does. Without an access
 * log unless `env` asks for one: the suite's thousands of requests would bury the lines that matter.
 */
export async function startTestServer(databaseUrl: string, env: Record<string, string> = {}): Promise<TestServer> {
  // No release under memory pressure: the resident set is the test runner's, and a release's pause would land in
  // whichever test is running (test/memory-release.test.ts covers it).
  const config = loadConfig({ HOST: "127.0.0.1", PORT: "0", SHUTDOWN_TIMEOUT_MS: "2000", ACCESS_LOG: "false", MEMORY_SOFT_LIMIT_MB: "0", ...env });
  const telemetry = new Telemetry();
  const db = openDatabase(databaseOptions(config, databaseUrl, { sharedSession: (await testEngine()) === "pglite", telemetry }));
  const server = createServer({ db, config, telemetry });
  const address = await server.listen(0, "127.0.0.1");
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const transports: Record<RpcProtocol, Transport> = {
    connect: createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    grpc: createGrpcTransport({ baseUrl }),
    "grpc-web": createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  };
  return {
    baseUrl,
    config,
    server,
    telemetry,
    db,
    sql: db.sql,
    client: (protocol) => createClient(TonQueryService, transports[protocol]),
    transport: (protocol) => transports[protocol],
    async rest(pathAndQuery) {
      const response = await fetch(`${baseUrl}${pathAndQuery}`);
      const text = await response.text();
      return { status: response.status, body: text === "" ? undefined : (JSON.parse(text) as unknown), headers: response.headers };
    },
    async close() {
      await server.close();
      await db.end();
    },
  };
}
