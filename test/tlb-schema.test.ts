import { readFileSync } from "node:fs";
import { ast } from "@ton-community/tlb-parser";
import { buildAST, buildGrammar } from "@ton-community/tlb-parser/dist/intermediate.js";
import { describe, expect, it } from "vitest";
import { schemaFiles } from "../src/decoding/message-body.ts";
import { declarationTexts, TlbSchema } from "../src/decoding/tlb-schema.ts";

const schemaText = (file: string) => readFileSync(new URL(`../src/decoding/schema/${file}`, import.meta.url), "utf8");
/** An AST as data, without its parent links (cycles). */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === "parent" ? undefined : typeof v === "bigint" ? String(v) : v)));

describe("the TL-B schema, compiled one declaration at a time", () => {
  const grammar = buildGrammar();
  it.each(schemaFiles)("%s: the declarations parse as the whole file does, at the file's lines and columns", (file) => {
    const source = schemaText(file);
    const whole = ast(source).declarations;
    const oneByOne = declarationTexts(source).flatMap((text) => buildAST(text, grammar).declarations);
    expect(oneByOne).toHaveLength(whole.length);
    expect(plain(oneByOne)).toEqual(plain(whole));
  });

  it("ends a declaration at a semicolon outside comments only", () => {
    const source = "a$0 = A; // one; two\n/* three;\nfour; */ b$1 x:(## 8) = B;\n";
    const texts = declarationTexts(source);
    expect(texts).toHaveLength(2);
    expect(texts[1]?.trimStart()).toBe("// one; two\n/* three;\nfour; */ b$1 x:(## 8) = B;");
    const second = ast(texts[1] as string).declarations[0];
    expect(second?.constructorDef.name).toBe("b");
    expect(second?.locations).toMatchObject({ line: 3, column: 10 });
    const [, onTheSameLine] = declarationTexts("a$0 = A;  b$1 = B;");
    expect(ast(onTheSameLine as string).declarations[0]?.locations).toMatchObject({ line: 1, column: 11 });
  });

  it("reports a syntax error where it is in the file", () => {
    const source = "a$0 = A;\nb$1 = B;\nc$1 x:(## 8 = C;\n";
    let expected = "";
    try {
      ast(source);
    } catch (error) {
      expected = (error as Error).message;
    }
    expect(expected).toMatch(/position \d+/);
    expect(() => new TlbSchema().add(source, "broken.tlb")).toThrow(`broken.tlb: ${expected}`);
  });
});
