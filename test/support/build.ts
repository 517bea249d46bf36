import { execFile } from "node:child_process";
import { promisify } from "node:util";

// vitest's global setup: `npm run build` once, before any file runs. `npm start` builds before it runs (prestart),
// and two builds at once would rewrite dist/ under a server loading it: the files that run `npm start` or the
// build find it made (test/readme.test.ts runs `npm start` without its prestart, test/start.test.ts runs dist/).

export default async function build(): Promise<void> {
  await promisify(execFile)("npm", ["run", "--silent", "build"], { cwd: new URL("../..", import.meta.url).pathname });
}
