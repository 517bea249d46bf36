import { cors as connectCors } from "@connectrpc/connect";
import type { AddressInfo } from "node:net";
import { publicErrors } from "./errors.ts";
import { indexSeqnoHeader } from "../service/index-freshness.ts";
import { metricsEndpoint, observeRequests, observeUpgrades, requestIdHeader } from "../observability/requests.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import { explorerRoutes } from "../explorer/routes.ts";
import { openApiRoutes } from "../openapi/routes.ts";
import { ServiceHealth } from "../ops/health.ts";
import { reflectionRoutes } from "../ops/reflection.ts";
import { refusedMethod, requestUrl, restHandler, sendEmpty, sendJson } from "../rest/router.ts";
import { rpcDoor } from "./rpc-door.ts";
import { connectRoutes, createTonQueryService } from "../service/service.ts";
import type { ServiceDeps } from "../service/deps.ts";
import { createSinglePortServer, type HttpHandler } from "./single-port.ts";
import { streamingDoors } from "../streams/rest.ts";
import "../ton/native-sha256.ts";

export interface Server {
  listen(port: number, host?: string): Promise<AddressInfo>;
  /** Calls `listener` whenever a live stream opens. */
  onStreamOpened(listener: () => void): () => void;
  /** Graceful stop: no new connections, requests in flight get the configured grace period. */
  close(): Promise<void>;
}

/** The methods some path serves: GET and HEAD (REST, probes, documents), POST (RPC), OPTIONS (CORS preflight). */
const servedMethods = new Set(["GET", "HEAD", "POST", "OPTIONS"]);

/**
 * Builds the whole service without listening, so tests can start it on port 0: Connect, gRPC and
 * gRPC-web for the typed API, gRPC health and reflection, the legacy REST paths, the health probes
 * (/livez, /readyz, /healthz), /metrics, /openapi.json, /docs, the trace explorer (/explorer), and CORS for
 * browsers, all on one port; every request observed (request id, access log, metrics, tracing).
 */
export function createServer(deps: ServiceDeps & { telemetry: Telemetry }): Server {
  const shutdown = new AbortController();
  const service = createTonQueryService(deps);
  deps.telemetry.metrics.watchDatabase(
    () => deps.db.poolStates(),
    () => !deps.db.availability.downSignal.aborted,
    () => deps.db.memberStats(),
  );

  // A method no path serves is refused as such, on any path (TRACE, PUT, an HTTP/2 CONNECT...): 405, not 404.
  const notFound: HttpHandler = (req, res) =>
    servedMethods.has(req.method ?? "")
      ? sendJson(res, 404, { error: `not found: ${req.method} ${req.url}` })
      : sendJson(res, 405, { error: `method ${req.method} not allowed` }, { allow: [...servedMethods].join(", ") });
  // A statement holds its connection for at most its timeout, after opening the connection: pools blocked longer
  // with no statement starting serve nobody.
  const health = new ServiceHealth(deps.db, { stallAfterMs: deps.config.statementTimeoutMs + deps.config.dbConnectTimeoutMs });
  // GET-only endpoints beside the REST paths.
  const endpoints = new Map<string, HttpHandler>([
    ...health.httpProbes(),
    ["/metrics", metricsEndpoint(deps.telemetry.metrics)],
    ...openApiRoutes(deps.config),
    ...explorerRoutes(deps.config),
  ]);
  const compression = { enabled: deps.config.compression, minBytes: deps.config.compressionMinBytes };
  const restPaths = restHandler(
    {
      service,
      shutdownSignal: shutdown.signal,
      timeoutMs: deps.config.requestTimeoutMs,
      compression,
      holdMaxBytes: deps.config.restHoldMaxBytes,
    },
    (req, res) => {
      const endpoint = endpoints.get(requestUrl(req)?.pathname ?? "");
      if (endpoint === undefined) notFound(req, res);
      else if (!refusedMethod(req, res)) endpoint(req, res);
    },
  );
  // The live streams' REST doors (toncenter's Streaming API v2), before the other REST paths.
  const streaming = streamingDoors(service.streams, deps.config, restPaths);
  const rest = streaming.http;
  // connect-node's adapter, plus: requests connect cannot read are INVALID_ARGUMENT, client deadlines are cut to
  // the server's, and a request that makes no URL is refused (see rpc-door.ts).
  const rpc = rpcDoor({
    routes: (router) => {
      connectRoutes(service)(router);
      health.routes(router);
      reflectionRoutes(router);
    },
    interceptors: [publicErrors],
    fallback: rest,
    shutdownSignal: shutdown.signal,
    // Requests are small (the largest: a StreamTraces of STREAM_MAX_ADDRESSES raw addresses, ~70 kB); refuse large bodies before parsing them.
    readMaxBytes: 256 * 1024,
    maxDeadlineMs: deps.config.requestTimeoutMs,
  });
  const withCors = corsHandler(deps.config.corsOrigin, rpc);
  const observe = { accessLog: deps.config.accessLog };
  const server = createSinglePortServer(observeRequests(withCors, deps.telemetry, observe), deps.config, observeUpgrades(streaming.upgrade, deps.telemetry, observe));

  return {
    listen: (port, host = deps.config.host) => server.listen(port, host),
    onStreamOpened: (listener) => service.streams.onStreamOpened(listener),
    close: () => {
      health.drain();
      // Streams end at once with their position (UNAVAILABLE), rather than holding the grace period.
      service.streams.close();
      streaming.close();
      service.close();
      return server.close(deps.config.shutdownTimeoutMs, () => shutdown.abort());
    },
  };
}

function corsHandler(origin: string, next: HttpHandler): HttpHandler {
  const allowHeaders = connectCors.allowedHeaders.join(", ");
  const exposeHeaders = [...connectCors.exposedHeaders, "Trailer-Grpc-Status", "Trailer-Grpc-Message", requestIdHeader, indexSeqnoHeader].join(", ");
  return (req, res) => {
    if (req.headers.origin === undefined) {
      next(req, res);
      return;
    }
    res.setHeader("access-control-allow-origin", origin);
    res.setHeader("access-control-expose-headers", exposeHeaders);
    if (origin !== "*") res.setHeader("vary", "Origin");
    if (req.method === "OPTIONS") {
      sendEmpty(res, 204, {
        "access-control-allow-methods": connectCors.allowedMethods.join(", "),
        "access-control-allow-headers": req.headers["access-control-request-headers"] ?? allowHeaders,
        "access-control-max-age": "7200",
      });
      return;
    }
    next(req, res);
  };
}
