import { create, createFileRegistry, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { type FileDescriptorProto, FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v1 from "../gen/grpc/reflection/v1/reflection_pb.ts";
import * as v1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.ts";
import { TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { readRecording } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedMasterchainInfo } from "../src/recordings/recorded.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// Server reflection as clients use it with no copy of proto/: the real buf CLI, run from a directory outside the
// project, and a gRPC reflection client speaking the protocol message by message.

const run = promisify(execFile);
const buf = new URL("../node_modules/.bin/buf", import.meta.url).pathname;
const typedMethods = TonQueryService.methods.map((method) => `${TonQueryService.typeName}/${method.name}`);

let db: TestDatabase;
let server: TestServer;
let recording: RecordedMasterchainInfo;
let elsewhere: string;
beforeAll(async () => {
  db = await createTestDatabase();
  recording = await readRecording<RecordedMasterchainInfo>("masterchainInfo_mainnet_gem_1.json");
  await new IndexLoader().addMasterchainInfo(recording).write(db.admin);
  server = await startTestServer(db.url);
  elsewhere = await mkdtemp(path.join(tmpdir(), "tonquery-reflection-"));
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
  if (elsewhere) await rm(elsewhere, { recursive: true, force: true });
});

/** buf curl with reflection only, run where there is no proto/ and no buf.yaml. */
async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run(buf, ["curl", ...args], { cwd: elsewhere });
  return stdout;
}

const grpc = ["--protocol", "grpc", "--http2-prior-knowledge"];

function expectAllMethods(listed: string): void {
  const methods = listed.trim().split("\n");
  expect(methods).toEqual(expect.arrayContaining([...typedMethods, "grpc.health.v1.Health/Check", "grpc.health.v1.Health/Watch"]));
  expect(methods).toContain("grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
  expect(methods).toContain("grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
}

function expectMasterchainInfo(output: string): void {
  const answer = JSON.parse(output) as { first: { seqno: number }; last: { seqno: number } };
  expect([answer.first.seqno, answer.last.seqno]).toEqual([recording.first.seqno, recording.last.seqno]);
}

describe.each(["grpc-v1", "grpc-v1alpha"])("buf curl over gRPC with reflection %s, from another directory", (reflectProtocol) => {
  it("lists the typed API's methods, health and reflection", async () => {
    expectAllMethods(await bufCurl(...grpc, "--reflect-protocol", reflectProtocol, "--list-methods", server.baseUrl));
  });

  it("calls a method without --schema", async () => {
    expectMasterchainInfo(await bufCurl(...grpc, "--reflect-protocol", reflectProtocol, "-d", "{}", `${server.baseUrl}/${TonQueryService.typeName}/GetMasterchainInfo`));
  });
});

describe("buf curl over HTTP/1.1, from another directory", () => {
  it("lists the methods with buf's defaults (Connect)", async () => {
    expectAllMethods(await bufCurl("--list-methods", server.baseUrl));
  });

  it("calls a method over gRPC-web without --schema", async () => {
    expectMasterchainInfo(await bufCurl("--protocol", "grpcweb", `${server.baseUrl}/${TonQueryService.typeName}/GetMasterchainInfo`));
  });
});

describe("the reflection protocol, request by request", () => {
  type Request = MessageInitShape<typeof v1.ServerReflectionRequestSchema>;
  const exchange = async (...requests: Request[]): Promise<v1.ServerReflectionResponse[]> => {
    const client = createClient(v1.ServerReflection, createGrpcTransport({ baseUrl: server.baseUrl }));
    async function* sent() {
      for (const request of requests) yield create(v1.ServerReflectionRequestSchema, request);
    }
    const answers: v1.ServerReflectionResponse[] = [];
    for await (const answer of client.serverReflectionInfo(sent())) answers.push(answer);
    return answers;
  };
  const files = (answer: v1.ServerReflectionResponse | undefined) =>
    answer?.messageResponse.case === "fileDescriptorResponse" ? answer.messageResponse.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes)) : [];
  const errorOf = (answer: v1.ServerReflectionResponse | undefined) => (answer?.messageResponse.case === "errorResponse" ? answer.messageResponse.value : undefined);

  it("lists every service served, sorted", async () => {
    const [answer] = await exchange({ host: "example", messageRequest: { case: "listServices", value: "" } });
    expect(answer?.validHost).toBe("example");
    expect(answer?.originalRequest?.messageRequest.case).toBe("listServices");
    expect(answer?.messageResponse.case === "listServicesResponse" && answer.messageResponse.value.service.map((s) => s.name)).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      TonQueryService.typeName,
    ]);
  });

  it("answers a symbol with its file and every file it imports, once per stream, enough to call every method", async () => {
    const [bySymbol, byName, byMethod] = await exchange(
      { messageRequest: { case: "fileContainingSymbol", value: TonQueryService.typeName } },
      { messageRequest: { case: "fileByFilename", value: "tonquery/v1/block.proto" } },
      { messageRequest: { case: "fileContainingSymbol", value: `${TonQueryService.typeName}.GetTraces` } },
    );
    const all = files(bySymbol);
    expect(all[0]?.name).toBe("tonquery/v1/service.proto");
    expect(all.map((file) => file.name)).toEqual(expect.arrayContaining(["tonquery/v1/block.proto", "tonquery/v1/trace.proto", "google/protobuf/struct.proto"]));
    // Already sent on this stream as a dependency: only the file asked for comes again.
    expect(files(byName).map((file) => file.name)).toEqual(["tonquery/v1/block.proto"]);
    expect(files(byMethod).map((file) => file.name)).toEqual(["tonquery/v1/service.proto"]);

    // Imports before importers, as a FileDescriptorSet lists them: a client can build its registry from what came.
    const ordered: FileDescriptorProto[] = [];
    const visit = (name: string) => {
      const file = all.find((candidate) => candidate.name === name);
      if (file === undefined) throw new Error(`${name} was not sent`);
      if (ordered.includes(file)) return;
      file.dependency.forEach(visit);
      ordered.push(file);
    };
    visit("tonquery/v1/service.proto");
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: ordered }));
    const described = registry.getService(TonQueryService.typeName);
    expect(described?.methods.map((method) => [method.name, method.input.typeName, method.output.typeName])).toEqual(
      TonQueryService.methods.map((method) => [method.name, method.input.typeName, method.output.typeName]),
    );
  });

  it("finds nested names: fields, enum values", async () => {
    const [field, enumValue] = await exchange(
      { messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckRequest.service" } },
      { messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.SERVING" } },
    );
    expect(files(field)[0]?.package).toBe("grpc.health.v1");
    expect(files(enumValue)[0]?.package).toBe("grpc.health.v1");
  });

  it("answers what it does not know with an error response and keeps the stream", async () => {
    const answers = await exchange(
      { messageRequest: { case: "fileContainingSymbol", value: "tonquery.v1.Nope" } },
      { messageRequest: { case: "fileByFilename", value: "nope.proto" } },
      { messageRequest: { case: "fileContainingExtension", value: { containingType: "google.protobuf.Struct", extensionNumber: 1000 } } },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "tonquery.v1.Nope" } },
      {},
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.Struct" } },
    );
    expect(answers.slice(0, 5).map((answer) => errorOf(answer)?.errorCode)).toEqual([Code.NotFound, Code.NotFound, Code.NotFound, Code.NotFound, Code.InvalidArgument]);
    expect(errorOf(answers[0])?.errorMessage).toBe("symbol not found: tonquery.v1.Nope");
    const last = answers[5]?.messageResponse;
    expect(last?.case === "allExtensionNumbersResponse" && last.value).toMatchObject({ baseTypeName: "google.protobuf.Struct", extensionNumber: [] });
  });

  it("speaks v1alpha too", async () => {
    const client = createClient(v1alpha.ServerReflection, createGrpcTransport({ baseUrl: server.baseUrl }));
    async function* sent() {
      yield create(v1alpha.ServerReflectionRequestSchema, { messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.Health" } });
    }
    const answers: v1alpha.ServerReflectionResponse[] = [];
    for await (const answer of client.serverReflectionInfo(sent())) answers.push(answer);
    expect(answers[0]?.$typeName).toBe("grpc.reflection.v1alpha.ServerReflectionResponse");
    const response = answers[0]?.messageResponse;
    const names = response?.case === "fileDescriptorResponse" ? response.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name) : [];
    expect(names).toEqual(["health/v1/health.proto"]);
  });
});
