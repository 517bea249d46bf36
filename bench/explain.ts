// EXPLAIN evidence for every captured statement, in the plans the server really gets.
//
// Most of the service's statements are prepared (Database.sql), so PostgreSQL plans them with the parameter values
// for the first five executions (custom plans) and may then switch to one generic plan for the connection's
// life. Each statement is therefore PREPAREd on a connection of its own and explained three ways:
//   custom  — plan_cache_mode = force_custom_plan: the plan for these values;
//   generic — plan_cache_mode = force_generic_plan: the plan without values, which `auto` may settle on;
//   steady  — plan_cache_mode = auto after five executions, with ANALYZE and BUFFERS: what a warm server runs,
//             with the real row counts, times and JIT use.
// A statement sent unnamed (Database.sqlCustomPlan) is planned for its values at every call: its steady plan is
// the custom plan, and its generic plan, which it never gets, is shown for comparison only.
// EXPLAIN EXECUTE takes no bind parameters, so the values are written as literals, which EXECUTE coerces to the
// parameters' types.

import postgres from "postgres";
import type { CapturedStatement } from "./capture.ts";

/** Tables whose sequential scan fails the check: they grow with the chain. */
export const bigTables = ["transactions", "messages", "traces", "actions"];
/** Other tables are reported when scanned sequentially; above this many rows that is a warning. */
export const smallTableRows = 10_000;

export interface PlanNode {
  nodeType: string;
  relation?: string;
  index?: string;
  alias?: string;
  planRows?: number;
  actualRows?: number;
  loops?: number;
}

export interface PlanSummary {
  /** "relation: node types" per relation. */
  access: string[];
  /** The whole tree, flattened (kept for the steady plan only, to keep the JSON small). */
  nodes?: PlanNode[];
  totalCost: number;
  /** A generic plan shows $n in its conditions. */
  generic: boolean;
  executionMs?: number;
  planningMs?: number;
  jit?: { functions: number; totalMs: number };
  sharedHit?: number;
  sharedRead?: number;
}

export interface SeqScan {
  relation: string;
  plan: "custom" | "generic" | "steady";
  tableRows: number;
  /** fail: a big table; warn: another table above smallTableRows; info: a small table. */
  severity: "fail" | "warn" | "info";
}

export interface StatementPlans {
  /** "relation: node types" per relation of the steady plan, for the report. */
  access: string[];
  custom?: PlanSummary;
  generic?: PlanSummary;
  steady?: PlanSummary;
  seqScans: SeqScan[];
  error?: string;
}

interface RawPlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Alias?: string;
  "Plan Rows"?: number;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Total Cost"?: number;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: RawPlanNode[];
}

interface RawExplain {
  Plan: RawPlanNode;
  "Execution Time"?: number;
  "Planning Time"?: number;
  JIT?: { Functions?: number; Timing?: { Total?: number } };
}

function indexesUnder(node: RawPlanNode): string[] {
  return [...(node["Index Name"] ? [node["Index Name"]] : []), ...(node.Plans ?? []).flatMap(indexesUnder)];
}

function walk(node: RawPlanNode, out: PlanNode[]): void {
  // A Bitmap Heap Scan names the table; the indexes are on its Bitmap Index Scan children.
  const index = node["Node Type"] === "Bitmap Heap Scan" ? indexesUnder(node).join("+") || undefined : node["Index Name"];
  out.push({
    nodeType: node["Node Type"],
    relation: node["Relation Name"],
    index,
    alias: node.Alias,
    planRows: node["Plan Rows"],
    actualRows: node["Actual Rows"],
    loops: node["Actual Loops"],
  });
  for (const child of node.Plans ?? []) walk(child, out);
}

function summarize(raw: RawExplain): PlanSummary {
  const nodes: PlanNode[] = [];
  walk(raw.Plan, nodes);
  return {
    access: accessSummary(nodes),
    nodes,
    totalCost: raw.Plan["Total Cost"] ?? 0,
    generic: /\$\d+/.test(JSON.stringify(raw.Plan)),
    executionMs: raw["Execution Time"],
    planningMs: raw["Planning Time"],
    jit: raw.JIT ? { functions: raw.JIT.Functions ?? 0, totalMs: raw.JIT.Timing?.Total ?? 0 } : undefined,
    sharedHit: raw.Plan["Shared Hit Blocks"],
    sharedRead: raw.Plan["Shared Read Blocks"],
  };
}

/** How each relation is read: "transactions: Index Scan (transactions_index_4)". */
export function accessSummary(nodes: readonly PlanNode[]): string[] {
  const byRelation = new Map<string, Set<string>>();
  for (const n of nodes) {
    if (n.relation === undefined) continue;
    const set = byRelation.get(n.relation) ?? new Set<string>();
    set.add(n.index ? `${n.nodeType} (${n.index})` : n.nodeType);
    byRelation.set(n.relation, set);
  }
  return [...byRelation].map(([relation, kinds]) => `${relation}: ${[...kinds].join(", ")}`);
}

/** A JS parameter as postgres would send it, as the text of a literal. */
function literalText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) {
    const items = value.map((v) => {
      const t = literalText(v);
      return t === null ? "NULL" : `"${t.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
    });
    return `{${items.join(",")}}`;
  }
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "boolean") return value ? "t" : "f";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** The type postgres declares for a JS value (see inferType in postgres/src/types.js); unknown lets the server infer. */
function declaredType(value: unknown): string {
  if (Array.isArray(value)) return value.length > 0 ? declaredType(value[0]) === "unknown" ? "unknown" : `${declaredType(value[0])}[]` : "unknown";
  if (value instanceof Date) return "timestamptz";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "bigint") return "int8";
  return "unknown";
}

export class Explainer {
  private readonly sql: postgres.Sql;
  private readonly tableRows = new Map<string, number>();
  private counter = 0;

  constructor(url: string) {
    this.sql = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: "tonquery-bench-explain", default_transaction_read_only: true } });
  }

  private async rowsOf(conn: postgres.Sql, relation: string): Promise<number> {
    let n = this.tableRows.get(relation);
    if (n === undefined) {
      const [row] = await conn<{ n: number }[]>`select greatest(reltuples, 0)::float8 as n from pg_class where relname = ${relation} and relkind in ('r', 'p', 'm')`;
      n = Math.round(row?.n ?? 0);
      this.tableRows.set(relation, n);
    }
    return n;
  }

  async explain(statement: CapturedStatement): Promise<StatementPlans> {
    const name = `bench_explain_${this.counter++}`;
    const conn = await this.sql.reserve();
    try {
      const types = statement.parameters.map(declaredType);
      const declared = types.length > 0 ? `(${types.join(", ")})` : "";
      await conn.unsafe(`prepare ${name}${declared} as ${statement.query}`);
      // Untyped literals: EXECUTE coerces each to its parameter's type, typmod included. A cast to the name
      // pg_prepared_statements gives would lose the typmod: a char(44) hash cast to `character` is char(1).
      const args = statement.parameters.map((v) => {
        const text = literalText(v);
        return text === null ? "NULL" : `'${text.replace(/'/g, "''")}'`;
      });
      const execute = `execute ${name}${args.length > 0 ? `(${args.join(", ")})` : ""}`;
      const explainOnce = async (options: string): Promise<PlanSummary> => {
        const rows = await conn.unsafe(`explain (${options}) ${execute}`);
        const plan = (rows[0] as unknown as { "QUERY PLAN": RawExplain[] })["QUERY PLAN"][0];
        if (plan === undefined) throw new Error("EXPLAIN returned no plan");
        return summarize(plan);
      };
      await conn.unsafe("set plan_cache_mode = force_custom_plan");
      const custom = await explainOnce("format json");
      await conn.unsafe("set plan_cache_mode = force_generic_plan");
      const generic = await explainOnce("format json");
      await conn.unsafe(statement.prepared ? "set plan_cache_mode = auto" : "set plan_cache_mode = force_custom_plan");
      if (statement.prepared) for (let i = 0; i < 5; i++) await explainOnce("format json");
      const steady = await explainOnce("analyze, buffers, format json");
      await conn.unsafe(`deallocate ${name}`);

      const seqScans: SeqScan[] = [];
      for (const [plan, summary] of [["custom", custom], ["generic", generic], ["steady", steady]] as const) {
        for (const node of summary.nodes ?? []) {
          if (node.nodeType !== "Seq Scan" || node.relation === undefined) continue;
          const tableRows = await this.rowsOf(conn, node.relation);
          const severity = bigTables.includes(node.relation) ? "fail" : tableRows > smallTableRows ? "warn" : "info";
          // A generic plan that auto never chose, or that an unnamed statement never gets, does not fail the check.
          const notRun = plan === "generic" && (severity === "fail" || !statement.prepared);
          seqScans.push({ relation: node.relation, plan, tableRows, severity: notRun ? (severity === "fail" ? "warn" : "info") : severity });
        }
      }
      return { access: steady.access, custom: { ...custom, nodes: undefined }, generic: { ...generic, nodes: undefined }, steady, seqScans };
    } catch (err) {
      await conn.unsafe(`deallocate ${name}`).catch(() => {});
      return { access: [], seqScans: [], error: (err as Error).message };
    } finally {
      await conn.unsafe("reset plan_cache_mode").catch(() => {});
      conn.release();
    }
  }

  end(): Promise<void> {
    return this.sql.end({ timeout: 5 });
  }
}
