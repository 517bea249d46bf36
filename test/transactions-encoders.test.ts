import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  Direction,
  GetAdjacentTransactionsRequestSchema,
  GetAdjacentTransactionsResponseSchema,
  type GetBlockTransactionsExtRequest,
  GetBlockTransactionsExtRequestSchema,
  GetBlockTransactionsExtResponseSchema,
  TonQueryService,
} from "../gen/tonquery/v1/service_pb.ts";
import { rawTransactionFees } from "../src/db/block-transactions.ts";
import { computeGas, type MessageRow, type TransactionRow } from "../src/db/transactions.ts";
import { blockTransactionsExtBinary } from "../src/encode/proto/block-transactions.ts";
import { adjacentTransactionsBinary } from "../src/encode/proto/transactions.ts";
import { writeBlockTransactionsExt } from "../src/encode/v2-json/block-transactions.ts";
import { writeTransactionsResponse } from "../src/encode/v3-json/transactions.ts";
import { getAdjacentTransactions, loadAdjacentTransactions } from "../src/handlers/adjacent-transactions.ts";
import { getBlockTransactionsExt, loadBlockTransactionsExt } from "../src/handlers/block-transactions-ext.ts";
import { jsonBytes } from "../src/present/json-text.ts";
import { presentBlockTransactionsExt } from "../src/present/v2/block-transactions.ts";
import { presentTransactionsResponse } from "../src/present/v3/transaction.ts";
import type { TestDatabase } from "./support/database.ts";
import { testEngine } from "./support/database.ts";
import { generatedIndex, recordedIndex, serviceDeps } from "./support/encoder-indexes.ts";
import { binaryOf } from "../src/encode/proto/own-encoding.ts";

// The encoders that write /api/v3/adjacentTransactions (src/encode/v3-json/transactions.ts), /api/v2/
// getBlockTransactionsExt (src/encode/v2-json/) and the binary protobuf of GetAdjacentTransactionsResponse and
// GetBlockTransactionsExtResponse (src/encode/proto/transactions.ts, block-transactions.ts) from the rows the data layer read, against what the doors printed before
// them: the presenters' JSON of the typed API's messages, and toBinary of the message. Byte for byte, on every
// recorded transaction and block, and on a generated chain with a few blocks of thousands of transactions.

type Deps = ReturnType<typeof serviceDeps>;

function context(method: "getAdjacentTransactions" | "getBlockTransactionsExt") {
  return createHandlerContext({
    service: TonQueryService,
    method: TonQueryService.method[method],
    protocolName: "test",
    requestMethod: "POST",
    url: `/tonquery.v1.TonQueryService/${method}`,
  });
}

/** The code a call failed with, or undefined when it answered. */
async function failure(call: Promise<unknown>): Promise<Code | undefined> {
  try {
    await call;
    return undefined;
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

interface AdjacentTally {
  answers: number;
  notFound: number;
  /** Answers holding a decoded body. */
  decoded: number;
}

/** Each transaction's adjacent transactions in every direction: the encoder's answer against the presenter's. */
async function compareAdjacent(deps: Deps, hashes: readonly string[]): Promise<AdjacentTally> {
  const tally: AdjacentTally = { answers: 0, notFound: 0, decoded: 0 };
  const directions = [Direction.UNSPECIFIED, Direction.IN, Direction.OUT];
  // The three directions of a transaction at once: the statements' round trips are most of the time.
  for (const hash of hashes) {
    await Promise.all(directions.map(async (direction) => {
      const request = create(GetAdjacentTransactionsRequestSchema, { hash, direction });
      const reference = await getAdjacentTransactions(deps, request, context("getAdjacentTransactions")).catch((err: unknown) => ConnectError.from(err));
      if (reference instanceof ConnectError) {
        expect(reference.code).toBe(Code.NotFound);
        expect(await failure(loadAdjacentTransactions(deps, request, context("getAdjacentTransactions")))).toBe(Code.NotFound);
        tally.notFound++;
        return;
      }
      const loaded = await loadAdjacentTransactions(deps, request, context("getAdjacentTransactions"));
      const ours = Buffer.concat(writeTransactionsResponse(loaded)).toString();
      expect(ours, `${hash} ${direction}`).toBe(jsonBytes(presentTransactionsResponse(reference)).toString());
      const binary = binaryOf(GetAdjacentTransactionsResponseSchema, adjacentTransactionsBinary(loaded));
      expect(Buffer.from(binary).equals(toBinary(GetAdjacentTransactionsResponseSchema, reference)), `${hash} ${direction} binary`).toBe(true);
      tally.answers++;
      if (ours.includes(`"decoded":{`)) tally.decoded++;
    }));
  }
  return tally;
}

interface BlockTally {
  pages: number;
  /** Pages asked for after an (after_lt, after_hash) cursor. */
  afterCursor: number;
  incomplete: number;
  transactions: number;
  /** Transactions without an inbound message (tick-tock). */
  withoutInMsg: number;
}

type BlockId = Pick<GetBlockTransactionsExtRequest, "workchain" | "shard" | "seqno">;

/** The time the v2 stamp is printed for: the presenter reads the clock, the encoder is handed it. */
const stampTime = 1_780_000_000_123;

/** One page, every way it is written: v2 JSON (and what its ETag covers) and binary protobuf. */
async function comparePage(deps: Deps, request: GetBlockTransactionsExtRequest, tally: BlockTally) {
  const response = await getBlockTransactionsExt(deps, request, context("getBlockTransactionsExt"));
  const clock = vi.spyOn(Date, "now").mockReturnValue(stampTime);
  let reference: Buffer;
  try {
    reference = jsonBytes({ ok: true, result: presentBlockTransactionsExt(response) });
  } finally {
    clock.mockRestore();
  }
  const loaded = await loadBlockTransactionsExt(deps, request, context("getBlockTransactionsExt"));
  const { content, stamp } = writeBlockTransactionsExt(loaded, stampTime);
  const label = `${request.workchain},${request.shard},${request.seqno} count ${request.count} after ${request.afterLt}`;
  expect(Buffer.concat([...content, stamp]).toString(), label).toBe(reference.toString());
  // The ETag is computed over `content`: the body up to the stamp, as withoutV2Stamp (src/rest/router.ts) cuts it.
  expect(Buffer.concat(content).equals(reference.subarray(0, reference.lastIndexOf(',"@extra":"'))), label).toBe(true);
  const binary = Buffer.from(binaryOf(GetBlockTransactionsExtResponseSchema, blockTransactionsExtBinary(loaded)));
  expect(binary.equals(Buffer.from(toBinary(GetBlockTransactionsExtResponseSchema, response))), label).toBe(true);

  tally.pages++;
  if (request.afterLt !== undefined) tally.afterCursor++;
  if (response.incomplete) tally.incomplete++;
  tally.transactions += response.transactions.length;
  tally.withoutInMsg += response.transactions.filter((tx) => tx.inMsg === undefined).length;
  return response;
}

/** Each block paged through with each count (up to `maxPages` pages), following the (after_lt, after_hash) cursor. */
async function compareBlocks(deps: Deps, blocks: readonly BlockId[], counts: readonly number[], maxPages = Number.POSITIVE_INFINITY): Promise<BlockTally> {
  const tally: BlockTally = { pages: 0, afterCursor: 0, incomplete: 0, transactions: 0, withoutInMsg: 0 };
  for (const block of blocks) {
    for (const count of counts) {
      let after: Pick<GetBlockTransactionsExtRequest, "afterLt" | "afterHash"> = {};
      for (let page = 0; page < maxPages; page++) {
        const response = await comparePage(deps, create(GetBlockTransactionsExtRequestSchema, { ...block, count, ...after }), tally);
        const last = response.transactions.at(-1);
        if (!response.incomplete || last === undefined) break;
        after = { afterLt: last.transactionId?.lt, afterHash: last.account };
      }
    }
  }
  return tally;
}

async function blocksOf(db: TestDatabase): Promise<BlockId[]> {
  return db.admin<BlockId[]>`
    select workchain, shard::text as shard, seqno from blocks where workchain is not null order by workchain, shard, seqno`;
}

async function transactionHashes(db: TestDatabase, every = 1): Promise<string[]> {
  const rows = await db.admin<{ hash: string }[]>`select hash from transactions order by lt, hash`;
  return rows.map((row) => row.hash).filter((_, index) => index % every === 0);
}

describe("tonlib's fees of a transaction", () => {
  it("are the sums BigInt makes, whether they are summed as numbers (below 10^13) or not", () => {
    const amount = fc.oneof(
      fc.constant(null),
      fc.bigInt({ min: 0n, max: 10n ** 13n - 1n }).map(String),
      fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String),
    );
    const message = amount.chain((fwd) => amount.map((ihr) => ({ fwd_fee: fwd, ihr_fee: ihr }) as MessageRow));
    fc.assert(
      fc.property(amount, amount, fc.array(message, { maxLength: 300 }), (total, storage, outMsgs) => {
        const row = { total_fees: total, storage_fees_collected: storage } as TransactionRow;
        const fee = outMsgs.reduce((sum, m) => sum + BigInt(m.fwd_fee ?? "0") + BigInt(m.ihr_fee ?? "0"), BigInt(total ?? "0"));
        const storageFee = BigInt(storage ?? "0");
        expect(rawTransactionFees(row, outMsgs)).toEqual({ fee: String(fee), storageFee: String(storageFee), otherFee: String(fee - storageFee) });
      }),
      { numRuns: 300 },
    );
  });
});

describe("gas fees and gas used", () => {
  it("are swapped back exactly when BigInt finds fees below used, at any lengths and signs", () => {
    const amount = fc.oneof(fc.constant(null), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String), fc.bigInt({ min: 0n, max: 10n ** 6n }).map(String));
    fc.assert(
      fc.property(amount, amount, (fees, used) => {
        const swapped = fees !== null && used !== null && fees !== "0" && BigInt(fees) < BigInt(used);
        const row = { compute_gas_fees: fees, compute_gas_used: used } as TransactionRow;
        expect(computeGas(row)).toEqual(swapped ? { gasFees: used, gasUsed: fees } : { gasFees: fees, gasUsed: used });
      }),
      { numRuns: 2000 },
    );
    expect(computeGas({ compute_gas_fees: "999", compute_gas_used: "1000" } as TransactionRow)).toEqual({ gasFees: "1000", gasUsed: "999" });
    expect(computeGas({ compute_gas_fees: "1000", compute_gas_used: "999" } as TransactionRow)).toEqual({ gasFees: "1000", gasUsed: "999" });
  });
});

describe("the transactions encoders, on the recordings", () => {
  let db: TestDatabase;
  const opened: Deps[] = [];
  const deps = (env: Record<string, string> = {}) => {
    const made = serviceDeps(db, env);
    opened.push(made);
    return made;
  };

  beforeAll(async () => {
    db = await recordedIndex();
  });
  afterAll(async () => {
    for (const { db: open } of opened) await open.end();
    await db?.drop();
  });

  it("print every recorded transaction's adjacent transactions as the presenters do, bodies decoded or not", async () => {
    const hashes = await transactionHashes(db);
    const decoded = await compareAdjacent(deps(), hashes);
    expect(decoded.answers).toBeGreaterThan(hashes.length);
    expect(decoded.notFound).toBeGreaterThan(0);
    expect(decoded.decoded).toBeGreaterThan(10);
    const plain = await compareAdjacent(deps({ DECODE_BODIES: "false" }), hashes.slice(0, 25));
    expect(plain.answers).toBeGreaterThan(25);
    expect(plain.decoded).toBe(0);
  });

  it("print every page of every recorded block as the presenters and toBinary do, BOCs rebuilt or kept", async () => {
    const blocks = await blocksOf(db);
    // Recorded blocks hold few transactions each: a page of 40 is the page of 1000.
    const rebuilt = await compareBlocks(deps({ TRANSACTION_BOC_CACHE_MB: "0" }), blocks, [1000]);
    const kept = await compareBlocks(deps(), blocks, [1000]);
    expect(kept).toEqual(rebuilt);
    expect(kept.transactions).toBeGreaterThan(100);
    const singles = await compareBlocks(deps(), blocks, [1], 3);
    expect(singles.afterCursor).toBeGreaterThan(blocks.length / 2);
  });
});

const engine = await testEngine();

// The generator loads with COPY FROM STDIN, which PGlite's socket server does not support.
describe.runIf(engine === "postgresql")("the transactions encoders, on a generated chain", () => {
  let db: TestDatabase;
  let deps: Deps;
  /** The block that the transactions of three of workchain 0's four shards are moved into. */
  let big: BlockId;

  beforeAll(async () => {
    db = await generatedIndex(4000, 25);
    // The generator's blocks take about 25 transactions: pages of 40 and 1000 need a bigger one. Moving the
    // transactions of three shards into one block leaves their other blocks empty (a page without transactions).
    const [busiest] = await db.admin<BlockId[]>`
      select 0 as workchain, block_shard::text as shard, min(block_seqno) as seqno from transactions
      where block_workchain = 0 group by block_shard order by count(*) desc limit 1`;
    big = busiest as BlockId;
    const [kept] = await db.admin<{ shard: string }[]>`
      select block_shard::text as shard from transactions where block_workchain = 0 group by block_shard order by count(*) limit 1`;
    await db.admin`update transactions set block_shard = ${big.shard}, block_seqno = ${big.seqno}
      where block_workchain = 0 and block_shard <> ${(kept as { shard: string }).shard}`;
    deps = serviceDeps(db);
  }, 120_000);
  afterAll(async () => {
    await deps?.db.end();
    await db?.drop();
  });

  it("print a block of thousands of transactions in pages of 1, 40 and 1000 as the presenters and toBinary do", async () => {
    const [{ n } = { n: 0 }] = await db.admin<{ n: number }[]>`
      select count(*)::int as n from transactions where block_workchain = 0 and block_shard = ${big.shard} and block_seqno = ${big.seqno}`;
    expect(n).toBeGreaterThan(2000);
    const thousands = await compareBlocks(deps, [big], [1000]);
    expect(thousands.transactions).toBe(n);
    expect(thousands.pages).toBe(Math.ceil(n / 1000) + (n % 1000 === 0 ? 1 : 0));
    const forties = await compareBlocks(deps, [big], [40], 15);
    expect(forties.transactions).toBe(15 * 40);
    const singles = await compareBlocks(deps, [big], [1], 15);
    expect(singles.pages).toBe(15);
  });

  it("print every other block, tick-tock and empty ones included, as the presenters and toBinary do", async () => {
    const blocks = (await blocksOf(db)).filter((b) => !(b.workchain === big.workchain && b.shard === big.shard && b.seqno === big.seqno));
    const tally = await compareBlocks(deps, blocks, [40, 1000]);
    expect(tally.withoutInMsg).toBeGreaterThan(20);
    expect(tally.pages).toBeGreaterThan(2 * blocks.length - 1);
    const busy = await db.admin<BlockId[]>`
      select block_workchain as workchain, block_shard::text as shard, block_seqno as seqno from transactions
      group by 1, 2, 3 having count(*) > 4 order by 1, 2, 3 limit 20`;
    const singles = await compareBlocks(deps, busy, [1], 5);
    expect(singles.afterCursor).toBe(4 * busy.length);
  });

  it("print the adjacent transactions of a sample of transactions as the presenters do", async () => {
    const hashes = await transactionHashes(db, 40);
    const tally = await compareAdjacent(deps, hashes);
    expect(tally.answers).toBeGreaterThan(hashes.length);
    expect(tally.decoded).toBeGreaterThan(10);
  });
});
