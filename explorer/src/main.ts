import "./style.css";
import { ConnectError } from "@connectrpc/connect";
import { describeError, findTrace, liveAccountTraces, traceById, tracesPage } from "./api.ts";
import { el } from "./dom.ts";
import { viewLink } from "./links.ts";
import { classifyQuery } from "./query.ts";
import { searchOfView, urlHash, viewOfSearch, type View } from "./route.ts";
import { renderTraceList } from "./trace-list.ts";
import { renderTrace } from "./trace-view.ts";

// The explorer's shell: a search box over one view at a time, the view named by the URL (route.ts). Following a link
// or searching pushes a new URL and draws its view; the back button draws the previous one.

const searchInput = el("input", {
  attrs: {
    type: "search",
    name: "q",
    placeholder: "transaction hash, message hash, trace id or address",
    "aria-label": "transaction hash, message hash, trace id or account address",
    autocomplete: "off",
    spellcheck: "false",
  },
});
const form = el("form", { class: "search", attrs: { role: "search" } }, searchInput, el("button", { text: "Find", attrs: { type: "submit" } }));
const main = el("main", { attrs: { id: "view" } });
document.body.append(
  el("header", { class: "top" }, viewLink({ kind: "home" }, el("strong", { text: "tonquery" }), " trace explorer"), form),
  main,
);

form.addEventListener("submit", (event) => {
  event.preventDefault();
  const query = searchInput.value.trim();
  if (query !== "") navigate({ kind: "search", query });
});

// A plain left click on a link between views draws it here; other clicks (a new tab, a middle click) are the browser's.
document.addEventListener("click", (event) => {
  const link = (event.target as Element | null)?.closest?.("a[data-nav]");
  if (link === null || link === undefined || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  history.pushState(null, "", (link as HTMLAnchorElement).href);
  void show(viewOfSearch(location.search));
});
window.addEventListener("popstate", () => void show(viewOfSearch(location.search)));

function navigate(view: View): void {
  history.pushState(null, "", `${location.pathname}${searchOfView(view)}`);
  void show(view);
}

/** Writes the URL of what is now shown, without a new history entry (a search resolved, a selection changed). */
function replaceUrl(view: View): void {
  history.replaceState(null, "", `${location.pathname}${searchOfView(view)}`);
}

let current: AbortController | undefined;

function message(kind: "error" | "notice", text: string): HTMLElement {
  return el("p", { class: `message ${kind}`, attrs: { role: kind === "error" ? "alert" : "status", "data-message": kind } }, text);
}

async function show(view: View): Promise<void> {
  current?.abort();
  const controller = new AbortController();
  current = controller;
  const { signal } = controller;
  searchInput.value = view.kind === "search" ? view.query : view.kind === "account" ? view.account : "";
  main.replaceChildren(el("p", { class: "loading", text: "Loading…" }));
  main.setAttribute("aria-busy", "true");
  try {
    await draw(view, signal);
  } catch (err) {
    if (signal.aborted) return;
    main.replaceChildren(message("error", err instanceof ConnectError ? describeError(err) : `Something went wrong drawing this view: ${String(err)}`));
  } finally {
    if (!signal.aborted) main.removeAttribute("aria-busy");
  }
}

async function draw(view: View, signal: AbortSignal): Promise<void> {
  switch (view.kind) {
    case "home":
    case "account": {
      const account = view.kind === "account" ? view.account : undefined;
      const pageToken = view.kind === "account" ? view.pageToken : undefined;
      const first = await tracesPage(account, pageToken, signal);
      if (signal.aborted) return;
      document.title = account === undefined ? "tonquery trace explorer" : `${account} · tonquery`;
      renderTraceList(main, {
        account: account === undefined ? undefined : accountKey(first, account),
        first,
        olderLink: account === undefined ? undefined : (token) => viewLink({ kind: "account", account, pageToken: token }, "Older traces →"),
        newestLink: account !== undefined && pageToken !== undefined ? viewLink({ kind: "account", account }, "← Newest traces") : undefined,
        live: liveAccountTraces,
        signal,
      });
      return;
    }
    case "trace": {
      const found = await traceById(view.traceId, signal);
      if (signal.aborted) return;
      if (found === undefined) {
        main.replaceChildren(message("error", `No trace with id ${view.traceId} is indexed.`));
        return;
      }
      document.title = `Trace ${urlHash(found.trace.traceId).slice(0, 8)}… · tonquery`;
      renderTrace(main, found.answer, found.trace, {
        selection: view.selection,
        onSelect: (selection) => replaceUrl({ kind: "trace", traceId: found.trace.traceId, selection }),
      });
      return;
    }
    case "search": {
      const lookup = classifyQuery(view.query);
      if (lookup.kind === "invalid") {
        main.replaceChildren(message("error", lookup.reason));
        return;
      }
      if (lookup.kind === "account") {
        replaceUrl({ kind: "account", account: lookup.address });
        await draw({ kind: "account", account: lookup.address }, signal);
        return;
      }
      const found = await findTrace(lookup.hash, signal);
      if (signal.aborted) return;
      if (found === undefined) {
        main.replaceChildren(message("error", `Nothing indexed has the hash ${lookup.hash}: no transaction, message or trace. It may not have happened yet, or not be indexed.`));
        return;
      }
      replaceUrl({ kind: "trace", traceId: found.trace.traceId, selection: found.matched });
      document.title = `Trace ${urlHash(found.trace.traceId).slice(0, 8)}… · tonquery`;
      renderTrace(main, found.answer, found.trace, {
        selection: found.matched,
        onSelect: (selection) => replaceUrl({ kind: "trace", traceId: found.trace.traceId, selection }),
      });
      return;
    }
  }
}

/**
 * The account's key in the answer's address book (its raw form), found from the form the person typed: the book
 * lists every address of the page, and the account's user-friendly form (or its raw form in any case) is one of them.
 */
function accountKey(answer: { addressBook: Record<string, { userFriendly?: string }> }, typed: string): string {
  const upper = typed.toUpperCase();
  for (const [raw, row] of Object.entries(answer.addressBook)) {
    if (raw.toUpperCase() === upper || row.userFriendly === typed) return raw;
  }
  // Another user-friendly form of the same account (bounceable where the book has non-bounceable, testnet): the
  // flags are in the first character and the checksum in the last three, the workchain and account id between.
  for (const [raw, row] of Object.entries(answer.addressBook)) {
    if (row.userFriendly !== undefined && row.userFriendly.slice(1, 45) === typed.replace(/\+/g, "-").replace(/\//g, "_").slice(1, 45)) return raw;
  }
  return typed;
}

void show(viewOfSearch(location.search));
