import type { Writable } from "node:stream";
import type postgres from "postgres";
import { tables, type RowSink, type TableName } from "./tables.ts";

// Bulk loading: one COPY ... FROM STDIN stream per table, fed with text-format lines in chunks, and the index
// handling around it. While loading, the big tables have no primary key, no secondary index and no foreign
// key; afterwards they are rebuilt exactly as src/db/schema.sql declares them (parsed from the file, so the
// two cannot drift), then the tables are analyzed.

type Sql = postgres.Sql;

const chunkBytes = 1 << 17;

interface Stream {
  writable: Writable;
  /** Set while the writable's buffer is over its mark: resolves on its 'drain'. */
  draining: Promise<void> | undefined;
  chunks: string[];
  bytes: number;
  rows: number;
}

/** A RowSink writing each table through its own COPY stream (opened on the table's first row). */
export class CopySink implements RowSink {
  private readonly sql: Sql;
  private readonly streams = new Map<TableName, Stream>();
  private readonly opening = new Map<TableName, Promise<Stream>>();
  private readonly pending: { table: TableName; line: string }[] = [];
  private readonly waits: Promise<unknown>[] = [];
  /** Each table's transaction: resolves when its COPY has committed. */
  private readonly commits: Promise<void>[] = [];
  private failure: unknown;
  private aborted: Error | undefined;
  readonly rows = new Map<TableName, number>();
  bytes = 0;

  constructor(sql: Sql) {
    this.sql = sql;
  }

  write(table: TableName, line: string): void {
    const stream = this.streams.get(table);
    if (stream === undefined) {
      this.pending.push({ table, line });
      if (!this.opening.has(table)) this.opening.set(table, this.open(table));
      return;
    }
    stream.chunks.push(line);
    stream.bytes += line.length;
    stream.rows++;
    if (stream.bytes >= chunkBytes) this.flush(stream);
  }

  /**
   * Opens the table's COPY in its own transaction, after truncating the table in it: that lets COPY FREEZE
   * write the rows frozen and the pages all-visible, so nothing (first readers setting hint bits, autovacuum)
   * rewrites the table after the load, and index-only scans work at once.
   */
  private open(table: TableName): Promise<Stream> {
    return new Promise<Stream>((resolve, reject) => {
      const committed = this.sql
        .begin(async (tx) => {
          await tx.unsafe(`truncate ${table} restart identity`);
          const writable = (await tx.unsafe(`copy ${table} (${tables[table].join(", ")}) from stdin with (freeze)`).writable()) as Writable;
          const finished = new Promise<void>((done, fail) => {
            writable.once("finish", done);
            writable.once("error", fail);
          });
          const stream: Stream = { writable, draining: undefined, chunks: [], bytes: 0, rows: 0 };
          this.streams.set(table, stream);
          if (this.aborted !== undefined) writable.destroy(this.aborted);
          resolve(stream);
          await finished;
        })
        .then(() => {});
      committed.catch((error: unknown) => {
        this.failure ??= error;
        reject(error);
      });
      this.commits.push(committed);
    });
  }

  private flush(stream: Stream): void {
    if (stream.chunks.length === 0) return;
    const text = stream.chunks.join("");
    this.bytes += stream.bytes;
    stream.chunks = [];
    stream.bytes = 0;
    if (!stream.writable.write(text) && stream.draining === undefined) {
      stream.draining = new Promise((resolve) =>
        stream.writable.once("drain", () => {
          stream.draining = undefined;
          resolve();
        }),
      );
      this.waits.push(stream.draining);
    }
  }

  /** Waits for streams still opening and for every stream over its buffer to drain. Cheap when nothing waits. */
  async settle(): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    if (this.opening.size > 0) {
      await Promise.all(this.opening.values());
      this.opening.clear();
      const pending = this.pending.splice(0);
      for (const { table, line } of pending) this.write(table, line);
    }
    if (this.waits.length > 0) {
      const waits = this.waits.splice(0);
      // A failed COPY never drains: its transaction's end wakes us up too.
      await Promise.race([Promise.all(waits), ...this.commits]);
    }
    if (this.failure !== undefined) throw this.failure;
  }

  /** Flushes and ends every stream; resolves when the server has committed every COPY. */
  async finish(): Promise<void> {
    await this.settle();
    for (const [table, stream] of this.streams) {
      this.flush(stream);
      this.rows.set(table, stream.rows);
      stream.writable.end();
    }
    await Promise.all(this.commits);
  }

  /** Aborts every COPY, those still opening included (each rolls back); resolves when all have ended. */
  async abort(error: unknown): Promise<void> {
    this.aborted = error instanceof Error ? error : new Error(String(error));
    await Promise.allSettled(this.opening.values());
    for (const stream of this.streams.values()) if (!stream.writable.destroyed) stream.writable.destroy(this.aborted);
    await Promise.allSettled(this.commits);
  }
}

// ---- Index and constraint handling ----------------------------------------------------------------------------

/** The tables whose indexes and constraints are dropped for the load: the big ones. The rest keep theirs. */
export const bulkTables: readonly TableName[] = [
  "blocks",
  "shard_state",
  "transactions",
  "messages",
  "message_contents",
  "account_states",
  "latest_account_states",
  "traces",
  "actions",
];

export interface SchemaObject {
  table: string;
  kind: "primary key" | "index" | "foreign key";
  /** The name PostgreSQL gives it (the schema's own name, or PostgreSQL's default for an unnamed constraint). */
  name: string;
  /** The statement that creates it. */
  create: string;
}

/**
 * Primary keys, secondary indexes and foreign keys of `tableNames` as src/db/schema.sql declares them. Unnamed
 * constraints get the names PostgreSQL generates (table_pkey, table_col1_col2_fkey), which are what a database
 * created from the file has.
 */
export function schemaObjects(schema: string, tableNames: readonly string[]): SchemaObject[] {
  const wanted = new Set(tableNames);
  const statements = schema
    .replace(/--[^\n]*/g, "")
    .split(";")
    .map((s) => s.trim().replace(/\s+/g, " "))
    .filter((s) => s.length > 0);
  const objects: SchemaObject[] = [];
  for (const statement of statements) {
    const table = /^create table (\w+) \((.*)\)(?: with \(.*\))?$/i.exec(statement);
    if (table !== null) {
      const name = table[1] as string;
      if (!wanted.has(name)) continue;
      for (const item of splitTopLevel(table[2] as string)) {
        const pk = /^(?:constraint (\w+) )?primary key \(([^)]*)\)$/i.exec(item);
        const inlinePk = /^(\w+) .*\bprimary key$/i.exec(item);
        const fk = /^foreign key \(([^)]*)\) references (\w+)$/i.exec(item);
        if (pk !== null) {
          const constraint = pk[1] ?? `${name}_pkey`;
          objects.push({ table: name, kind: "primary key", name: constraint, create: `alter table ${name} add constraint ${constraint} primary key (${pk[2]})` });
        } else if (inlinePk !== null) {
          objects.push({ table: name, kind: "primary key", name: `${name}_pkey`, create: `alter table ${name} add constraint ${name}_pkey primary key (${inlinePk[1]})` });
        } else if (fk !== null) {
          const columns = (fk[1] as string).split(",").map((c) => c.trim());
          const constraint = `${name}_${columns.join("_")}_fkey`.slice(0, 63);
          objects.push({
            table: name,
            kind: "foreign key",
            name: constraint,
            create: `alter table ${name} add constraint ${constraint} foreign key (${columns.join(", ")}) references ${fk[2]}`,
          });
        }
      }
      continue;
    }
    const index = /^create (?:unique )?index (\w+) on (\w+)/i.exec(statement);
    if (index !== null && wanted.has(index[2] as string)) {
      objects.push({ table: index[2] as string, kind: "index", name: index[1] as string, create: statement });
    }
  }
  return objects;
}

function splitTopLevel(body: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      items.push(body.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(body.slice(start).trim());
  return items;
}

/** The names of the objects that exist, among those of `objects`. */
async function existing(sql: Sql, objects: readonly SchemaObject[]): Promise<Set<string>> {
  const tablesOf = [...new Set(objects.map((o) => o.table))];
  const rows = await sql<{ name: string }[]>`
    select conname as name from pg_constraint where conrelid = any(${tablesOf}::regclass[])
    union
    select indexrelid::regclass::text from pg_index where indrelid = any(${tablesOf}::regclass[])`;
  return new Set(rows.map((r) => r.name));
}

/** Drops the bulk tables' foreign keys, then their primary keys and indexes (whatever of them exists). */
export async function dropIndexes(sql: Sql, schema: string): Promise<SchemaObject[]> {
  const objects = schemaObjects(schema, bulkTables);
  // Foreign keys that reference a bulk table from elsewhere would block dropping its key: there are none in the
  // schema (all three are among the bulk tables), which schemaObjects of every table confirms.
  const present = await existing(sql, objects);
  const order: SchemaObject["kind"][] = ["foreign key", "primary key", "index"];
  for (const kind of order) {
    for (const o of objects) {
      if (o.kind !== kind || !present.has(o.name)) continue;
      await sql.unsafe(kind === "index" ? `drop index ${o.name}` : `alter table ${o.table} drop constraint ${o.name}`);
    }
  }
  return objects;
}

export interface RebuildTiming {
  name: string;
  seconds: number;
}

/**
 * Creates whatever of the bulk tables' keys, indexes and foreign keys is missing: primary keys and indexes on
 * `parallel` connections (largest tables first), then the foreign keys (validated against the loaded rows).
 */
export async function rebuildIndexes(
  sql: Sql,
  schema: string,
  options: { parallel: number; onDone?: (timing: RebuildTiming) => void },
): Promise<RebuildTiming[]> {
  const objects = schemaObjects(schema, bulkTables);
  const present = await existing(sql, objects);
  const missing = objects.filter((o) => !present.has(o.name));
  const sizes = new Map(
    (
      await sql<{ name: string; bytes: string }[]>`
        select relname as name, pg_relation_size(oid)::text as bytes from pg_class where relname = any(${[...bulkTables]})`
    ).map((r) => [r.name, Number(r.bytes)]),
  );
  const timings: RebuildTiming[] = [];
  const run = async (o: SchemaObject, connection: postgres.ReservedSql) => {
    const started = performance.now();
    await connection.unsafe(o.create);
    const timing = { name: o.name, seconds: (performance.now() - started) / 1000 };
    timings.push(timing);
    options.onDone?.(timing);
  };
  const work = async (queue: SchemaObject[]) => {
    const workers = Array.from({ length: Math.max(1, options.parallel) }, async () => {
      const connection = await sql.reserve();
      try {
        await connection.unsafe("set maintenance_work_mem = '1GB'");
        await connection.unsafe("set max_parallel_maintenance_workers = 0");
        for (let o = queue.shift(); o !== undefined; o = queue.shift()) await run(o, connection);
      } finally {
        connection.release();
      }
    });
    await Promise.all(workers);
  };
  // Largest table first, primary keys before the secondary indexes of the same table.
  const bySize = (a: SchemaObject, b: SchemaObject) =>
    (sizes.get(b.table) ?? 0) - (sizes.get(a.table) ?? 0) || (a.kind === "primary key" ? -1 : 0) - (b.kind === "primary key" ? -1 : 0);
  await work(missing.filter((o) => o.kind !== "foreign key").sort(bySize));
  await work(missing.filter((o) => o.kind === "foreign key"));
  return timings;
}

/** Runs analyze on every table the generator wrote. */
export async function analyze(sql: Sql, tableNames: readonly string[]): Promise<void> {
  for (const table of tableNames) await sql.unsafe(`analyze ${table}`);
}
