import { trace, type Tracer } from "@opentelemetry/api";
import type { Config } from "../runtime/config.ts";

/** The OpenTelemetry SDK, started: spans of `tracer` are exported over OTLP until `shutdown` flushes the last ones. */
export interface Tracing {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry Node SDK when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, which the exporter reads from `env` itself), else does nothing at all. The SDK is
 * imported only then: without an endpoint no exporter, span processor or context manager exists, and the service
 * never calls the tracing API on its hot path (see Telemetry), so tracing off costs nothing.
 *
 * The SDK reads the standard OTEL_* variables itself: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by default, http/json, grpc), _HEADERS, _TIMEOUT, _COMPRESSION,
 * OTEL_TRACES_SAMPLER(_ARG), OTEL_PROPAGATORS (W3C tracecontext and baggage by default), OTEL_BSP_*, and
 * OTEL_SDK_DISABLED. Only traces are exported: the metrics are Prometheus's (/metrics), the logs stay on stderr.
 */
export async function startTracing(config: Pick<Config, "otlpEndpoint" | "otlpTracesEndpoint">, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  if (config.otlpEndpoint === undefined && config.otlpTracesEndpoint === undefined) return undefined;
  // The SDK would start nothing either: not loading it keeps the service's hot path free of no-op spans.
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return undefined;
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const named = (env.OTEL_SERVICE_NAME ?? "").trim() !== "" || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? "");
  const sdk = new NodeSDK({
    // Our own server and statement spans only: no automatic instrumentation of http or other modules.
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
    ...(named ? {} : { serviceName: "tonquery" }),
  });
  sdk.start();
  return { tracer: trace.getTracer("tonquery"), shutdown: () => sdk.shutdown() };
}
