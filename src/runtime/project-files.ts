import { fileURLToPath } from "node:url";

// The service reads a few files of the project at run time (the schema, the recordings of the demo, the TL-B
// schema, the explorer's favicon). It runs from its build (dist/, see tsconfig.build.json) and, in tests and tools,
// from the sources; either way those files are found where they are in the project, not copied next to the build.

/** This module's folder in the sources (src/runtime/) or in the build (dist/src/runtime/). */
const here = new URL(".", import.meta.url);
const builtHere = /\/dist\/src\/runtime\/$/.test(here.pathname);

/** The project's root folder (with a trailing slash). */
export const projectRootUrl = new URL(builtHere ? "../../../" : "../../", here);

/** The project's root folder as a path, without a trailing slash. */
export const projectRoot = fileURLToPath(projectRootUrl).replace(/\/$/, "");

/** A file of the project, by its path from the root (`src/db/schema.sql`). */
export function projectFile(path: string): URL {
  return new URL(path, projectRootUrl);
}
