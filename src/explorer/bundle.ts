import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { brotliCompress, constants as zlibConstants, gzip } from "node:zlib";
import { projectRoot } from "../runtime/project-files.ts";

// The trace explorer's browser code (explorer/src/, TypeScript) bundled by esbuild into one script and one
// stylesheet, in memory.
//
// Why in the server, at first use, rather than at install or before start: nothing generated is committed or left
// on disk, so the page can never be stale against its source, the proto's generated code or the installed
// @connectrpc/connect-web (a fresh clone, `git pull`, `npm run generate` or an edit are served as they are); a
// process that never serves /explorer (a test server, an API-only deployment) never pays for it; and `npm ci &&
// npm start`, `npm test` and a deployment that starts `src/main.ts` itself all work without a build step to
// remember. The cost is one build per process at the first request for the page: 0.3-0.5 s here, in esbuild's own
// process (native code) and on the thread pool (compression), while the event loop keeps serving. `npm run build:explorer` runs the same
// build and writes the files out (explorer/dist/), to look at them or serve them from elsewhere.

export interface ExplorerFile {
  /** The file's name under /explorer/assets/. */
  name: string;
  type: string;
  bytes: Buffer;
  /** A digest of the bytes: the ?v= of the file's URL, so a new build is a new URL and the old one may be cached long. */
  version: string;
  /** The same bytes compressed once (they are sent many times and never change). */
  coded: { br: Buffer; gzip: Buffer };
}

export interface ExplorerBundle {
  script: ExplorerFile;
  stylesheet: ExplorerFile;
}

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

async function explorerFile(name: string, type: string, contents: Uint8Array): Promise<ExplorerFile> {
  const bytes = Buffer.from(contents);
  const version = createHash("sha256").update(bytes).digest("base64url").slice(0, 16);
  // On the thread pool, once. Measured on the 170 KB script: brotli 7 takes 40 ms for 48.8 KB, where 9 takes 115 ms
  // and 11 (the maximum) 790 ms for 45.3 KB, which the first visitor would wait for; gzip 9 takes 16 ms for 52 KB.
  const [br, gz] = await Promise.all([
    brotli(bytes, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 7, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }),
    gzipAsync(bytes, { level: zlibConstants.Z_BEST_COMPRESSION }),
  ]);
  return { name, type, bytes, version, coded: { br, gzip: gz } };
}

/**
 * Bundles explorer/src/main.ts (and the stylesheet it imports) for browsers. Deterministic: the same sources give
 * the same bytes, whatever the checkout's folder (minified output names no paths).
 */
export async function buildExplorer(): Promise<ExplorerBundle> {
  // Loaded at the first build: a process that never serves /explorer never loads esbuild's API.
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    absWorkingDir: projectRoot,
    entryPoints: { explorer: "explorer/src/main.ts" },
    tsconfig: "explorer/tsconfig.json",
    bundle: true,
    format: "iife",
    platform: "browser",
    // Browsers of the last few years: fetch streams, Intl, optional chaining, bigint literals.
    target: ["chrome111", "firefox111", "safari16.4"],
    minify: true,
    // Licences of the bundled packages stay in the output, at its end.
    legalComments: "eof",
    outdir: "explorer-bundle",
    write: false,
    logLevel: "silent",
  });
  const byExtension = (extension: string) => {
    const file = result.outputFiles.find((output) => output.path.endsWith(extension));
    if (file === undefined) throw new Error(`explorer build produced no ${extension} file`);
    return file.contents;
  };
  const [script, stylesheet] = await Promise.all([
    explorerFile("explorer.js", "text/javascript; charset=utf-8", byExtension(".js")),
    explorerFile("explorer.css", "text/css; charset=utf-8", byExtension(".css")),
  ]);
  return { script, stylesheet };
}

let built: Promise<ExplorerBundle> | undefined;

/**
 * The bundle, built once per process on first call and shared by every server in it. A failed build is not kept:
 * the next request tries again (and fails again with the same message while the cause lasts). esbuild's helper
 * process is stopped afterwards, so an idle server keeps no child process.
 */
export function explorerBundle(): Promise<ExplorerBundle> {
  built ??= buildExplorer().then(
    (bundle) => {
      void import("esbuild").then((esbuild) => esbuild.stop());
      return bundle;
    },
    (err: unknown) => {
      built = undefined;
      throw err;
    },
  );
  return built;
}
