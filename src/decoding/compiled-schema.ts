import { readFileSync } from "node:fs";
import { projectFile } from "../runtime/project-files.ts";

// The TL-B schema as the decoder (tlb-decoder.ts) reads it, and its stored form.
//
// The service loads the schema from schema/compiled.json, which `npm run generate:tlb` writes from schema/*.tlb
// with the parser (tlb-schema.ts): parsing at start-up (ohm-js under @ton-community/tlb-parser) cost 0.6-1.5 s of
// CPU and left tens of MB of old generation committed, which V8 never hands back, for a schema of under 1 MB. This
// module therefore imports nothing of the parser; test/tlb-schema.test.ts fails when compiled.json is not what the
// .tlb files compile to.

/** A type expression: the type of a field, or an argument of a type. */
export type TypeExpr =
  | { readonly k: "name"; readonly name: string; readonly args: readonly TypeExpr[] }
  | { readonly k: "num"; readonly value: number }
  | { readonly k: "add" | "mul"; readonly left: TypeExpr; readonly right: TypeExpr }
  /** `~x`: a value the type computes and hands back (Unary ~n, HmLabel ~l m). */
  | { readonly k: "out"; readonly inner: TypeExpr }
  | { readonly k: "ref"; readonly inner: TypeExpr }
  /** `[ fields ]` or `^[ fields ]` written inline. */
  | { readonly k: "record"; readonly fields: readonly Field[] }
  /** `flags.3?X` (bit 3 of flags set) or `n?X` (n non-zero). */
  | { readonly k: "cond"; readonly flag: TypeExpr; readonly bit: number | null; readonly inner: TypeExpr }
  /** `## n`, `#< n`, `#<= n` and `#` (uint32). */
  | { readonly k: "nat"; readonly op: "##" | "#<" | "#<=" | "#"; readonly arg: TypeExpr | null };

export type Field =
  /** `{n:#}` or `{X:Type}`: bound from the type's arguments or computed by a later field. */
  | { readonly k: "param"; readonly name: string }
  /** `{n <= m}`, `{n = (~m) + l}`. */
  | { readonly k: "check"; readonly left: TypeExpr; readonly op: string; readonly right: TypeExpr }
  /** A stored field; `name` is "" for an anonymous one (`_:X`), printed under the empty key as tlbc does. */
  | { readonly k: "value"; readonly name: string; readonly type: TypeExpr };

export interface Constructor {
  /** "" for `_`: printed without "@type". */
  readonly name: string;
  readonly typeName: string;
  readonly tagBits: number;
  readonly tag: bigint;
  readonly params: ReadonlySet<string>;
  readonly args: readonly TypeExpr[];
  readonly fields: readonly Field[];
}

/** The constructors of every type, each type's in the order they are tried. */
export class CompiledSchema {
  readonly types = new Map<string, Constructor[]>();

  constructors(typeName: string): readonly Constructor[] {
    return this.types.get(typeName) ?? [];
  }

  /** Adds a constructor after those its type already has. */
  append(constructor: Constructor): void {
    const list = this.types.get(constructor.typeName);
    if (list) list.push(constructor);
    else this.types.set(constructor.typeName, [constructor]);
  }
}

/** A constructor as JSON holds it: the tag in hex (a bigint has no JSON form), the params as a list. */
export interface StoredConstructor {
  readonly name: string;
  readonly typeName: string;
  readonly tagBits: number;
  readonly tag: string;
  readonly params: readonly string[];
  readonly args: readonly TypeExpr[];
  readonly fields: readonly Field[];
}

/** schema/compiled.json: each schema file's constructors, in the file's order. */
export interface StoredSchema {
  readonly files: { readonly [file: string]: readonly StoredConstructor[] };
}

export const compiledSchemaUrl = projectFile("src/decoding/schema/compiled.json");

export function storedConstructor(constructor: Constructor): StoredConstructor {
  const { name, typeName, tagBits, tag, params, args, fields } = constructor;
  return { name, typeName, tagBits, tag: tag.toString(16), params: [...params], args, fields };
}

function constructorFromStored(stored: StoredConstructor): Constructor {
  return { ...stored, tag: BigInt(`0x${stored.tag}`), params: new Set(stored.params) };
}

/** The schema of the given files, in that order, as compiled.json holds them: what compiling their text gives. */
export function readCompiledSchema(files: readonly string[]): CompiledSchema {
  const stored = JSON.parse(readFileSync(compiledSchemaUrl, "utf8")) as StoredSchema;
  const schema = new CompiledSchema();
  for (const file of files) {
    const constructors = Object.hasOwn(stored.files, file) ? stored.files[file] : undefined;
    if (constructors === undefined) {
      throw new Error(`${file} is not in src/decoding/schema/compiled.json: run npm run generate:tlb`);
    }
    for (const constructor of constructors) schema.append(constructorFromStored(constructor));
  }
  return schema;
}
