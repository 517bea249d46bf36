// Builds the project's native addon (native/malloc-trim) after `npm ci` / `npm install` (package.json's postinstall).
// The service runs without it, only keeping malloc's free pages (src/runtime/native-heap.ts), so a machine without a
// C compiler or Node's headers gets a warning here and a working install; CI requires it (test/native-heap.test.ts).

import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const addonDirectory = fileURLToPath(new URL("./malloc-trim/", import.meta.url));

function warn(reason: string): void {
  console.warn(`tonquery: native/malloc-trim was not built (${reason}); the service will run without handing malloc's free pages back to the system`);
}

if (process.platform !== "linux") {
  // malloc_trim is glibc's; elsewhere there is nothing to build.
  process.exit(0);
}

// npm names its own node-gyp to the scripts it runs; otherwise one on the PATH.
const nodeGyp = process.env.npm_config_node_gyp;
const command = nodeGyp !== undefined && nodeGyp !== "" ? process.execPath : "node-gyp";
const args = nodeGyp !== undefined && nodeGyp !== "" ? [nodeGyp, "rebuild"] : ["rebuild"];
const result = spawnSync(command, args, { cwd: addonDirectory, encoding: "utf8" });
if (result.error !== undefined) {
  warn(result.error.message);
} else if (result.status !== 0) {
  const lastLines = `${result.stdout}\n${result.stderr}`.trim().split("\n").slice(-5).join("\n");
  warn(`node-gyp exited with ${result.status}:\n${lastLines}`);
}
