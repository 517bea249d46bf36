import type postgres from "postgres";
import { type RowSink, type TableName, tables } from "./tables.ts";

// Follow mode writes with INSERT, as ton-index-worker does, not COPY: a batch is one transaction among others in
// flight, some rows are upserts, and PGlite's socket (the embedded test database) does not complete COPY FROM STDIN.
// The generator's rows arrive as COPY text lines; each table's lines go to the server as one JSON array of arrays
// of text, cast to the column types there, so one statement writes a table's rows whatever their number.


/** Tables a live batch or the classifier writes: the generator's, and action_accounts, which only the classifier fills. */
export const liveColumns = {
  ...tables,
  action_accounts: ["action_id", "trace_id", "account", "trace_end_lt", "action_end_lt", "trace_end_utime", "action_end_utime"],
} as const satisfies Record<string, readonly string[]>;
export type LiveTable = keyof typeof liveColumns;

/** A RowSink that keeps one batch's lines per table, until `take()` hands them over. */
export class BatchSink implements RowSink {
  private lines = new Map<TableName, string[]>();

  write(table: TableName, line: string): void {
    const list = this.lines.get(table);
    if (list === undefined) this.lines.set(table, [line]);
    else list.push(line);
  }

  take(): Map<TableName, string[]> {
    const taken = this.lines;
    this.lines = new Map();
    return taken;
  }
}

/** The fields of a COPY text line: \N is NULL, and backslash escapes are undone. */
export function parseCopyLine(line: string): (string | null)[] {
  const text = line.endsWith("\n") ? line.slice(0, -1) : line;
  return text.split("\t").map((field) => {
    if (field === "\\N") return null;
    if (!field.includes("\\")) return field;
    return field.replace(/\\(.)/g, (_, c: string) => (c === "t" ? "\t" : c === "n" ? "\n" : c === "r" ? "\r" : c));
  });
}

/**
 * What a table's rows do when one exists already, as the worker writes them: traces and latest account states move
 * forward only (a batch committed later with older data leaves the newer row), bodies and states are content-keyed.
 */
const conflicts: Partial<Record<LiveTable, { key: string; update?: string }>> = {
  traces: { key: "trace_id", update: "traces.end_lt < excluded.end_lt" },
  latest_account_states: { key: "account", update: "latest_account_states.last_trans_lt < excluded.last_trans_lt" },
  message_contents: { key: "hash" },
  account_states: { key: "hash" },
};

/** Insert statements per table, with each column cast from text to its type in this database. */
export class LiveInserts {
  private readonly statements = new Map<LiveTable, string>();

  private constructor() {}

  /** `sql`: a transaction (see follow.ts on PGlite). */
  static async prepare(sql: postgres.TransactionSql): Promise<LiveInserts> {
    const inserts = new LiveInserts();
    for (const table of Object.keys(liveColumns) as LiveTable[]) {
      const types = await sql<{ name: string; type: string }[]>`
        select attname as name, format_type(atttypid, atttypmod) as type from pg_attribute
        where attrelid = to_regclass(${table}) and attnum > 0 and not attisdropped`;
      if (types.length === 0) continue;
      const typeOf = new Map(types.map((t) => [t.name, t.type]));
      const columns = liveColumns[table] as readonly string[];
      const casts = columns.map((column, i) => {
        const type = typeOf.get(column);
        if (type === undefined) throw new Error(`${table}.${column} is not in the database`);
        return `(r->>${i})::${type}`;
      });
      const conflict = conflicts[table];
      // Upserted rows are written in key order: two batches in flight that upsert the same rows lock them in the
      // same order, so one waits for the other instead of deadlocking.
      const order = conflict === undefined ? "" : ` order by 1`;
      let onConflict = "";
      if (conflict?.update !== undefined) {
        const set = columns.filter((c) => c !== conflict.key).map((c) => `${c} = excluded.${c}`);
        onConflict = ` on conflict (${conflict.key}) do update set ${set.join(", ")} where ${conflict.update}`;
      } else if (conflict !== undefined) {
        onConflict = ` on conflict (${conflict.key}) do nothing`;
      }
      inserts.statements.set(
        table,
        `insert into ${table} (${columns.join(", ")}) select ${casts.join(", ")} from json_array_elements($1::text::json) r${order}${onConflict}`,
      );
    }
    return inserts;
  }

  has(table: LiveTable): boolean {
    return this.statements.has(table);
  }

  /** Writes `lines` of `table` in the transaction `tx`; rows sharing a key count once (the last one). */
  write(tx: postgres.TransactionSql, table: LiveTable, lines: readonly string[]): Promise<unknown> {
    const statement = this.statements.get(table);
    if (statement === undefined) throw new Error(`table ${table} is not in the database`);
    let rows = lines.map(parseCopyLine);
    if (conflicts[table] !== undefined) {
      // A statement may not touch a row twice (on conflict do update refuses to); the key is the first column.
      rows = [...new Map(rows.map((row) => [row[0], row])).values()];
    }
    return tx.unsafe(statement, [JSON.stringify(rows)]);
  }
}
