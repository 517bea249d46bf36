import type { Config } from "./config.ts";
import type { Sql } from "./db/client.ts";

/** What every handler may use; built once at start-up and shared by the RPC and REST doors. */
export interface ServiceDeps {
  sql: Sql;
  config: Config;
}
