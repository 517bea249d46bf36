import type { JsonValue } from "@bufbuild/protobuf";
import { el } from "./dom.ts";
import type { Names } from "./format.ts";
import { accountLink } from "./links.ts";

// A decoded message body (toncenter's form: the constructor under "@type", fields by their TL-B names) as a tree
// a person reads: amounts as their value, addresses as links, Maybe/Either as what they hold, nested payloads as
// nested sections, open two levels deep.

type JsonRecord = { [key: string]: JsonValue };

function isRecord(value: JsonValue): value is JsonRecord {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The wrappers whose content is their `value` field. */
const wrappers = new Set(["something_from_maybe", "first_from_either", "second_from_either"]);

export function decodedValue(value: JsonValue, names: Names, depth = 0): Node {
  if (isRecord(value)) {
    const type = typeof value["@type"] === "string" ? (value["@type"] as string) : undefined;
    if (type === "var_uint" || type === "var_int") return el("span", { class: "number", text: String(value.value ?? "") });
    if (type === "addr_std" && typeof value.address === "string") return accountLink(`${value.workchain_id ?? 0}:${value.address.toUpperCase()}`, names);
    if (type === "addr_none") return el("span", { class: "muted", text: "no address" });
    if (type === "nothing_from_maybe") return el("span", { class: "muted", text: "none" });
    if (type === "empty_cell") return el("span", { class: "muted", text: "empty" });
    if (type !== undefined && wrappers.has(type) && "value" in value) return decodedValue(value.value as JsonValue, names, depth);
    const fields = Object.entries(value).filter(([key]) => key !== "@type");
    const list = el("dl", { class: "decoded" }, ...fields.flatMap(([key, field]) => [el("dt", { text: key }), el("dd", {}, decodedValue(field, names, depth + 1))]));
    if (type === undefined) return list;
    const section = el("details", { class: "decoded-type" }, el("summary", { text: type }), list);
    section.open = depth < 2;
    return section;
  }
  if (Array.isArray(value)) return el("ol", { class: "decoded-list" }, ...value.map((item) => el("li", {}, decodedValue(item, names, depth + 1))));
  if (typeof value === "string" && value.length > 96) {
    // A cell that does not decode, as a base64 bag of cells: whole, but folded.
    return el("details", { class: "long" }, el("summary", { text: `${value.slice(0, 32)}… (${value.length} characters)` }), el("code", { text: value }));
  }
  return el("span", { class: typeof value === "string" ? "text" : "number", text: String(value) });
}
