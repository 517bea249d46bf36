import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import swaggerUiPackage from "swagger-ui-dist/package.json" with { type: "json" };
import type { Config } from "../runtime/config.ts";
import { publicError } from "../server/errors.ts";
import { sendJson } from "../rest/router.ts";
import type { HttpHandler, HttpResponse } from "../server/single-port.ts";
import { openApiDocument } from "./document.ts";

// GET /openapi.json and the browsable /docs page.
//
// The page is Swagger UI (swagger-ui-dist, pinned in package.json), served by us from node_modules: no CDN, so it
// works offline and behind a firewall, and its Content-Security-Policy lets the browser load nothing from another
// origin. Only the files the page needs are served, each under a fixed path: no part of a request's path is ever
// joined to a file path, so there is nothing to traverse. The tiny page and its start-up script are ours (the
// package's index.html points at a public petstore document and loads its standalone preset).

const assetVersion = swaggerUiPackage.version;
const swaggerUiDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/** Relative URLs: the page keeps working behind a proxy that serves this service under a path prefix. */
const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tonquery REST API</title>
<link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png?v=${assetVersion}">
<link rel="stylesheet" href="docs/assets/swagger-ui.css?v=${assetVersion}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js?v=${assetVersion}"></script>
<script src="docs/assets/docs.js?v=${assetVersion}"></script>
</body>
</html>
`;

// A script file rather than an inline script, so the CSP needs no 'unsafe-inline' for scripts. validatorUrl: null
// keeps Swagger UI from sending the document to its public online validator.
const docsScript = `window.ui = SwaggerUIBundle({
  url: new URL("openapi.json", document.baseURI).href,
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

/** Swagger UI sets inline styles and draws a few icons as data: URLs; everything else comes from this origin. */
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'self'",
].join("; ");

interface Asset {
  type: string;
  /** The bytes, read once on first use. */
  body: () => Promise<Buffer>;
  headers: Record<string, string>;
}

function once(read: () => Promise<Buffer>): () => Promise<Buffer> {
  let bytes: Promise<Buffer> | undefined;
  return () => (bytes ??= read());
}

// Versioned by the ?v= of their URLs, so they may be cached long; the page itself is revalidated.
const immutable = { "cache-control": "public, max-age=604800" };

function packageFile(name: string, type: string): Asset {
  return { type, body: once(() => readFile(join(swaggerUiDir, name))), headers: immutable };
}

function ownFile(text: string, type: string, headers: Record<string, string>): Asset {
  const bytes = Promise.resolve(Buffer.from(text));
  return { type, body: () => bytes, headers };
}

const assets: ReadonlyMap<string, Asset> = new Map([
  ["/docs", ownFile(docsPage, "text/html; charset=utf-8", { "cache-control": "no-cache", "content-security-policy": contentSecurityPolicy })],
  ["/docs/assets/docs.js", ownFile(docsScript, "text/javascript; charset=utf-8", immutable)],
  ["/docs/assets/swagger-ui-bundle.js", packageFile("swagger-ui-bundle.js", "text/javascript; charset=utf-8")],
  ["/docs/assets/swagger-ui.css", packageFile("swagger-ui.css", "text/css; charset=utf-8")],
  ["/docs/assets/favicon-32x32.png", packageFile("favicon-32x32.png", "image/png")],
]);

function serveAsset(asset: Asset, path: string): HttpHandler {
  return (req, res) => {
    asset.body().then(
      (body) => sendFile(res, body, asset, req.method === "HEAD"),
      (err: unknown) => sendJson(res, 500, { error: publicError(err, `docs ${path}`).rawMessage }),
    );
  };
}

function sendFile(res: HttpResponse, body: Buffer, asset: Asset, headOnly: boolean): void {
  if (res.headersSent || res.writableEnded) return;
  res.writeHead(200, {
    "content-type": asset.type,
    "content-length": body.length,
    "x-content-type-options": "nosniff",
    ...asset.headers,
  });
  if (headOnly) res.end();
  else res.end(body);
}

/**
 * The handlers of /openapi.json, /docs and the page's assets, by exact path (GET and HEAD; the caller refuses other
 * methods). The document is built once, from the configuration this process enforces.
 */
export function openApiRoutes(config: Config): ReadonlyMap<string, HttpHandler> {
  const document = openApiDocument(config);
  const routes = new Map<string, HttpHandler>([["/openapi.json", (req, res) => sendJson(res, 200, document, {}, req.method === "HEAD")]]);
  for (const [path, asset] of assets) routes.set(path, serveAsset(asset, path));
  return routes;
}
