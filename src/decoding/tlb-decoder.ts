import { RawCell, restOfRawCell } from "../ton/raw-cell.ts";
import type { CompiledSchema, Constructor, Field, TypeExpr } from "./compiled-schema.ts";

// Reads cells against a compiled TL-B schema and prints the value the way tlbc's generic JSON printer does, which
// is what toncenter returns as `decoded`:
// - a constructor is an object with its name under "@type" (none for `_`) and its fields by name, in order;
//   an anonymous field (`_:X`) under the empty key;
// - integers of every width, `## n`, `#<= n`, `#< n` and `#` as decimal strings; Bool as true/false;
// - fixed bit strings (`bitsN`, `bits n`, `n * Bit`) as uppercase hex;
// - `Cell` / `Any` (the rest of a cell) and `^Cell` as the Cell itself, for the caller to print (toncenter
//   prints a bag of cells, or the decoded body when the cell is one);
// - `SnakeString` as text;
// - `^X` stored in a field: X's value; `^X` passed to a type (Maybe ^X, Either X ^X): {"cell_reference": X's value}.
// A value either decodes completely (every referenced cell read to its end) or not at all: the decoder returns
// undefined, never half an object, and never throws on any input.

/** A decoded value: JSON, except that cells are left as Cells. */
export type Decoded = string | boolean | RawCell | Decoded[] | { [key: string]: Decoded };

interface TypeClosure {
  readonly expr: TypeExpr;
  readonly env: Env;
}
type Env = Map<string, number | TypeClosure>;
type Arg = number | TypeClosure | { readonly out: TypeExpr };

const fail = Symbol("fail");
const absent = Symbol("absent");
type Result = Decoded | typeof fail;

/** Work allowed for one decode: generous for any real body, finite for a crafted one. */
const stepBudget = 50_000;
const cellRenderNames = new Set(["Cell", "Any"]);
const sizedInteger = /^(u?int|bits)(\d+)$/;

interface SizedType {
  readonly kind: "uint" | "int" | "bits";
  readonly width: number;
}
const sizedTypes = new Map<string, SizedType | null>();

/** `uint64`, `int8`, `bits256` as kind and width; null for any other name. Memoised: asked for every field read. */
function sizedType(name: string): SizedType | null {
  let sized = sizedTypes.get(name);
  if (sized === undefined) {
    const match = sizedInteger.exec(name);
    sized = match ? { kind: match[1] as SizedType["kind"], width: Number(match[2]) } : null;
    sizedTypes.set(name, sized);
  }
  return sized;
}

class Cursor {
  bit = 0;
  ref = 0;
  readonly cell: RawCell;
  constructor(cell: RawCell) {
    this.cell = cell;
  }
  get bitsLeft(): number {
    return this.cell.bitLength - this.bit;
  }
  get refsLeft(): number {
    return this.cell.refs.length - this.ref;
  }
  get atEnd(): boolean {
    return this.bitsLeft === 0 && this.refsLeft === 0;
  }
}

function isClosure(value: unknown): value is TypeClosure {
  return typeof value === "object" && value !== null && "expr" in value;
}

function tagMatches(constructor: Constructor, cursor: Cursor): boolean {
  const { tagBits } = constructor;
  if (tagBits === 0) return true;
  if (cursor.bitsLeft < tagBits) return false;
  return tagBits <= 32
    ? cursor.cell.uint(cursor.bit, tagBits) === Number(constructor.tag)
    : cursor.cell.bigint(cursor.bit, tagBits, false) === constructor.tag;
}

function bitsFor(limit: number): number {
  // #< n takes the bits of n - 1; #<= n those of n.
  return limit <= 0 ? 0 : 32 - Math.clz32(limit);
}

export class TlbDecoder {
  #steps = 0;
  /** The numeric value of the last natural read, bound to its field's name by the caller. */
  #lastNat: number | undefined;

  readonly #schema: CompiledSchema;
  constructor(schema: CompiledSchema) {
    this.#schema = schema;
  }

  /**
   * Decodes `cell` as one of the given constructors (tried in order), requiring it to start with that
   * constructor's tag. `complete` also requires the cell's own bits and references to be used up.
   */
  decodeAs(constructors: readonly Constructor[], cell: RawCell, complete: boolean): Decoded | undefined {
    if (cell.exotic) return undefined;
    for (const constructor of constructors) {
      this.#steps = stepBudget;
      const cursor = new Cursor(cell);
      try {
        const value = this.#construct(constructor, new Map(), cursor);
        if (value !== fail && (!complete || cursor.atEnd)) return value;
      } catch (error) {
        // Only a stack overflow on a pathological nesting can get here; anything else is a bug to surface.
        if (!(error instanceof RangeError)) throw error;
      }
    }
    return undefined;
  }

  /** Decodes the whole of `cell` as the named type applied to natural arguments (`WalletMsgs 2`). */
  decodeApplied(typeName: string, args: readonly number[], cell: RawCell): Decoded | undefined {
    if (cell.exotic) return undefined;
    this.#steps = stepBudget;
    const cursor = new Cursor(cell);
    const argExprs: TypeExpr[] = args.map((value) => ({ k: "num", value }));
    try {
      const value = this.#apply(typeName, argExprs, new Map(), cursor);
      return value !== fail && cursor.atEnd ? value : undefined;
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      return undefined;
    }
  }

  #construct(constructor: Constructor, env: Env, cursor: Cursor): Result {
    if (--this.#steps < 0) return fail;
    if (!tagMatches(constructor, cursor)) return fail;
    cursor.bit += constructor.tagBits;
    const out: { [key: string]: Decoded } = constructor.name === "" ? {} : { "@type": constructor.name };
    return this.#fields(constructor.fields, env, cursor, out);
  }

  #fields(fields: readonly Field[], env: Env, cursor: Cursor, out: { [key: string]: Decoded }): Result {
    for (const field of fields) {
      if (field.k === "param") continue;
      if (field.k === "check") {
        if (!this.#check(field.left, field.op, field.right, env)) return fail;
        continue;
      }
      this.#lastNat = undefined;
      const value = this.#value(field.type, env, cursor, false);
      if (value === fail) return fail;
      if (value === absent) continue;
      if (this.#lastNat !== undefined && field.name !== "") env.set(field.name, this.#lastNat);
      out[field.name] = value;
    }
    return out;
  }

  #value(type: TypeExpr, env: Env, cursor: Cursor, passedAsArgument: boolean): Result | typeof absent {
    if (--this.#steps < 0) return fail;
    switch (type.k) {
      case "name":
        return this.#named(type, env, cursor);
      case "ref":
        return this.#reference(type.inner, env, cursor, passedAsArgument);
      case "record": {
        const value = this.#fields(type.fields, new Map(env), cursor, {});
        return value;
      }
      case "cond": {
        const flag = evalNat(type.flag, env);
        if (flag === undefined) return fail;
        const present = type.bit === null ? flag !== 0 : ((flag >>> type.bit) & 1) === 1;
        return present ? this.#value(type.inner, env, cursor, false) : absent;
      }
      case "nat":
        return this.#natural(type, env, cursor);
      case "mul": {
        const count = evalNat(type.left, env);
        if (count === undefined) return fail;
        if (type.right.k === "name" && type.right.name === "Bit" && type.right.args.length === 0) return this.#bits(count, cursor);
        const items: Decoded[] = [];
        for (let i = 0; i < count; i++) {
          const item = this.#value(type.right, env, cursor, false);
          if (item === fail || item === absent) return fail;
          items.push(item);
        }
        return items;
      }
      default:
        return fail;
    }
  }

  #named(type: Extract<TypeExpr, { k: "name" }>, env: Env, cursor: Cursor): Result {
    const { name, args } = type;
    if (args.length === 0) {
      const bound = env.get(name);
      if (bound !== undefined) {
        if (!isClosure(bound)) return fail;
        const value = this.#value(bound.expr, bound.env, cursor, true);
        return value === absent ? fail : value;
      }
      if (name === "Bool") {
        if (cursor.bitsLeft < 1) return fail;
        return cursor.cell.bit(cursor.bit++);
      }
      if (cellRenderNames.has(name)) return this.#rest(cursor);
      if (name === "SnakeString") return this.#snakeString(cursor);
      const sized = sizedType(name);
      if (sized !== null) return this.#sized(sized.kind, sized.width, cursor);
    } else if (args.length === 1 && (name === "uint" || name === "int" || name === "bits")) {
      const width = evalNat(args[0] as TypeExpr, env);
      return width === undefined ? fail : this.#sized(name, width, cursor);
    }
    return this.#apply(name, args, env, cursor);
  }

  #apply(name: string, argExprs: readonly TypeExpr[], env: Env, cursor: Cursor): Result {
    const constructors = this.#schema.constructors(name);
    if (constructors.length === 0) return fail;
    const args = argExprs.map((expr) => toArg(expr, env));
    const startBit = cursor.bit;
    const startRef = cursor.ref;
    for (const constructor of constructors) {
      // The tag first: it rules out most constructors of a type before any work is done for them.
      if (!tagMatches(constructor, cursor)) continue;
      const local = bindArguments(constructor, args);
      if (local === undefined) continue;
      const value = this.#construct(constructor, local, cursor);
      if (value !== fail) {
        // Hand computed values (the `~n` of Unary ~n) back to the caller's names.
        constructor.args.forEach((pattern, i) => {
          const arg = args[i];
          if (pattern.k !== "out" || arg === undefined || typeof arg === "number" || isClosure(arg)) return;
          const computed = evalNat(pattern.inner, local);
          if (computed !== undefined && arg.out.k === "name") env.set(arg.out.name, computed);
        });
        return value;
      }
      cursor.bit = startBit;
      cursor.ref = startRef;
      if (this.#steps < 0) return fail;
    }
    return fail;
  }

  #reference(inner: TypeExpr, env: Env, cursor: Cursor, passedAsArgument: boolean): Result {
    if (cursor.refsLeft < 1) return fail;
    const child = cursor.cell.refs[cursor.ref++] as RawCell;
    if (inner.k === "name" && inner.args.length === 0 && cellRenderNames.has(inner.name) && !env.has(inner.name)) {
      return child;
    }
    if (child.exotic) return fail;
    const childCursor = new Cursor(child);
    const value = this.#value(inner, env, childCursor, false);
    if (value === fail || value === absent || !childCursor.atEnd) return fail;
    return passedAsArgument ? { cell_reference: value } : value;
  }

  #rest(cursor: Cursor): RawCell {
    const { cell } = cursor;
    const rest = restOfRawCell(cell, cursor.bit, cursor.ref);
    cursor.bit = cell.bitLength;
    cursor.ref = cell.refs.length;
    return rest;
  }

  #snakeString(cursor: Cursor): Result {
    // Whole bytes in this cell, then in each first reference, as tonlib and @ton/core write text.
    const chunks: Uint8Array[] = [];
    let cell: RawCell | undefined = restOfRawCell(cursor.cell, cursor.bit, cursor.ref);
    cursor.bit = cursor.cell.bitLength;
    cursor.ref = cursor.cell.refs.length;
    while (cell !== undefined) {
      if (cell.bitLength % 8 !== 0 || cell.refs.length > 1 || cell.exotic) return fail;
      chunks.push(cell.data.subarray(0, cell.bitLength / 8));
      cell = cell.refs[0];
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  #sized(kind: string, width: number, cursor: Cursor): Result {
    if (cursor.bitsLeft < width) return fail;
    if (kind === "bits") return this.#bits(width, cursor);
    const at = cursor.bit;
    cursor.bit += width;
    const { cell } = cursor;
    if (width <= 48) {
      // Exact in a double: no BigInt on the common path (opcodes, amounts' lengths, workchains, seqnos).
      let value = cell.uint(at, width);
      if (kind === "int" && width > 0 && cell.bit(at)) value -= 2 ** width;
      else if (kind === "uint" && width <= 32) this.#lastNat = value;
      return String(value);
    }
    if (kind === "uint" && width <= 64) {
      // query_id and friends: exact in a double while the high part stays below 2^21.
      const high = cell.uint(at, width - 32);
      if (high < 0x200000) return String(high * 0x100000000 + cell.uint(at + width - 32, 32));
    }
    return cell.bigint(at, width, kind === "int").toString();
  }

  #bits(width: number, cursor: Cursor): Result {
    if (cursor.bitsLeft < width) return fail;
    const hex = cursor.cell.hex(cursor.bit, width);
    cursor.bit += width;
    return hex;
  }

  #natural(type: Extract<TypeExpr, { k: "nat" }>, env: Env, cursor: Cursor): Result {
    let width: number;
    let limit: number | undefined;
    if (type.op === "#") width = 32;
    else {
      const arg = evalNat(type.arg as TypeExpr, env);
      if (arg === undefined) return fail;
      if (type.op === "##") width = arg;
      else {
        limit = type.op === "#<" ? arg - 1 : arg;
        if (limit < 0) return fail;
        width = bitsFor(limit);
      }
    }
    if (width > 32 || cursor.bitsLeft < width) return width > 32 ? this.#sized("uint", width, cursor) : fail;
    const value = cursor.cell.uint(cursor.bit, width);
    if (limit !== undefined && value > limit) return fail;
    cursor.bit += width;
    this.#lastNat = value;
    return String(value);
  }

  #check(left: TypeExpr, op: string, right: TypeExpr, env: Env): boolean {
    const l = evalNat(left, env);
    const r = evalNat(right, env);
    if (l !== undefined && r !== undefined) return compare(l, op, r);
    if (op !== "=") return false;
    // {n = (~m) + l}: solve for the one unknown.
    return l === undefined ? solve(left, r, env) : solve(right, l, env);
  }
}

function compare(l: number, op: string, r: number): boolean {
  switch (op) {
    case "=":
      return l === r;
    case "!=":
      return l !== r;
    case "<":
      return l < r;
    case "<=":
      return l <= r;
    case ">":
      return l > r;
    case ">=":
      return l >= r;
    default:
      return false;
  }
}

function unknownName(expr: TypeExpr): string | undefined {
  if (expr.k === "out") return unknownName(expr.inner);
  return expr.k === "name" && expr.args.length === 0 ? expr.name : undefined;
}

function solve(expr: TypeExpr, value: number | undefined, env: Env): boolean {
  if (value === undefined) return false;
  const name = unknownName(expr);
  if (name !== undefined) {
    if (value < 0) return false;
    env.set(name, value);
    return true;
  }
  if (expr.k !== "add") return false;
  const left = evalNat(expr.left, env);
  const right = evalNat(expr.right, env);
  if (left === undefined && right !== undefined) return solve(expr.left, value - right, env);
  if (right === undefined && left !== undefined) return solve(expr.right, value - left, env);
  return false;
}

function evalNat(expr: TypeExpr, env: Env): number | undefined {
  switch (expr.k) {
    case "num":
      return expr.value;
    case "name": {
      if (expr.args.length > 0) return undefined;
      const value = env.get(expr.name);
      return typeof value === "number" ? value : undefined;
    }
    case "out":
      return evalNat(expr.inner, env);
    case "add":
    case "mul": {
      const left = evalNat(expr.left, env);
      const right = evalNat(expr.right, env);
      if (left === undefined || right === undefined) return undefined;
      return expr.k === "add" ? left + right : left * right;
    }
    default:
      return undefined;
  }
}

function toArg(expr: TypeExpr, env: Env): Arg {
  if (expr.k === "out") return { out: expr.inner };
  if (expr.k === "num") return expr.value;
  if (expr.k === "name" && expr.args.length === 0) {
    const bound = env.get(expr.name);
    if (bound !== undefined) return bound;
  }
  if (expr.k === "add" || expr.k === "mul") {
    const value = evalNat(expr, env);
    if (value !== undefined) return value;
  }
  return { expr, env };
}

/** The constructor's own names bound from the arguments its type was applied to, or undefined if they do not fit. */
function bindArguments(constructor: Constructor, args: readonly Arg[]): Env | undefined {
  const env: Env = new Map();
  for (let i = 0; i < constructor.args.length; i++) {
    const pattern = constructor.args[i] as TypeExpr;
    const arg = args[i];
    if (pattern.k === "out") continue;
    if (arg === undefined || (typeof arg === "object" && "out" in arg)) return undefined;
    if (pattern.k === "num") {
      if (arg !== pattern.value) return undefined;
    } else if (pattern.k === "name" && pattern.args.length === 0 && constructor.params.has(pattern.name)) {
      const known = env.get(pattern.name);
      if (known !== undefined && known !== arg) return undefined;
      env.set(pattern.name, arg);
    } else if (pattern.k === "add") {
      const offset = evalNat(pattern.right, env);
      const name = unknownName(pattern.left);
      if (typeof arg !== "number" || offset === undefined || name === undefined || arg < offset) return undefined;
      env.set(name, arg - offset);
    }
  }
  return env;
}
