import { readdir } from "node:fs/promises";
import { readRecording, recordingsDir } from "../../src/demo/dataset.ts";
import { IndexLoader } from "../../src/recordings/loader.ts";
import type {
  RecordedTrace,
  RecordedTracesResponse,
  RecordedTransaction,
  RecordedTransactionsResponse,
} from "../../src/recordings/recorded.ts";

type Json = Record<string, unknown>;

/** Every recording that carries v3 Transaction objects, with what the tests compare against. */
export interface TransactionRecordings {
  /** Each recorded transaction once (the first copy met, files in name order), with its file. */
  transactions: Map<string, { file: string; tx: RecordedTransaction }>;
  /** Traces with the address_book and metadata of the response they came from. */
  traces: { file: string; trace: RecordedTrace; addressBook: Record<string, Json>; metadata: Record<string, Json> }[];
  /** The accounts whose state the recordings carry (the accounts of recorded transactions). */
  accountsWithState: Set<string>;
  /** Loads all of them into an index. */
  load(loader: IndexLoader): IndexLoader;
}

export async function readTransactionRecordings(): Promise<TransactionRecordings> {
  const names = (await readdir(recordingsDir)).filter((n) => n.endsWith(".json")).sort();
  const transactions = new Map<string, { file: string; tx: RecordedTransaction }>();
  const traces: TransactionRecordings["traces"] = [];
  const loaders: ((loader: IndexLoader) => void)[] = [];
  for (const file of names) {
    if (file.startsWith("traces_")) {
      const recording = await readRecording<RecordedTracesResponse | RecordedTrace[]>(file);
      const list = Array.isArray(recording) ? recording : recording.traces;
      const addressBook = (Array.isArray(recording) ? {} : recording.address_book) as Record<string, Json>;
      const metadata = (Array.isArray(recording) ? {} : (recording.metadata ?? {})) as unknown as Record<string, Json>;
      for (const trace of list) {
        traces.push({ file, trace, addressBook, metadata });
        for (const tx of Object.values(trace.transactions ?? {})) if (!transactions.has(tx.hash)) transactions.set(tx.hash, { file, tx });
      }
      loaders.push((l) => {
        l.addTraces(recording);
        if (!Array.isArray(recording)) l.addMetadata(recording.metadata);
      });
    } else if (/^(transactions|adjacentTransactions|transactionsBy)/.test(file)) {
      const recording = await readRecording<RecordedTransactionsResponse>(file);
      for (const tx of recording.transactions) if (!transactions.has(tx.hash)) transactions.set(tx.hash, { file, tx });
      loaders.push((l) => l.addTransactionsResponse(recording));
    }
  }
  return {
    transactions,
    traces,
    accountsWithState: new Set([...transactions.values()].map(({ tx }) => tx.account)),
    load(loader) {
      for (const add of loaders) add(loader);
      return loader;
    },
  };
}
