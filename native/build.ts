// Builds the project's native addons after `npm ci` / `npm install` (package.json's postinstall): native/malloc-trim
// (glibc's malloc_trim) and native/memory-pressure (V8's memory-pressure signal). The service runs without either
// (src/runtime/native-heap.ts, src/runtime/memory-release.ts), so a machine without a C compiler or Node's headers gets
// a warning here and a working install; CI requires both (test/native-heap.test.ts).

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const consequences = {
  "malloc-trim": "the service will run without handing malloc's free pages back to the system",
  "memory-pressure": "the service will release memory under load with V8's last-resort collection, which stops it for longer",
} as const;

function warn(addon: keyof typeof consequences, reason: string): void {
  console.warn(`tonquery: native/${addon} was not built (${reason}); ${consequences[addon]}`);
}

/**
 * The headers of the Node that runs this script: the V8 API is not stable across Node versions, so the memory-pressure
 * addon must be built against them, not against whatever npm's node-gyp is set to use (Node-API's are). Linux
 * distributions keep them in include/node beside bin/, the project's own Node (the `node` package, whose bin/node is a
 * hard link) in its platform package; a directory counts only if its node_version.h is this Node's version.
 */
function runningNodeHeaders(): string | undefined {
  const prefixes = [dirname(dirname(process.execPath)), dirname(dirname(realpathSync(process.execPath)))];
  const candidates = prefixes.flatMap((prefix) => [prefix, join(prefix, "node_modules", `node-${process.platform}-${process.arch}`)]);
  return candidates.find((prefix) => headersVersion(prefix) === process.versions.node);
}

function headersVersion(prefix: string): string | undefined {
  const file = join(prefix, "include", "node", "node_version.h");
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, "utf8");
  const part = (name: string) => new RegExp(`#define NODE_${name}_VERSION (\\d+)`).exec(text)?.[1];
  return [part("MAJOR"), part("MINOR"), part("PATCH")].join(".");
}

function build(addon: keyof typeof consequences, nodedir?: string): void {
  // npm names its own node-gyp to the scripts it runs; otherwise one on the PATH.
  const nodeGyp = process.env.npm_config_node_gyp;
  const viaNpm = nodeGyp !== undefined && nodeGyp !== "";
  const command = viaNpm ? process.execPath : "node-gyp";
  const args = [...(viaNpm ? [nodeGyp] : []), "rebuild", ...(nodedir === undefined ? [] : [`--nodedir=${nodedir}`])];
  const cwd = fileURLToPath(new URL(`./${addon}/`, import.meta.url));
  // npm passes its own nodedir setting to node-gyp in the environment, which the command line does not override.
  const env = nodedir === undefined ? process.env : { ...process.env, npm_config_nodedir: nodedir };
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8" });
  if (result.error !== undefined) {
    warn(addon, result.error.message);
  } else if (result.status !== 0) {
    const lastLines = `${result.stdout}\n${result.stderr}`.trim().split("\n").slice(-5).join("\n");
    warn(addon, `node-gyp exited with ${result.status}:\n${lastLines}`);
  }
}

// malloc_trim is glibc's; elsewhere there is nothing to build.
if (process.platform === "linux") build("malloc-trim");

const headers = runningNodeHeaders();
if (headers === undefined) warn("memory-pressure", `no headers of Node ${process.versions.node} beside ${process.execPath}`);
else build("memory-pressure", headers);
