import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { loadDemoDataset } from "../demo/dataset.ts";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { projectFile } from "../runtime/project-files.ts";

export const schemaFile = projectFile("src/db/schema.sql");

export async function readSchema(): Promise<string> {
  return readFile(schemaFile, "utf8");
}

export interface EmbeddedDatabase {
  /** postgres:// URL of the in-process server, for the same `postgres` client production uses. */
  url: string;
  close(): Promise<void>;
}

/**
 * PostgreSQL in-process (PGlite, in memory) behind a wire-protocol socket on a free loopback port, with
 * the index schema applied. The service then reaches it exactly as it reaches a real server.
 */
export async function startEmbeddedDatabase(maxConnections: number): Promise<EmbeddedDatabase> {
  const db = await PGlite.create();
  await db.exec(await readSchema());
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections });
  await server.start();
  const address = (server as unknown as { server: { address(): AddressInfo } }).server.address();
  return {
    url: `postgres://postgres@127.0.0.1:${address.port}/postgres`,
    async close() {
      await server.stop();
      await db.close();
    },
  };
}

/** The embedded database with the demo dataset loaded, then made read-only for every connection. */
export async function startDemoDatabase(maxConnections: number): Promise<EmbeddedDatabase> {
  const embedded = await startEmbeddedDatabase(maxConnections);
  const writer = postgres(embedded.url, { max: 1, onnotice: () => {} });
  try {
    await loadDemoDataset(writer);
    // PGlite's socket ignores the session settings a client sends at connect time, so the service's read-only
    // setting would not apply; all connections share PGlite's one session, so setting it there covers them all.
    await writer`set default_transaction_read_only = on`;
  } finally {
    await writer.end();
  }
  return embedded;
}
