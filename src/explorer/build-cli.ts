import { mkdir, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { buildExplorer } from "./bundle.ts";

// `npm run build:explorer`: the same build the server runs in memory at the first request for /explorer (see
// bundle.ts), written to explorer/dist/ to look at or to serve from elsewhere. The server never reads that folder.

const outDir = fileURLToPath(new URL("../../explorer/dist/", import.meta.url));
const bundle = await buildExplorer();
await mkdir(outDir, { recursive: true });
for (const file of [bundle.script, bundle.stylesheet]) {
  await writeFile(`${outDir}${file.name}`, file.bytes);
  console.log(`explorer/dist/${file.name}  ${(file.bytes.length / 1024).toFixed(1)} KiB  (version ${file.version})`);
}
