import { readFile } from "node:fs/promises";
import type { Sql } from "../db/client.ts";
import { IndexLoader } from "../fixtures/loader.ts";
import type { RecordedMasterchainInfo } from "../fixtures/recorded.ts";

/** The project's copies of real toncenter responses (provenance in fixtures/toncenter/SOURCES.md). */
export const recordingsDir = new URL("../../fixtures/toncenter/", import.meta.url);

export async function readRecording<T>(name: string): Promise<T> {
  return JSON.parse(await readFile(new URL(name, recordingsDir), "utf8")) as T;
}

/** Mainnet recordings the demo serves. */
export const demoRecordings = {
  masterchainInfo: "masterchainInfo_mainnet_gem_1.json",
} as const;

/** Fills an empty index with the demo's real mainnet data. */
export async function loadDemoDataset(sql: Sql): Promise<void> {
  const loader = new IndexLoader();
  loader.addMasterchainInfo(await readRecording<RecordedMasterchainInfo>(demoRecordings.masterchainInfo));
  await loader.write(sql);
}
