import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetMasterchainInfoRequestSchema, TonQueryService } from "../gen/tonquery/v1/service_pb.ts";
import { loadConfig } from "../src/runtime/config.ts";
import { readRecording } from "../src/demo/dataset.ts";
import { IndexLoader } from "../src/recordings/loader.ts";
import type { RecordedMasterchainInfo } from "../src/recordings/recorded.ts";
import { getMasterchainInfo } from "../src/handlers/masterchain-info.ts";
import { presentMasterchainInfo } from "../src/present/v3/block.ts";
import { selectMasterchainRange } from "../src/db/blocks.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { rpcProtocols, startTestServer, type TestServer } from "./support/server.ts";

const recordings = ["masterchainInfo_mainnet_gem_1.json", "masterchainInfo_testnet_crosschain_1.json"];

describe.each(recordings)("masterchainInfo reproduces %s", (file) => {
  let db: TestDatabase;
  let server: TestServer;
  let recording: RecordedMasterchainInfo;

  beforeAll(async () => {
    recording = await readRecording<RecordedMasterchainInfo>(file);
    db = await createTestDatabase();
    await new IndexLoader().addMasterchainInfo(recording).write(db.admin);
    server = await startTestServer(db.url);
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it("answers GET /api/v3/masterchainInfo exactly as recorded", async () => {
    const { status, body, headers } = await server.rest("/api/v3/masterchainInfo");
    expect(status).toBe(200);
    expect(headers.get("content-type")).toMatch(/^application\/json/);
    expect(body).toEqual(recording);
  });

  it.each(rpcProtocols)("returns the same blocks over %s", async (protocol) => {
    const response = await server.client(protocol).getMasterchainInfo({});
    expect(response.first?.shard).toBe("-9223372036854775808");
    expect(response.last?.seqno).toBe(recording.last.seqno);
    expect(presentMasterchainInfo(response)).toEqual(recording);
  });

  it("works as a plain function with a handler context", async () => {
    const context = createHandlerContext({
      service: TonQueryService,
      method: TonQueryService.method.getMasterchainInfo,
      protocolName: "test",
      requestMethod: "POST",
      url: "/tonquery.v1.TonQueryService/GetMasterchainInfo",
    });
    const response = await getMasterchainInfo(
      { db: server.db, config: loadConfig({}) },
      create(GetMasterchainInfoRequestSchema),
      context,
    );
    expect(response.first?.seqno).toBe(recording.first.seqno);
    expect(response.last?.rootHash).toBe(recording.last.root_hash);
  });

  it("answers requests that arrive together with fewer reads than requests, each answer exact", async () => {
    const statements = async () => (await scrapeMetrics(server.baseUrl)).count("tonquery_db_statement_duration_seconds", { statement: "masterchain_range" });
    const requests = 40;
    // On a busy machine the client may send one burst slowly enough that each read ends before the next request
    // arrives: a read can only be shared by requests that overlap it. Without sharing, no burst could ever need
    // fewer reads than requests; with it, one of a few bursts does.
    const readsPerBurst: number[] = [];
    for (let burst = 0; burst < 5 && !readsPerBurst.some((reads) => reads < requests); burst++) {
      const before = await statements();
      const answers = await Promise.all(Array.from({ length: requests }, () => server.rest("/api/v3/masterchainInfo")));
      for (const answer of answers) expect(answer.body).toEqual(recording);
      const reads = (await statements()) - before;
      expect(reads).toBeGreaterThanOrEqual(1);
      readsPerBurst.push(reads);
    }
    expect(Math.min(...readsPerBurst)).toBeLessThan(requests);
  });

  it("reads the same two blocks into the same range, and a block written again with another root hash into a new one", async () => {
    const read = () => selectMasterchainRange(server.db.sql, new AbortController().signal);
    const range = await read();
    // What the doors make of a range (REST's JSON and ETag) is made once per range object.
    expect(await read()).toBe(range);
    const rewritten = "R".repeat(43) + "=";
    await db.admin`update blocks set root_hash = ${rewritten} where workchain = -1 and seqno = ${recording.last.seqno}`;
    try {
      const changed = await read();
      expect(changed).not.toBe(range);
      expect(changed?.last.rootHash).toBe(rewritten);
      expect(((await server.rest("/api/v3/masterchainInfo")).body as RecordedMasterchainInfo).last.root_hash).toBe(rewritten);
    } finally {
      await db.admin`update blocks set root_hash = ${recording.last.root_hash} where workchain = -1 and seqno = ${recording.last.seqno}`;
    }
    expect((await server.rest("/api/v3/masterchainInfo")).body).toEqual(recording);
  });

  it("never answers a request with a block range read before the request was sent", async () => {
    // Other clients poll all along, so that reads are under way whenever a block is written.
    let polling = true;
    const pollers = Array.from({ length: 8 }, async () => {
      while (polling) expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(200);
    });
    try {
      for (let step = 1; step <= 20; step++) {
        const seqno = recording.last.seqno + step;
        await new IndexLoader().addBlock({ ...recording.last, seqno }).write(db.admin);
        const { body } = await server.rest("/api/v3/masterchainInfo");
        expect((body as RecordedMasterchainInfo).last.seqno).toBe(seqno);
      }
    } finally {
      polling = false;
      await Promise.all(pollers);
    }
  });
});

describe("masterchainInfo on an index without blocks", () => {
  let db: TestDatabase;
  let server: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startTestServer(db.url);
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it("answers REST with 404 and a clear error", async () => {
    const { status, body } = await server.rest("/api/v3/masterchainInfo");
    expect(status).toBe(404);
    expect(body).toEqual({ error: "no blocks indexed: the database holds no masterchain block yet" });
  });

  it.each(rpcProtocols)("answers %s with NotFound", async (protocol) => {
    const failure = await server.client(protocol).getMasterchainInfo({}).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.NotFound);
    expect((failure as ConnectError).rawMessage).toBe("no blocks indexed: the database holds no masterchain block yet");
  });

  it("ignores shard blocks when looking for masterchain ones", async () => {
    const recording = await readRecording<RecordedMasterchainInfo>("masterchainInfo_mainnet_gem_1.json");
    const shardBlock = { ...recording.last, workchain: 0, shard: "8000000000000000", masterchain_block_ref: null, prev_blocks: [] };
    await new IndexLoader().addBlock(shardBlock).write(db.admin);
    expect((await server.rest("/api/v3/masterchainInfo")).status).toBe(404);
  });
});
