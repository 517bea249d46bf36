import { readdir, readFile } from "node:fs/promises";
import type { Sql } from "../db/client.ts";
import { IndexLoader } from "../recordings/loader.ts";
import type {
  RecordedBlockTransactionsExt,
  RecordedMasterchainInfo,
  RecordedTrace,
  RecordedTracesResponse,
  RecordedTransactionsResponse,
} from "../recordings/recorded.ts";
import { projectFile } from "../runtime/project-files.ts";

/** The project's copies of real toncenter responses (provenance in fixtures/toncenter/SOURCES.md). */
export const recordingsDir = projectFile("fixtures/toncenter/");

export async function readRecording<T>(name: string): Promise<T> {
  return JSON.parse(await readFile(new URL(name, recordingsDir), "utf8")) as T;
}

/**
 * Mainnet recordings the demo serves. File names carry the network (SOURCES.md), except the ton-org docs trace,
 * which SOURCES.md gives as mainnet; testnet recordings stay out so the demo is one consistent chain.
 */
export const demoRecordings = {
  masterchainInfo: "masterchainInfo_mainnet_gem_1.json",
  /**
   * /traces responses (their traces, actions, transactions and metadata), and the bare array of
   * traces of mc block 35120456. The traces' mc_seqno_end lies above the recorded last block for most of them;
   * they add no block rows, so masterchainInfo stays as recorded.
   */
  traces: /^traces_(array_)?mainnet_.+\.json$|^traces_telegram_stars_swap_1\.json$/,
  /**
   * /transactionsByMessage responses. Not transactionsByMasterchainBlock: its block (51319006) lies above the
   * recorded last block, and masterchainInfo would then report a block the recordings know only by id.
   */
  transactions: /^transactionsByMessage_mainnet_.+\.json$/,
  /**
   * The complete v2 block (its transactions decomposed from their BOCs), so a newcomer can page through a real
   * block. Not the mc57442406 pages: abbreviated (no BOCs), and above the recorded last block.
   */
  blockTransactions: "getBlockTransactionsExt_mainnet_mc39984096_blockpi.json",
} as const;

/** Fills an empty index with the demo's real mainnet data. */
export async function loadDemoDataset(sql: Sql): Promise<void> {
  const names = (await readdir(recordingsDir)).sort();
  const named = (pattern: RegExp) => names.filter((name) => pattern.test(name));
  const [masterchainInfo, block, traces, transactions] = await Promise.all([
    readRecording<RecordedMasterchainInfo>(demoRecordings.masterchainInfo),
    readRecording<{ result: RecordedBlockTransactionsExt }>(demoRecordings.blockTransactions),
    Promise.all(named(demoRecordings.traces).map((name) => readRecording<RecordedTracesResponse | RecordedTrace[]>(name))),
    Promise.all(named(demoRecordings.transactions).map((name) => readRecording<RecordedTransactionsResponse>(name))),
  ]);
  const loader = new IndexLoader().addMasterchainInfo(masterchainInfo).addBlockTransactionsExt(block.result);
  for (const recording of traces) {
    loader.addTraces(recording);
    if ("metadata" in recording) loader.addMetadata(recording.metadata);
  }
  for (const recording of transactions) loader.addTransactionsResponse(recording);
  await loader.write(sql);
}
