// Preloaded (node --import) into a server process by test/tracing.test.ts: reports on stderr every module of the
// OpenTelemetry SDK the process resolves, so that the test can tell whether tracing off loaded any of it.
import { registerHooks } from "node:module";

registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    if (resolved.url.includes("/@opentelemetry/sdk-")) process.stderr.write(`otel-sdk-module ${resolved.url}\n`);
    return resolved;
  },
});
