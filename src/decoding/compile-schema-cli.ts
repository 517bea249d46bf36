import { writeFileSync } from "node:fs";
import { compiledSchemaUrl } from "./compiled-schema.ts";
import { compileSchemaFiles, storedSchemaText } from "./tlb-schema.ts";

// `npm run generate:tlb` (also part of `npm run generate`): compiles schema/*.tlb into schema/compiled.json, which
// the service loads instead of parsing the schema at start-up (see compiled-schema.ts). Run it after editing a .tlb
// file and commit both; test/tlb-schema.test.ts and `npm run check:gen` fail while they disagree.

const text = storedSchemaText(compileSchemaFiles());
writeFileSync(compiledSchemaUrl, text);
console.log(`src/decoding/schema/compiled.json  ${(text.length / 1024).toFixed(1)} KiB`);
