import { el } from "./dom.ts";
import type { Names } from "./format.ts";
import type { Phrase } from "./sentences.ts";
import { searchOfView, type View } from "./route.ts";

// Links between views are real links (a URL that opens the view, so they can be copied, opened in a new tab or
// bookmarked); main.ts follows a plain click on one without reloading the page.

export function viewLink(view: View, ...children: Array<Node | string>): HTMLAnchorElement {
  const link = el("a", { attrs: { href: searchOfView(view) || "?", "data-nav": "" } }, ...children);
  return link;
}

/** An address by its label, linked to the account's traces; the whole address in the tooltip. */
export function accountLink(address: string, names: Names): HTMLAnchorElement {
  const link = viewLink({ kind: "account", account: names.friendly(address) }, names.label(address));
  const kind = names.kind(address);
  const domain = names.domain(address);
  link.title = `${domain === undefined ? "" : `${domain}: `}${names.friendly(address)}${kind === "" ? "" : ` (${kind})`}`;
  link.classList.add("address");
  link.dataset.address = address;
  return link;
}

export function phraseNodes(phrase: Phrase, names: Names): Array<Node | string> {
  return phrase.map((part) => (typeof part === "string" ? part : accountLink(part.address, names)));
}
