import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { compiledSchemaUrl, readCompiledSchema, type StoredSchema } from "../src/decoding/compiled-schema.ts";
import { schemaFiles } from "../src/decoding/message-body.ts";
import { TlbSchema } from "../src/decoding/tlb-schema.ts";

const schemaDirectory = new URL("../src/decoding/schema/", import.meta.url);
const tlbFiles = readdirSync(schemaDirectory).filter((name) => name.endsWith(".tlb")).sort();
const regenerate = "src/decoding/schema/compiled.json is stale: run npm run generate:tlb and commit it";

describe("the compiled TL-B schema the service loads (src/decoding/schema/compiled.json)", () => {
  it("holds every .tlb file, and the service's schema files are among them", () => {
    const stored = JSON.parse(readFileSync(compiledSchemaUrl, "utf8")) as StoredSchema;
    expect(Object.keys(stored.files).sort(), regenerate).toEqual(tlbFiles);
    expect(tlbFiles).toEqual(expect.arrayContaining([...schemaFiles]));
  });

  it.each(tlbFiles)("%s: is what the parser compiles the file to", (file) => {
    const parsed = new TlbSchema();
    parsed.add(readFileSync(new URL(file, schemaDirectory), "utf8"), file);
    const compiled = readCompiledSchema([file]);
    // Map entries compared in order: the order of a type's constructors is the order they are tried in.
    expect([...compiled.types], regenerate).toEqual([...parsed.types]);
  });

  it("is loaded by the service without the parser: ohm-js and tlb-parser stay out of its process", async () => {
    // A fresh process, since this one has loaded the parser: it records every module resolved while the server's
    // modules load and the decoder is built as at start-up, then while the parser's module loads (the control that
    // the recording sees it at all).
    const probe = `
      import { registerHooks } from "node:module";
      const resolved = [];
      registerHooks({
        resolve(specifier, context, next) {
          const result = next(specifier, context);
          resolved.push(result.url);
          return result;
        },
      });
      await import(${JSON.stringify(new URL("../src/server/server.ts", import.meta.url).href)});
      const { prepareBodyDecoding } = await import(${JSON.stringify(new URL("../src/decoding/page-bodies.ts", import.meta.url).href)});
      prepareBodyDecoding({ decodeBodies: true, decodedBodyCache: 0 });
      const service = resolved.splice(0);
      await import(${JSON.stringify(new URL("../src/decoding/tlb-schema.ts", import.meta.url).href)});
      console.log(JSON.stringify({ service, parser: resolved }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "--eval", probe]);
    const { service, parser } = JSON.parse(stdout) as { service: string[]; parser: string[] };
    const parserModules = (urls: string[]) =>
      urls.filter((url) => /\/node_modules\/(ohm-js|@ton-community\/tlb-parser)\//.test(url));
    expect(service.some((url) => url.endsWith("/src/decoding/message-body.ts"))).toBe(true);
    expect(parserModules(service)).toEqual([]);
    expect(parserModules(parser).length).toBeGreaterThan(0);
  });
});
