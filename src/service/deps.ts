import type { Config } from "../runtime/config.ts";
import type { Database } from "../db/client.ts";
import type { Telemetry } from "../observability/telemetry.ts";

/** What every handler may use; built once at start-up and shared by the RPC and REST doors. */
export interface ServiceDeps {
  db: Database;
  config: Config;
  /** Where admission is measured; absent where handlers are called without a server (the bench's statement capture). */
  telemetry?: Telemetry;
}
