import type { Sql } from "./client.ts";

export interface SchemaVersion {
  major: number;
  minor: number;
  patch: number;
}

/** ton-index-worker schema lines this service reads: 1.2.x (1.3 partitions the tables differently). */
export const supportedSchema = { major: 1, minor: 2 } as const;

export class UnsupportedSchemaError extends Error {}

/** Reads the worker's schema version and refuses a database this code was not written for. */
export async function checkSchemaVersion(sql: Sql): Promise<SchemaVersion> {
  let rows: SchemaVersion[];
  try {
    rows = await sql<SchemaVersion[]>`select major, minor, patch from ton_db_version where id = 1`;
  } catch (err) {
    if ((err as { code?: string }).code === "42P01") {
      throw new UnsupportedSchemaError("the database has no ton_db_version table: is it a ton-index-worker database?");
    }
    throw err;
  }
  const version = rows[0];
  if (version === undefined) {
    throw new UnsupportedSchemaError("ton_db_version is empty: the ton-index-worker migration has not run on this database");
  }
  if (version.major !== supportedSchema.major || version.minor !== supportedSchema.minor) {
    throw new UnsupportedSchemaError(
      `unsupported ton-index-worker schema ${formatVersion(version)}: tonquery reads schema ${supportedSchema.major}.${supportedSchema.minor}.x`,
    );
  }
  return version;
}

export function formatVersion(v: SchemaVersion): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}
