import { createRequire } from "node:module";
import { projectFile } from "./project-files.ts";

/**
 * One of the project's addons (native/, built by `npm ci`: see native/build.ts), or undefined where it was not built or
 * does not load (another platform, another Node version for one built against V8's own API): the service then runs
 * without what it gives.
 */
export function loadNativeAddon<T>(name: string): T | undefined {
  try {
    return createRequire(import.meta.url)(projectFile(`native/${name}/build/Release/${name.replaceAll("-", "_")}.node`).pathname) as T;
  } catch {
    return undefined;
  }
}
