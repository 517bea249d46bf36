import { SpanKind, SpanStatusCode, type Tracer } from "@opentelemetry/api";
import { Metrics } from "./metrics.ts";
import type { Tracing } from "./tracing.ts";

/** What the data access layer reports of each statement it runs. */
export interface StatementTelemetry {
  /** A statement named `statement` is sent; the function returned is called once it has ended (with its error, if it failed). */
  statementStarted(statement: string): (error?: unknown) => void;
  /** A request's snapshot was let go after holding its anchor connection `heldSeconds`, having run so many statements where. */
  snapshotEnded(heldSeconds: number, onAnchor: number, beside: number): void;
}

/**
 * Metrics, and tracing when it is on, for one server: built at start-up and handed to the layers that report
 * (the request doors, admission, the database pools).
 */
export class Telemetry implements StatementTelemetry {
  readonly metrics = new Metrics();
  /** Undefined while tracing is off: callers test it, so that no span object is made at all. */
  readonly tracer: Tracer | undefined;

  constructor(tracing?: Tracing) {
    this.tracer = tracing?.tracer;
  }

  snapshotEnded(heldSeconds: number, onAnchor: number, beside: number): void {
    this.metrics.snapshotEnded(heldSeconds, onAnchor, beside);
  }

  statementStarted(statement: string): (error?: unknown) => void {
    const started = performance.now();
    // The active context is the request's (the SDK's context manager follows it through awaits), so the span is a
    // child of the request's server span. Parameter values are never recorded: they are the clients' data.
    const span = this.tracer?.startSpan(statement, {
      kind: SpanKind.CLIENT,
      attributes: { "db.system": "postgresql", "db.system.name": "postgresql", "db.query.summary": statement },
    });
    return (error) => {
      const sqlState = sqlStateOf(error);
      this.metrics.statementEnded(statement, (performance.now() - started) / 1000, sqlState === statementTimeout);
      if (span === undefined) return;
      if (error !== undefined) {
        if (sqlState !== undefined) span.setAttribute("db.response.status_code", sqlState);
        span.setStatus({ code: SpanStatusCode.ERROR, message: sqlState === statementTimeout ? "statement timeout" : undefined });
      }
      span.end();
    };
  }
}

/** SQLSTATE of a statement cancelled by statement_timeout (or a cancel request, which the service never sends). */
const statementTimeout = "57014";

function sqlStateOf(error: unknown): string | undefined {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}
