import type { Trace } from "../../gen/tonquery/v1/trace_pb.ts";
import { el } from "./dom.ts";
import { drawTree } from "./drawing.ts";
import { Names, shortHash, utcTime } from "./format.ts";
import { phraseNodes } from "./links.ts";
import type { TracesAnswer } from "./live.ts";
import { messagePanel, transactionPanel, type PanelContext } from "./panel.ts";
import type { Selection } from "./route.ts";
import { actionPhrase } from "./sentences.ts";
import { buildTree, collapse, initialShown, layout, open, reveal, showMore, shownAncestor, type Shown } from "./tree.ts";

// One trace: what it is (state, size, time), its actions in words, the tree as a picture, and a side panel with
// the selected transaction or message. Hovering an action lights up its transactions in the picture; clicking a
// box or an arrow selects it (the URL keeps the selection, so a link opens the same view).

export interface TraceViewOptions {
  selection: Selection | undefined;
  /** Called when the person selects something, to keep it in the URL. */
  onSelect(selection: Selection | undefined): void;
}

/** "1 transaction", "5 transactions". */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function stateBanners(trace: Trace): HTMLElement[] {
  const banners: HTMLElement[] = [];
  const info = trace.traceInfo;
  if (trace.isIncomplete) {
    banners.push(
      el("p", { class: "banner warning", attrs: { "data-banner": "incomplete" } }, `Incomplete: ${trace.warning ?? "this trace is too large for the service to load"}. It has ${info?.transactions ?? "?"} transactions; the service sends none of them, so no tree is drawn.`),
    );
  } else if (trace.warning !== undefined) {
    banners.push(el("p", { class: "banner warning", attrs: { "data-banner": "warning" } }, `The index warns: ${trace.warning}.`));
  }
  if (info?.traceState === "pending") {
    banners.push(
      el("p", { class: "banner pending", attrs: { "data-banner": "pending" } }, `Pending: ${info.pendingMessages} message${info.pendingMessages === "1" ? " is" : "s are"} still on the way. The trace is not finished; open it again later for the rest.`),
    );
  } else if (info?.traceState === "broken") {
    banners.push(el("p", { class: "banner warning", attrs: { "data-banner": "broken" } }, "Broken: the indexer could not assemble this trace whole; transactions may be missing."));
  }
  return banners;
}

export function renderTrace(container: HTMLElement, answer: TracesAnswer, trace: Trace, options: TraceViewOptions): void {
  const names = new Names(answer.addressBook, answer.metadata);
  const tree = buildTree(trace);
  const shown: Shown = initialShown(tree);
  let selection = options.selection;
  const transactions = new Map(trace.transactions.map((tx) => [tx.hash, tx]));

  const info = trace.traceInfo;
  const header = el(
    "header",
    { class: "trace-header" },
    el("h1", {}, "Trace ", el("code", { class: "hash", text: trace.traceId, title: trace.traceId })),
    el(
      "p",
      { class: "facts" },
      el("span", { class: `badge ${info?.traceState ?? "unknown"}`, text: info?.traceState ?? "unknown state", attrs: { "data-state": info?.traceState } }),
      ` ${count(Number(info?.transactions ?? trace.transactions.length), "transaction")} · ${count(Number(info?.messages ?? 0), "message")} · ${utcTime(trace.startUtime)}`,
      trace.endUtime !== undefined && trace.endUtime !== trace.startUtime ? ` to ${utcTime(trace.endUtime).slice(11)}` : "",
      trace.externalHash !== undefined ? ` · external message ${shortHash(trace.externalHash)}` : "",
      trace.mcSeqnoEnd !== undefined ? ` · masterchain ${trace.mcSeqnoStart ?? "?"}–${trace.mcSeqnoEnd}` : "",
    ),
    ...stateBanners(trace),
  );

  const actionItems = trace.actions.map((action) =>
    el(
      "li",
      {
        class: action.success ? "action" : "action failed",
        attrs: { "data-action": action.actionId, "data-type": action.type, tabindex: 0 },
        title: `${action.type}: ${action.transactions.length} transaction${action.transactions.length === 1 ? "" : "s"}`,
      },
      ...phraseNodes(actionPhrase(action, names), names),
    ),
  );
  const actionsSection = el(
    "section",
    { class: "actions" },
    el("h2", { text: "Actions" }),
    actionItems.length > 0
      ? el("ol", { class: "action-list" }, ...actionItems)
      : el("p", { class: "muted", text: info?.classificationState === "unclassified" || info?.classificationState === undefined ? "No actions: the trace has not been classified." : "No actions were recognised in this trace." }),
  );

  const canvas = el("div", { class: "canvas", attrs: { "data-canvas": "" } });
  const panel = el("aside", { class: "panel", attrs: { "aria-live": "polite" } });
  container.replaceChildren(header, actionsSection, el("div", { class: "trace-body" }, canvas, panel));

  const context: PanelContext = {
    names,
    transaction: (hash) => transactions.get(hash),
    message: (hash) => {
      const found = tree.messages.get(hash);
      if (found === undefined) return undefined;
      return { message: found.message, senderTx: found.sender === undefined ? undefined : tree.nodes[found.sender]?.hash, receiverTx: found.receiver === undefined ? undefined : tree.nodes[found.receiver]?.hash };
    },
    select: (next) => select(next, true),
  };

  let lit: string[] = [];
  const redraw = () => {
    if (trace.isIncomplete) {
      canvas.replaceChildren(el("p", { class: "muted", text: "No tree: the service did not send this trace's transactions." }));
      return;
    }
    canvas.replaceChildren(drawTree({ tree, layout: layout(tree, shown), shown, names, pending: info?.traceState === "pending" }));
    markSelection();
    light(lit);
  };

  const markSelection = () => {
    for (const marked of canvas.querySelectorAll(".selected")) marked.classList.remove("selected");
    if (selection === undefined) return;
    const attribute = selection.kind === "tx" ? "data-tx" : "data-msg";
    canvas.querySelector(`[${attribute}="${CSS.escape(selection.hash)}"]`)?.classList.add("selected");
  };

  const showPanel = () => {
    if (selection?.kind === "tx") {
      const tx = transactions.get(selection.hash);
      if (tx !== undefined) {
        panel.replaceChildren(transactionPanel(tx, context));
        return;
      }
    } else if (selection?.kind === "msg") {
      const found = context.message(selection.hash);
      if (found !== undefined) {
        panel.replaceChildren(messagePanel(found, context));
        return;
      }
    }
    panel.replaceChildren(el("p", { class: "muted hint", text: "Select a transaction (a box) or a message (an arrow) to see its fields and decoded body." }));
  };

  /** Makes the selected transaction (or the receiver or sender of the selected message) visible in the drawing. */
  const revealSelection = (): boolean => {
    if (selection === undefined) return false;
    let node = selection.kind === "tx" ? tree.byTransaction.get(selection.hash) : undefined;
    if (selection.kind === "msg") {
      const found = tree.messages.get(selection.hash);
      node = found?.receiver ?? found?.sender;
      // An undelivered message is drawn when its sender shows all its branches up to it.
      if (found?.receiver === undefined && found?.sender !== undefined) {
        const sender = tree.nodes[found.sender];
        const index = sender?.branches.findIndex((branch) => branch.kind === "msg" && branch.message.hash === selection?.hash) ?? -1;
        if (index >= 0) shown.set(found.sender, Math.max(shown.get(found.sender) ?? 0, index + 1));
      }
    }
    if (node === undefined) return false;
    if (shownAncestor(tree, shown, node) === node) return false;
    reveal(tree, shown, node);
    return true;
  };

  /** Brings the selection into view; with none, the root (a wide tree centres its root over many columns). */
  const scrollToSelection = () => {
    if (selection === undefined) {
      const root = canvas.querySelector(`[data-index="${tree.roots[0]}"]`);
      if (root !== null) canvas.scrollLeft = root.getBoundingClientRect().left - canvas.getBoundingClientRect().left - canvas.clientWidth / 2 + 100;
      return;
    }
    const attribute = selection.kind === "tx" ? "data-tx" : "data-msg";
    canvas.querySelector(`[${attribute}="${CSS.escape(selection.hash)}"]`)?.scrollIntoView({ block: "nearest", inline: "center" });
  };

  const select = (next: Selection | undefined, scroll: boolean) => {
    selection = next;
    if (revealSelection()) redraw();
    else markSelection();
    showPanel();
    options.onSelect(selection);
    if (scroll) scrollToSelection();
  };

  /** Lights up the drawn boxes of these transactions, and the "+N" boxes that hide the others. */
  const light = (hashes: string[]) => {
    lit = hashes;
    for (const marked of canvas.querySelectorAll(".lit")) marked.classList.remove("lit");
    for (const hash of hashes) {
      const node = tree.byTransaction.get(hash);
      if (node === undefined) continue;
      const standIn = shownAncestor(tree, shown, node);
      const target = standIn === node ? canvas.querySelector(`[data-tx="${CSS.escape(hash)}"]`) : canvas.querySelector(`[data-more="${standIn}"]`);
      target?.classList.add("lit");
    }
  };

  trace.actions.forEach((action, i) => {
    const item = actionItems[i] as HTMLLIElement;
    const on = () => {
      item.classList.add("active");
      light(action.transactions);
    };
    const off = () => {
      item.classList.remove("active");
      light([]);
    };
    item.addEventListener("mouseenter", on);
    item.addEventListener("focus", on);
    item.addEventListener("mouseleave", off);
    item.addEventListener("blur", off);
  });

  // One listener for the whole picture: what was clicked is named by the data- attributes of its box or arrow.
  const activate = (target: Element) => {
    const toggle = target.closest("[data-toggle]");
    if (toggle !== null) {
      const index = Number(toggle.getAttribute("data-toggle"));
      if ((shown.get(index) ?? 0) > 0) collapse(tree, shown, index);
      else open(tree, shown, [index]);
      redraw();
      return;
    }
    const more = target.closest("[data-more]");
    if (more !== null) {
      showMore(tree, shown, Number(more.getAttribute("data-more")));
      redraw();
      return;
    }
    const tx = target.closest("[data-tx]");
    if (tx !== null) {
      select({ kind: "tx", hash: tx.getAttribute("data-tx") as string }, false);
      return;
    }
    const message = target.closest("[data-msg]");
    if (message !== null) select({ kind: "msg", hash: message.getAttribute("data-msg") as string }, false);
  };
  canvas.addEventListener("click", (event) => activate(event.target as Element));
  canvas.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      activate(event.target as Element);
    }
  });

  revealSelection();
  redraw();
  showPanel();
  scrollToSelection();
}
