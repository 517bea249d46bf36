import type { Config } from "./config.ts";
import type { Database } from "./db/client.ts";

/** What every handler may use; built once at start-up and shared by the RPC and REST doors. */
export interface ServiceDeps {
  db: Database;
  config: Config;
}
