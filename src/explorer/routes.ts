import { readFile } from "node:fs/promises";
import type { Config } from "../runtime/config.ts";
import { publicError } from "../server/errors.ts";
import { chooseCoding, type CompressionSettings } from "../rest/compression.ts";
import { sendJson } from "../rest/router.ts";
import type { HttpHandler, HttpResponse } from "../server/single-port.ts";
import { explorerBundle, type ExplorerBundle } from "./bundle.ts";
import { projectFile } from "../runtime/project-files.ts";

// GET /explorer: the trace explorer, a page that finds and draws traces, served like /docs: every file from this
// server under a fixed path (no part of a request's path is joined to a file path), and a Content-Security-Policy
// that lets the page load and call nothing but this origin. The page's code is explorer/src/ (see bundle.ts); it
// calls the typed API over gRPC-web, never the REST paths.

/** No inline script or style, no eval, no frames, images only from here: the strictest policy the page works with. */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join("; ");

/**
 * The page's frame; the script draws the rest. Relative URLs, so the page keeps working behind a proxy that serves
 * this service under a path prefix (the script finds the API the same way, from the page's URL).
 */
function pageHtml(bundle: ExplorerBundle): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tonquery trace explorer</title>
<link rel="icon" type="image/svg+xml" href="explorer/assets/favicon.svg">
<link rel="stylesheet" href="explorer/assets/${bundle.stylesheet.name}?v=${bundle.stylesheet.version}">
<script defer src="explorer/assets/${bundle.script.name}?v=${bundle.script.version}"></script>
</head>
<body>
<noscript>The trace explorer is drawn by JavaScript; this browser runs none.</noscript>
</body>
</html>
`;
}

// Versioned by the ?v= of their URLs: a new build is a new URL, so a week is safe.
const versioned = { "cache-control": "public, max-age=604800" };
// The page names the current build's URLs, so it is revalidated on every visit.
const pageHeaders = { "cache-control": "no-cache", "content-security-policy": contentSecurityPolicy };

const faviconFile = projectFile("explorer/favicon.svg");
let favicon: Promise<Buffer> | undefined;

type Served = { type: string; bytes: Buffer; headers: Record<string, string>; coded?: { br: Buffer; gzip: Buffer } };

function serve(what: string, load: () => Promise<Served>, compression: CompressionSettings): HttpHandler {
  return (req, res) => {
    load().then(
      (file) => {
        // The script and the stylesheet go compressed as the REST answers do (COMPRESSION, Accept-Encoding).
        const coding = file.coded === undefined ? undefined : chooseCoding(req.headers, file.bytes.length, compression);
        const body = coding === undefined ? file.bytes : (file.coded as NonNullable<Served["coded"]>)[coding];
        const headers = { ...file.headers, ...(coding === undefined ? {} : { "content-encoding": coding }), ...(file.coded !== undefined && compression.enabled ? { vary: "Accept-Encoding" } : {}) };
        send(res, { ...file, bytes: body, headers }, req.method === "HEAD");
      },
      (err: unknown) => sendJson(res, 500, { error: publicError(err, `explorer ${what}`).rawMessage }),
    );
  };
}

function send(res: HttpResponse, file: Served, headOnly: boolean): void {
  if (res.headersSent || res.writableEnded) return;
  res.writeHead(200, {
    "content-type": file.type,
    "content-length": file.bytes.length,
    "x-content-type-options": "nosniff",
    ...file.headers,
  });
  if (headOnly) res.end();
  else res.end(file.bytes);
}

/** The handlers of /explorer and its assets, by exact path (GET and HEAD; the caller refuses other methods). */
export function explorerRoutes(config: Config): ReadonlyMap<string, HttpHandler> {
  const compression = { enabled: config.compression, minBytes: config.compressionMinBytes };
  return new Map<string, HttpHandler>([
    [
      "/explorer",
      serve("page", async () => ({ type: "text/html; charset=utf-8", bytes: Buffer.from(pageHtml(await explorerBundle())), headers: pageHeaders }), compression),
    ],
    // A trailing slash would make the page's relative URLs point one folder too deep.
    [
      "/explorer/",
      (req, res) => {
        const query = req.url?.includes("?") ? req.url.slice(req.url.indexOf("?")) : "";
        res.writeHead(301, { location: `../explorer${query}`, "content-length": 0 });
        res.end();
      },
    ],
    ["/explorer/assets/explorer.js", serve("script", async () => ({ ...(await explorerBundle()).script, headers: versioned }), compression)],
    ["/explorer/assets/explorer.css", serve("stylesheet", async () => ({ ...(await explorerBundle()).stylesheet, headers: versioned }), compression)],
    [
      "/explorer/assets/favicon.svg",
      serve("favicon", async () => ({ type: "image/svg+xml", bytes: await (favicon ??= readFile(faviconFile)), headers: versioned }), compression),
    ],
  ]);
}
