import type { Schema } from "./schemas.ts";

// What the REST paths and the streaming doors both read from a request, as the document states it.

export const ref = (kind: "schemas" | "responses", name: string): Schema => ({ $ref: `#/components/${kind}/${name}` });

// What src/ton/hash.ts and src/ton/address.ts accept, as patterns.
export const hashForms = "(?:0x)?[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?";
export const hashInput: Schema = { type: "string", pattern: `^(?:${hashForms})$` };
export const addressInput: Schema = { type: "string", pattern: "^(?:-?[0-9]+:[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{48})$" };

export function query(name: string, description: string, schema: Schema, extra: Schema = {}): Schema {
  return { name, in: "query", description, required: false, schema, ...extra };
}
