import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  Health,
  type HealthCheckRequest,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthCheckResponseSchema,
} from "../../gen/health/v1/health_pb.ts";
import { TonQueryService } from "../../gen/tonquery/v1/service_pb.ts";
import type { Database } from "../db/client.ts";
import { sendJson } from "../rest/router.ts";
import type { HttpHandler } from "../server/single-port.ts";
import { PoolStallWatch, type PoolStallOptions } from "./pool-stall.ts";

// Health as gRPC's health checking protocol (grpc.health.v1.Health: Check, Watch, List) and as the HTTP probes a
// Kubernetes deployment points at. No maintained package serves grpc.health.v1 through a connect-es v2 router
// (grpc-health-check serves it on a @grpc/grpc-js server), so the service is written here, over the protocol's own
// definitions as grpc-health-check ships them (generated into gen/health/, see buf.gen.yaml).

/** What health needs of the database (see Database). */
export type DatabaseReadiness = Pick<Database, "ready" | "serving" | "onServingChange" | "poolStates" | "memberStats">;

/** The services whose health is reported: the server as a whole ("", by the protocol's convention) and the typed API. */
const reportedServices = ["", TonQueryService.typeName];

/**
 * The serving status of tonquery: SERVING while a request could be served: the database answers (what
 * DatabaseAvailability's probe finds, so asking costs the database nothing), its connection pools are not stalled
 * (see PoolStallWatch) and the server is not shutting down; NOT_SERVING otherwise. Liveness is another matter: a
 * process whose database is away is alive, and restarting it would not bring the database back.
 */
export class ServiceHealth {
  readonly #db: DatabaseReadiness;
  readonly #stall: PoolStallWatch;
  readonly #draining = new AbortController();

  /**
   * With replicas any member that keeps up can serve, so a primary outage alone is not unready: Check, List, the
   * HTTP probes and Watch all follow the cluster, not one member.
   */
  constructor(db: DatabaseReadiness, stall: PoolStallOptions) {
    this.#db = db;
    this.#stall = new PoolStallWatch(db, stall);
    this.#stall.start();
  }

  /**
   * Shutdown has begun: NOT_SERVING from now on, so load balancers stop sending work, and every Watch stream gets
   * that last status and ends, rather than holding its connection open until the shutdown grace runs out.
   */
  drain(): void {
    this.#draining.abort();
    this.#stall.stop();
  }

  /** As Check answers: while the database is down this probes it (joining a probe under way), as /healthz does. */
  async #servingStatus(): Promise<ServingStatus> {
    return (await this.#unready()) === undefined ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }

  /** Why the service cannot serve now; undefined when it can. */
  async #unready(): Promise<string | undefined> {
    if (this.#draining.signal.aborted) return "shutting down";
    const problem = await this.#databaseProblem();
    if (problem !== undefined) return problem;
    return this.#draining.signal.aborted ? "shutting down" : undefined;
  }

  /** Why no request could get an answer from the database now; undefined when one could. */
  async #databaseProblem(): Promise<string | undefined> {
    const answers = await this.#db.ready().then(
      () => true,
      () => false,
    );
    if (!answers) return "database unavailable";
    if (this.#stall.stalled) return "database connections stalled";
    return undefined;
  }

  /** Registers grpc.health.v1.Health on the RPC door's router: Connect, gRPC and gRPC-web alike. */
  routes(router: ConnectRouter): void {
    router.service(Health, {
      check: async (request) => {
        if (!reportedServices.includes(request.service)) throw new ConnectError(`unknown service: ${request.service}`, Code.NotFound);
        return { status: await this.#servingStatus() };
      },
      watch: (request, context) => this.#watch(request, context),
      list: async () => {
        const status = await this.#servingStatus();
        return { statuses: Object.fromEntries(reportedServices.map((service) => [service, create(HealthCheckResponseSchema, { status })])) };
      },
    });
  }

  /**
   * The status now, then each change, until the client goes or shutdown begins (whose NOT_SERVING is the last
   * message, the stream then ending with OK). An unknown service is SERVICE_UNKNOWN and, as the protocol asks, not
   * an error: the stream stays open as for a known one.
   */
  async *#watch(request: HealthCheckRequest, context: HandlerContext): AsyncGenerator<HealthCheckResponse> {
    const known = reportedServices.includes(request.service);
    let wake = () => {};
    const nudge = () => wake();
    const unsubscribe = this.#db.onServingChange(nudge);
    const unsubscribeStall = this.#stall.subscribe(nudge);
    context.signal.addEventListener("abort", nudge);
    this.#draining.signal.addEventListener("abort", nudge);
    try {
      let sent: ServingStatus | undefined;
      while (!context.signal.aborted) {
        // Armed before yielding: a change that comes while the message is being written still wakes the loop.
        const changed = new Promise<void>((resolve) => (wake = resolve));
        const status = !known
          ? ServingStatus.SERVICE_UNKNOWN
          : this.#db.serving() && !this.#stall.stalled && !this.#draining.signal.aborted
            ? ServingStatus.SERVING
            : ServingStatus.NOT_SERVING;
        if (status !== sent) {
          sent = status;
          yield create(HealthCheckResponseSchema, { status });
        }
        if (this.#draining.signal.aborted) return;
        await changed;
      }
    } finally {
      unsubscribe();
      unsubscribeStall();
      context.signal.removeEventListener("abort", nudge);
      this.#draining.signal.removeEventListener("abort", nudge);
    }
  }

  /**
   * The HTTP probes, by path. /livez: the process answers at all (its event loop turns), whatever the database
   * does: a liveness probe that failed with the database would have every pod restarted during an outage. /readyz:
   * the service can serve (database up, its pools not stalled, not shutting down), for readiness probes and load
   * balancers. /healthz: what it has always been, whether the database can serve (answers, pools not stalled).
   */
  httpProbes(): Map<string, HttpHandler> {
    const probe =
      (problem: () => Promise<string | undefined>): HttpHandler =>
      (req, res) =>
        void problem().then((error) =>
          error === undefined
            ? sendJson(res, 200, { status: "ok" }, {}, req.method === "HEAD")
            : sendJson(res, 503, { status: "unavailable", error }, {}, req.method === "HEAD"),
        );
    return new Map([
      ["/livez", probe(async () => undefined)],
      ["/readyz", probe(() => this.#unready())],
      ["/healthz", probe(() => this.#databaseProblem())],
    ]);
  }
}
