import { readdirSync, readFileSync } from "node:fs";
import {
  BuiltinOneArgExpr,
  BuiltinZeroArgs,
  CellRefExpr,
  CombinatorExpr,
  CompareExpr,
  CondExpr,
  type Declaration,
  type Expression,
  FieldAnonymousDef,
  FieldBuiltinDef,
  FieldCurlyExprDef,
  type FieldDefinition,
  FieldExprDef,
  FieldNamedDef,
  MathExpr,
  NameExpr,
  NegateExpr,
  NumberExpr,
} from "@ton-community/tlb-parser";
import { buildAST, buildGrammar } from "@ton-community/tlb-parser/dist/intermediate.js";
import {
  CompiledSchema,
  type Constructor,
  type Field,
  type StoredConstructor,
  type StoredSchema,
  storedConstructor,
  type TypeExpr,
} from "./compiled-schema.ts";
import { projectFile } from "../runtime/project-files.ts";

// The TL-B schema compiler: from the text of schema/*.tlb to the plain data that the decoder in tlb-decoder.ts
// interprets (compiled-schema.ts). It runs at build time (`npm run generate:tlb` writes schema/compiled.json) and in
// tests, never in the service, which loads compiled.json without the parser.
//
// The schema language is parsed by @ton-community/tlb-parser (the TON community's maintained grammar for TL-B, the
// same one its code generator uses): it turns the text into an AST and nothing else. We do not use its sibling
// @ton-community/tlb-codegen, because generated code prints values its own way (bigint, Address objects, `kind`
// names), while toncenter's form is the generic print of tlbc (see message-body.ts); nor
// @ton-community/tlb-runtime, which the npm registry does not carry. So the AST is compiled here into plain data.

/** A schema that can compile TL-B source text into itself. */
export class TlbSchema extends CompiledSchema {
  /** Compiles TL-B source text into this schema; later declarations of a type follow earlier ones in priority. */
  add(source: string, origin: string): void {
    for (const constructor of compileTlb(source, origin)) this.append(constructor);
  }
}

/** The constructors TL-B source text declares, in its order; `origin` names the text in errors. */
export function compileTlb(source: string, origin: string): Constructor[] {
  const grammar = tlbGrammar();
  const constructors: Constructor[] = [];
  for (const text of declarationTexts(source)) {
    let program;
    try {
      program = buildAST(text, grammar);
    } catch (error) {
      // The whole file's error, whose position counts from the file's start (this text's does not).
      throw new Error(`${origin}: ${(parseFailure(source, grammar) ?? (error as Error)).message}`);
    }
    for (const declaration of program.declarations) constructors.push(compileDeclaration(declaration, origin));
  }
  return constructors;
}

const schemaDirectory = projectFile("src/decoding/schema/");

/** Every schema/*.tlb file compiled on its own, as schema/compiled.json stores them. */
export function compileSchemaFiles(): StoredSchema {
  const files: { [file: string]: StoredConstructor[] } = {};
  for (const file of readdirSync(schemaDirectory).filter((name) => name.endsWith(".tlb")).sort()) {
    files[file] = compileTlb(readFileSync(new URL(file, schemaDirectory), "utf8"), file).map(storedConstructor);
  }
  return { files };
}

/**
 * The text of schema/compiled.json: one constructor per line, so that a change to a .tlb file shows in review as
 * the lines of the constructors it changed.
 */
export function storedSchemaText(schema: StoredSchema): string {
  const files = Object.entries(schema.files).map(([file, constructors]) => {
    const lines = constructors.map((constructor) => `      ${JSON.stringify(constructor)}`);
    return `    ${JSON.stringify(file)}: [\n${lines.join(",\n")}\n    ]`;
  });
  const generated = "written by npm run generate:tlb from src/decoding/schema/*.tlb: edit those, then run it";
  return `{\n  "generated": ${JSON.stringify(generated)},\n  "files": {\n${files.join(",\n")}\n  }\n}\n`;
}

// How the schema is parsed (at the service's start-up until compiled.json; now by `npm run generate:tlb` and the
// tests, whose time it still is). The parser's `ast()` builds its grammar anew at every call
// (ohm-js reading the TL-B grammar's own text), and ohm memoizes every rule at every position of its input, so whole
// files at once took 1.1 s and left 37 MB of the old generation committed for a compiled schema of under 1 MB (V8
// keeps the pages a heap has once committed). One grammar for all the files, and one declaration at a time, whose
// memo tables die young: 0.6 s and 11 MB (the 19 files, measured alone in a process with `npm start`'s flags).

function parseFailure(source: string, grammar: ReturnType<typeof buildGrammar>): Error | undefined {
  try {
    buildAST(source, grammar);
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

let sharedGrammar: WeakRef<ReturnType<typeof buildGrammar>> | undefined;

/**
 * The grammar, built once for the files compiled in one go: a WeakRef keeps it until the current job ends, so a
 * process does not hold it once its schema is compiled.
 */
function tlbGrammar(): ReturnType<typeof buildGrammar> {
  const grammar = sharedGrammar?.deref() ?? buildGrammar();
  sharedGrammar = new WeakRef(grammar);
  return grammar;
}

/**
 * The declarations of TL-B source text, each ending with its ";" and preceded by as many line breaks, then spaces,
 * as come before it in the file: the lines and columns the parser records are the file's. A ";" inside a comment
 * ends nothing.
 */
export function declarationTexts(source: string): string[] {
  const texts: string[] = [];
  let start = 0;
  const take = (end: number) => {
    const text = source.slice(start, end);
    if (text.trim() !== "") {
      const before = source.slice(0, start);
      const lineStart = before.lastIndexOf("\n") + 1;
      texts.push("\n".repeat(before.length - before.replaceAll("\n", "").length) + " ".repeat(start - lineStart) + text);
    }
    start = end;
  };
  for (let i = 0; i < source.length; i++) {
    if (source.startsWith("//", i)) {
      const end = source.indexOf("\n", i);
      i = end < 0 ? source.length : end;
    } else if (source.startsWith("/*", i)) {
      const end = source.indexOf("*/", i + 2);
      i = end < 0 ? source.length : end + 1;
    } else if (source[i] === ";") {
      take(i + 1);
    }
  }
  take(source.length);
  return texts;
}

function compileDeclaration(declaration: Declaration, origin: string): Constructor {
  const { name, tag } = declaration.constructorDef;
  const where = `${origin}:${declaration.locations.line}`;
  const parsedTag = compileTag(name, tag, where);
  const params = new Set<string>();
  const fields = declaration.fields.map((field) => compileField(field, params, where));
  return {
    name: name === "_" ? "" : name,
    typeName: declaration.combinator.name,
    ...parsedTag,
    params,
    args: declaration.combinator.args.map((arg) => compileType(arg, where)),
    fields,
  };
}

function compileTag(name: string, tag: string | null, where: string): { tagBits: number; tag: bigint } {
  // TL-B derives a missing tag from a CRC32 of the declaration; our schema always writes it, so that the tag a
  // reader sees in the file is the one on the chain.
  if (tag === null) {
    if (name !== "_") throw new Error(`${where}: constructor ${name} has no tag (write #_ or $_ for none)`);
    return { tagBits: 0, tag: 0n };
  }
  const digits = tag.slice(1);
  if (digits === "_" || digits === "") return { tagBits: 0, tag: 0n };
  if (tag.startsWith("$")) return { tagBits: digits.length, tag: BigInt(`0b${digits}`) };
  if (digits.endsWith("_")) throw new Error(`${where}: completion tags are not supported`);
  return { tagBits: digits.length * 4, tag: BigInt(`0x${digits}`) };
}

function compileField(field: FieldDefinition, params: Set<string>, where: string): Field {
  if (field instanceof FieldBuiltinDef) {
    params.add(field.name);
    return { k: "param", name: field.name };
  }
  if (field instanceof FieldCurlyExprDef) {
    const expr = field.expr;
    if (!(expr instanceof CompareExpr)) throw new Error(`${where}: unsupported constraint`);
    return { k: "check", left: compileType(expr.left, where), op: expr.op, right: compileType(expr.right, where) };
  }
  if (field instanceof FieldAnonymousDef) {
    const record: TypeExpr = { k: "record", fields: field.fields.map((f) => compileField(f, new Set(), where)) };
    return { k: "value", name: fieldName(field.name), type: field.isRef ? { k: "ref", inner: record } : record };
  }
  if (field instanceof FieldNamedDef) return { k: "value", name: fieldName(field.name), type: compileType(field.expr, where) };
  if (field instanceof FieldExprDef) return { k: "value", name: "", type: compileType(field.expr, where) };
  throw new Error(`${where}: unsupported field`);
}

function fieldName(name: string | null): string {
  return name === null || name === "_" ? "" : name;
}

function compileType(expr: Expression, where: string): TypeExpr {
  if (expr instanceof NumberExpr) return { k: "num", value: expr.num };
  if (expr instanceof NameExpr) return { k: "name", name: expr.name, args: [] };
  if (expr instanceof CombinatorExpr) {
    return { k: "name", name: expr.name, args: expr.args.map((arg) => compileType(arg, where)) };
  }
  if (expr instanceof MathExpr) {
    return { k: expr.op === "+" ? "add" : "mul", left: compileType(expr.left, where), right: compileType(expr.right, where) };
  }
  if (expr instanceof NegateExpr) return { k: "out", inner: compileType(expr.expr, where) };
  if (expr instanceof CellRefExpr) return { k: "ref", inner: compileType(expr.expr, where) };
  if (expr instanceof CondExpr) {
    // The parser gives the bit as a Number object (`new Number("3")`): a primitive is what JSON gives back.
    const bit = expr.dotExpr === null ? null : Number(expr.dotExpr);
    return { k: "cond", flag: compileType(expr.left, where), bit, inner: compileType(expr.condExpr, where) };
  }
  if (expr instanceof BuiltinOneArgExpr) return { k: "nat", op: expr.name, arg: compileType(expr.arg, where) };
  if (expr instanceof BuiltinZeroArgs) return { k: "nat", op: "#", arg: null };
  throw new Error(`${where}: unsupported type expression ${expr.constructor.name}`);
}
