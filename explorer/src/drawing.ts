import type { Message } from "../../gen/tonquery/v1/transaction_pb.ts";
import { svg } from "./dom.ts";
import { type Names, ton } from "./format.ts";
import { messageType, transactionOutcome } from "./summary.ts";
import { type Layout, type Shown, type TraceTree, type TreeNode } from "./tree.ts";

// The trace tree as an SVG picture: transactions as boxes (account, outcome, codes, fee), messages as arrows between
// them labelled with their type and value, messages that reached no transaction as small end boxes, hidden parts
// as "+N" boxes. Elements carry data- attributes naming what they show (data-tx, data-msg, data-more), which the
// view listens on and the tests read.

const box = { width: 214, height: 62 };
/** Between two slots side by side: room for an arrow's labels, which sit to the right of its head. */
const slotWidth = box.width + 40;
/** From one level's top to the next: the box, then the arrows with their labels. */
const levelHeight = box.height + 72;
const margin = 16;
const endBox = { width: 132, height: 30 };

/** Characters that fit on a box's line at the drawing's font size. */
const fit = (text: string, length: number) => (text.length > length ? `${text.slice(0, length - 1)}…` : text);

export interface DrawingInput {
  tree: TraceTree;
  layout: Layout;
  shown: Shown;
  names: Names;
  /** The trace is pending: a message that reached no transaction may still arrive. */
  pending: boolean;
}

interface Point {
  x: number;
  y: number;
}

/** The top-left corner of a box of `size` centred in its slot, at the top of its level. */
function placeBox(slot: number, level: number, size: { width: number; height: number }, offset: number): Point {
  return { x: margin + slot * slotWidth + (box.width - size.width) / 2, y: margin + (level + offset) * levelHeight + (box.height - size.height) / 2 };
}

/** Top to bottom by depth: the trace starts at the top, each level the transactions its messages caused. */
export function drawTree({ tree, layout, shown, names, pending }: DrawingInput): SVGSVGElement {
  // One level above the roots for where their inbound messages came from (outside the chain, for an external one).
  const hasSource = tree.roots.some((root) => tree.nodes[root]?.tx?.inMsg !== undefined);
  const offset = hasSource ? 1 : 0;
  const width = 2 * margin + Math.max(layout.slots, 1) * slotWidth - (slotWidth - box.width) + 140;
  const height = 2 * margin + (layout.levels + offset) * levelHeight - (levelHeight - box.height);
  const drawing = svg("svg", {
    class: "tree",
    attrs: { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": `trace tree of ${tree.nodes.length} transactions` },
  });
  const defs = svg("defs", {}, arrowHead("arrow", "edge-arrow"), arrowHead("arrow-bounced", "edge-arrow bounced"));
  const edges = svg("g", { class: "edges" });
  const boxes = svg("g", { class: "boxes" });
  drawing.append(defs, edges, boxes);

  const position = new Map<number, Point>();
  for (const placed of layout.nodes) position.set(placed.node, placeBox(placed.slot, placed.level, box, offset));
  const bottom = (at: Point, size = box) => ({ x: at.x + size.width / 2, y: at.y + size.height });
  const top = (at: Point, size = box) => ({ x: at.x + size.width / 2, y: at.y });

  for (const placed of layout.nodes) {
    const node = tree.nodes[placed.node] as TreeNode;
    const at = position.get(node.index) as Point;
    boxes.append(transactionBox(node, at, names, (shown.get(node.index) ?? 0) > 0));
    const inMsg = node.tx?.inMsg;
    if (node.parent !== undefined) {
      const from = position.get(node.parent);
      if (from !== undefined && inMsg !== undefined) edges.append(messageEdge(inMsg, bottom(from), top(at)));
    } else if (inMsg !== undefined) {
      // A root's inbound message, from a source box on the level above.
      const source = placeBox(placed.slot, placed.level - 1, endBox, offset);
      boxes.append(endpoint(source, inMsg.source === undefined ? "external" : names.label(inMsg.source), "source"));
      edges.append(messageEdge(inMsg, bottom(source, endBox), top(at)));
    }
  }
  for (const end of layout.ends) {
    const from = position.get(end.sender) as Point;
    const at = placeBox(end.slot, end.level, endBox, offset);
    const label = end.message.destination === undefined ? "external out" : pending ? "in flight" : "not indexed";
    boxes.append(endpoint(at, label, "end", end.message.hash));
    edges.append(messageEdge(end.message, bottom(from), top(at, endBox)));
  }
  for (const more of layout.more) {
    const from = position.get(more.node) as Point;
    const at = placeBox(more.slot, more.level, endBox, offset);
    const text = more.hiddenTransactions > 0 ? `+${more.hiddenTransactions} transaction${more.hiddenTransactions === 1 ? "" : "s"}` : `+${more.hiddenBranches} message${more.hiddenBranches === 1 ? "" : "s"}`;
    const group = endpoint(at, text, "more");
    group.dataset.more = String(more.node);
    group.setAttribute("role", "button");
    group.setAttribute("tabindex", "0");
    group.append(svg("title", { text: `${more.hiddenBranches} more branch${more.hiddenBranches === 1 ? "" : "es"} of this transaction, ${more.hiddenTransactions} transactions in all: click to show` }));
    boxes.append(group);
    edges.append(svg("path", { class: "edge hidden-edge", attrs: { d: curve(bottom(from), top(at, endBox)) } }));
  }
  return drawing;
}

function arrowHead(id: string, className: string): SVGMarkerElement {
  return svg(
    "marker",
    // Sized in the drawing's units, so that a thicker (selected) arrow keeps the same head.
    { attrs: { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" } },
    svg("path", { class: className, attrs: { d: "M 0 0 L 10 5 L 0 10 z" } }),
  );
}

/** From a box's bottom to another's top, leaving and arriving vertically. */
function curve(from: Point, to: Point): string {
  const middle = (from.y + to.y) / 2;
  return `M ${from.x} ${from.y} C ${from.x} ${middle}, ${to.x} ${middle}, ${to.x} ${to.y}`;
}

function transactionBox(node: TreeNode, at: Point, names: Names, open: boolean): SVGGElement {
  const tx = node.tx;
  const outcome = tx === undefined ? undefined : transactionOutcome(tx);
  const account = tx?.account;
  const kind = account === undefined ? "" : names.kind(account);
  const group = svg("g", {
    class: `node ${outcome === undefined ? "unknown" : outcome.ok ? "ok" : "failed"}`,
    attrs: { transform: `translate(${at.x} ${at.y})`, "data-tx": node.hash, "data-index": node.index, tabindex: 0, role: "button" },
    title: account === undefined ? `transaction ${node.hash} (not in the answer)` : `${names.friendly(account)}${kind === "" ? "" : ` (${kind})`}\ntransaction ${node.hash}`,
  });
  group.append(svg("rect", { class: "box", attrs: { width: box.width, height: box.height, rx: 6 } }));
  group.append(svg("text", { class: "name", attrs: { x: 10, y: 19 }, text: fit(account === undefined ? "unknown transaction" : names.label(account), 24) }));
  group.append(svg("text", { class: "kind", attrs: { x: 10, y: 35 }, text: fit(kind, 30) }));
  if (outcome !== undefined) {
    const status = svg("text", { class: "status", attrs: { x: 10, y: 52 } });
    status.append(svg("tspan", { class: outcome.ok ? "good" : "bad", text: outcome.ok ? `✓ ${outcome.text}` : `✗ ${outcome.text}` }));
    status.append(svg("tspan", { text: fit(` ${[outcome.codes, outcome.fee].filter((part) => part !== "").join(" · ")}`, 32 - outcome.text.length) }));
    group.append(status);
  }
  const subtree = node.branches.some((branch) => branch.kind === "tx");
  if (subtree) {
    // The open/close toggle at the box's right edge; what it hides is counted in its tooltip.
    const toggle = svg(
      "g",
      { class: "toggle", attrs: { transform: `translate(${box.width} ${box.height / 2})`, "data-toggle": node.index, role: "button" }, title: `${node.subtreeSize - 1} transactions below: click to show or hide` },
      svg("circle", { attrs: { r: 8 } }),
      svg("text", { attrs: { y: 4, "text-anchor": "middle" }, text: open ? "−" : "+" }),
    );
    group.append(toggle);
  }
  return group;
}

function endpoint(at: Point, label: string, kind: "source" | "end" | "more", messageHash?: string): SVGGElement {
  const group = svg("g", { class: `endpoint ${kind}`, attrs: { transform: `translate(${at.x} ${at.y})`, "data-msg-end": messageHash } });
  group.append(svg("rect", { attrs: { width: endBox.width, height: endBox.height, rx: 15 } }));
  group.append(svg("text", { attrs: { x: endBox.width / 2, y: 19, "text-anchor": "middle" }, text: fit(label, 18) }));
  return group;
}

/** An arrow from the sender's box to the receiver's (or to an end box), with the message's type and value by its head. */
function messageEdge(message: Message, start: Point, end: Point): SVGGElement {
  const bounced = message.bounced === true;
  const type = messageType(message);
  const group = svg("g", {
    class: `message${bounced ? " bounced" : ""}`,
    attrs: { "data-msg": message.hash, tabindex: 0, role: "button" },
    title: `${type}\n${ton(message.value ?? "0")}${bounced ? "\nbounced" : ""}\nmessage ${message.hash}`,
  });
  group.append(svg("path", { class: "edge-hit", attrs: { d: curve(start, end) } }));
  group.append(svg("path", { class: "edge", attrs: { d: curve(start, end), "marker-end": `url(#${bounced ? "arrow-bounced" : "arrow"})` } }));
  // The labels to the right of the arrow's head, where the arrow arrives vertically and no other arrow passes.
  const labelX = end.x + 8;
  group.append(svg("text", { class: "edge-type", attrs: { x: labelX, y: end.y - 22 }, text: `${bounced ? "↩ " : ""}${fit(type, 26)}` }));
  group.append(svg("text", { class: "edge-value", attrs: { x: labelX, y: end.y - 8 }, text: ton(message.value ?? "0") }));
  return group;
}
