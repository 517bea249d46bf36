import type { Trace } from "../../gen/tonquery/v1/trace_pb.ts";
import { describeError } from "./api.ts";
import { el } from "./dom.ts";
import { Names, shortHash, utcTime } from "./format.ts";
import { phraseNodes, viewLink } from "./links.ts";
import { type LiveState, type LiveTraces, type TracesAnswer, withArrivals } from "./live.ts";
import { actionPhrase } from "./sentences.ts";

// A list of traces, newest first: an account's (the account view), or the whole index's (the first page). Each row
// says when, what happened (its first actions in words), how large it is and its state, and links to the trace.
// Older traces are one link away (the API's page token in the URL). The account view follows new traces from a
// live source when it has one (see live.ts), on its first page only: older pages do not move. A line under the heading
// says that it follows (and up to which masterchain block), and a trace that arrived is marked until the next one does.

export interface TraceListOptions {
  /** The account whose traces these are, to name it in the heading; undefined for the index's newest traces. */
  account: string | undefined;
  first: TracesAnswer & { nextPageToken: string };
  /** Links to the next page, and back to the first (absent on the first page). */
  olderLink: ((pageToken: string) => HTMLAnchorElement) | undefined;
  newestLink: HTMLAnchorElement | undefined;
  live: LiveTraces | undefined;
  signal: AbortSignal;
}

/** Names from several answers: the first page's and those of traces that arrived later. */
function mergedNames(answers: TracesAnswer[]): Names {
  return new Names(Object.assign({}, ...answers.map((answer) => answer.addressBook)), Object.assign({}, ...answers.map((answer) => answer.metadata)));
}

function traceRow(trace: Trace, names: Names, arrived: boolean): HTMLTableRowElement {
  const state = trace.traceInfo?.traceState ?? "unknown";
  const summary = trace.actions.slice(0, 2).map((action) => el("div", { class: action.success ? "" : "failed" }, ...phraseNodes(actionPhrase(action, names), names)));
  if (trace.actions.length > 2) summary.push(el("div", { class: "muted", text: `and ${trace.actions.length - 2} more action${trace.actions.length === 3 ? "" : "s"}` }));
  if (summary.length === 0) summary.push(el("div", { class: "muted", text: "no classified actions" }));
  return el(
    "tr",
    { class: arrived ? "arrived" : "", attrs: { "data-trace": trace.traceId } },
    el("td", { class: "time", text: utcTime(trace.endUtime ?? trace.startUtime) }),
    el("td", {}, viewLink({ kind: "trace", traceId: trace.traceId }, el("code", { text: shortHash(trace.traceId) }))),
    el("td", { class: "summary" }, ...summary),
    el("td", { class: "count", text: String(trace.traceInfo?.transactions ?? trace.transactions.length) }),
    el("td", {}, el("span", { class: `badge ${state}`, text: trace.isIncomplete ? `${state}, too large` : state })),
  );
}

export function renderTraceList(container: HTMLElement, options: TraceListOptions): void {
  const answers: TracesAnswer[] = [options.first];
  let traces: Trace[] = [...options.first.traces];
  let arrivedIds = new Set<string>();
  const body = el("tbody");
  const draw = () => {
    const names = mergedNames(answers);
    body.replaceChildren(...traces.map((trace) => traceRow(trace, names, arrivedIds.has(trace.traceId))));
  };

  const names = mergedNames(answers);
  const heading =
    options.account === undefined
      ? el("h1", { text: "Newest traces in the index" })
      : el("h1", {}, "Traces of ", el("span", { class: "account-name", text: names.label(options.account) }));
  const about =
    options.account === undefined
      ? el("p", { class: "muted", text: "Search above for a transaction, a message, a trace or an account, or open one of these." })
      : el("p", { class: "muted" }, el("code", { class: "hash", text: names.friendly(options.account) }), names.kind(options.account) === "" ? "" : ` · ${names.kind(options.account)}`);
  const table = el(
    "table",
    { class: "traces" },
    el("thead", {}, el("tr", {}, ...["time", "trace", "what happened", "transactions", "state"].map((title) => el("th", { text: title })))),
    body,
  );
  const pager = el("nav", { class: "pager" }, options.newestLink ?? "", options.first.nextPageToken === "" || options.olderLink === undefined ? "" : options.olderLink(options.first.nextPageToken));
  const empty = el("p", { class: "empty", text: options.account === undefined ? "The index holds no traces yet." : "No traces of this account are indexed." });
  draw();
  container.replaceChildren(heading, about, traces.length === 0 ? empty : table, pager);

  if (options.live !== undefined && options.account !== undefined && options.newestLink === undefined) {
    const account = options.account;
    const live = options.live;
    const indicator = el("p", { class: "live", attrs: { role: "status", "data-live": "following" } }, "Following live: new traces appear at the top as they land.");
    about.after(indicator);
    const showState = (state: LiveState) => {
      indicator.dataset.live = state.kind;
      if (state.position !== undefined) indicator.dataset.position = String(state.position);
      const upTo = state.position === undefined ? "" : ` (up to masterchain block ${state.position})`;
      indicator.textContent =
        state.kind === "following" ? `Following live${upTo}: new traces appear at the top as they land.` : `Connection lost${upTo}; reconnecting (attempt ${state.attempt})…`;
    };
    void (async () => {
      for await (const arrived of live(account, options.signal, showState)) {
        answers.push(arrived);
        traces = withArrivals(traces, arrived.traces);
        arrivedIds = new Set(arrived.traces.map((trace) => trace.traceId));
        draw();
        if (table.parentElement === null) empty.replaceWith(table);
      }
    })().catch((err: unknown) => {
      if (options.signal.aborted) return;
      indicator.dataset.live = "stopped";
      indicator.textContent = "Not following live any more: reload the page to follow again.";
      container.append(el("p", { class: "banner warning", text: `Live updates stopped: ${describeError(err)}` }));
    });
  }
}
