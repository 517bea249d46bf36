import type { Trace } from "../../gen/tonquery/v1/trace_pb.ts";
import type { Message, Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";

// The trace as a tree to draw, which parts of it are shown, and where each shown part goes.
//
// A node is a transaction; its branches are the messages it sent, in the order it created them: each one leads
// to the transaction that received it (a child node) or, when no indexed transaction did, to nowhere (an external
// outbound message, or one still in flight in a pending trace). A large trace would draw thousands of boxes, so
// only a budget of them is shown at first: the tree is opened breadth first until the budget is spent, a node
// shows at most a fixed number of branches, and what is hidden is drawn as one "+N" box that opens more.
//
// The layout is hand-written rather than a library's because it is small: one level per depth, every shown leaf in
// a slot of its own in order, every parent over the middle of its children (a layered tidy tree). It is linear in
// the shown nodes and needs no text measurement. The drawing turns levels and slots into coordinates.

export type Branch = { kind: "tx"; node: number } | { kind: "msg"; message: Message };

export interface TreeNode {
  index: number;
  hash: string;
  /** Absent when the trace's node names a transaction the answer does not carry. */
  tx: Transaction | undefined;
  parent: number | undefined;
  depth: number;
  branches: Branch[];
  /** This transaction and all below it. */
  subtreeSize: number;
}

export interface TraceTree {
  nodes: TreeNode[];
  roots: number[];
  byTransaction: Map<string, number>;
  /** Every message of the trace by hash, with the transaction that sent it (if indexed) and the one that received it. */
  messages: Map<string, { message: Message; sender: number | undefined; receiver: number | undefined }>;
}

function createdLt(message: Message | undefined): bigint {
  try {
    return message?.createdLt === undefined ? 0n : BigInt(message.createdLt);
  } catch {
    return 0n;
  }
}

export function buildTree(trace: Trace): TraceTree {
  const transactions = new Map(trace.transactions.map((tx) => [tx.hash, tx]));
  const nodes: TreeNode[] = trace.nodes.map((node, index) => ({
    index,
    hash: node.transactionHash,
    tx: transactions.get(node.transactionHash),
    parent: node.parent,
    depth: 0,
    branches: [],
    subtreeSize: 1,
  }));
  const roots: number[] = [];
  const childrenByMessage = new Map<string, number>();
  for (const node of nodes) {
    // The API sends parents before their children; a parent index that breaks that is treated as a root.
    if (node.parent === undefined || node.parent >= node.index) {
      node.parent = undefined;
      roots.push(node.index);
    } else {
      node.depth = (nodes[node.parent] as TreeNode).depth + 1;
    }
    const inMsg = trace.nodes[node.index]?.inMsgHash;
    if (inMsg !== undefined && node.parent !== undefined) childrenByMessage.set(`${node.parent}/${inMsg}`, node.index);
  }
  const messages: TraceTree["messages"] = new Map();
  for (const node of nodes) {
    if (node.tx?.inMsg !== undefined) messages.set(node.tx.inMsg.hash, { message: node.tx.inMsg, sender: node.parent, receiver: node.index });
  }
  for (const node of nodes) {
    const claimed = new Set<number>();
    const branches: Array<{ branch: Branch; lt: bigint }> = [];
    for (const message of node.tx?.outMsgs ?? []) {
      const child = childrenByMessage.get(`${node.index}/${message.hash}`);
      if (child !== undefined) claimed.add(child);
      branches.push({ branch: child === undefined ? { kind: "msg", message } : { kind: "tx", node: child }, lt: createdLt(message) });
      const known = messages.get(message.hash);
      messages.set(message.hash, { message: known?.message ?? message, sender: node.index, receiver: child });
    }
    // Children the parent's out_msgs do not list (a transaction the answer lacks): still drawn, after the others.
    for (const other of nodes) {
      if (other.parent === node.index && !claimed.has(other.index)) branches.push({ branch: { kind: "tx", node: other.index }, lt: BigInt(Number.MAX_SAFE_INTEGER) });
    }
    branches.sort((a, b) => (a.lt < b.lt ? -1 : a.lt > b.lt ? 1 : 0));
    node.branches = branches.map((entry) => entry.branch);
  }
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i] as TreeNode;
    if (node.parent !== undefined) (nodes[node.parent] as TreeNode).subtreeSize += node.subtreeSize;
  }
  return { nodes, roots, byTransaction: new Map(nodes.map((node) => [node.hash, node.index])), messages };
}

/** How many of each node's branches are shown (the first ones, in order); a node not in the map shows none. */
export type Shown = Map<number, number>;

export interface OpenLimits {
  /** Transactions to show at most by opening the tree breadth first. */
  budget: number;
  /** Branches one node shows at most at a time. */
  perNode: number;
}

export const defaultLimits: OpenLimits = { budget: 120, perNode: 20 };

/** Opens `from` (the roots, at first) and what is below breadth first, until `limits.budget` transactions show. */
export function open(tree: TraceTree, shown: Shown, from: readonly number[], limits: OpenLimits = defaultLimits): void {
  let budget = limits.budget;
  const queue = [...from];
  for (let head = 0; head < queue.length && budget > 0; head++) {
    const node = tree.nodes[queue[head] as number] as TreeNode;
    const already = shown.get(node.index) ?? 0;
    const count = Math.min(node.branches.length, already + limits.perNode, already + budget);
    shown.set(node.index, count);
    for (const branch of node.branches.slice(0, count)) {
      if (branch.kind !== "tx") continue;
      if (!shown.has(branch.node)) {
        budget -= 1;
        queue.push(branch.node);
      }
    }
  }
}

/** The tree's first view: the roots opened within the default limits. */
export function initialShown(tree: TraceTree, limits: OpenLimits = defaultLimits): Shown {
  const shown: Shown = new Map();
  open(tree, shown, tree.roots, limits);
  return shown;
}

/** Shows `node`'s next branches (and opens those, within the limits). */
export function showMore(tree: TraceTree, shown: Shown, node: number, limits: OpenLimits = defaultLimits): void {
  const before = shown.get(node) ?? 0;
  const target = tree.nodes[node] as TreeNode;
  shown.set(node, Math.min(target.branches.length, before + limits.perNode));
  const added = target.branches.slice(before, shown.get(node)).flatMap((branch) => (branch.kind === "tx" ? [branch.node] : []));
  open(tree, shown, added, { budget: limits.budget, perNode: limits.perNode });
}

/** Hides everything below `node`. */
export function collapse(tree: TraceTree, shown: Shown, node: number): void {
  const stack = [node];
  while (stack.length > 0) {
    const index = stack.pop() as number;
    shown.delete(index);
    for (const branch of (tree.nodes[index] as TreeNode).branches) if (branch.kind === "tx") stack.push(branch.node);
  }
  shown.set(node, 0);
}

/** Shows the path from a root to `node`, so it is drawn (a selected or searched transaction deep in the tree). */
export function reveal(tree: TraceTree, shown: Shown, node: number): void {
  let child = node;
  let parent = tree.nodes[node]?.parent;
  while (parent !== undefined) {
    shown.set(parent, Math.max(shown.get(parent) ?? 0, position(tree, child) + 1));
    child = parent;
    parent = tree.nodes[parent]?.parent;
  }
  if (!shown.has(node)) shown.set(node, 0);
}

/** Where `node` is among its parent's branches (-1 for a root). */
function position(tree: TraceTree, node: number): number {
  const parent = tree.nodes[node]?.parent;
  if (parent === undefined) return -1;
  return (tree.nodes[parent] as TreeNode).branches.findIndex((branch) => branch.kind === "tx" && branch.node === node);
}

/**
 * The shown node that stands for `node`: itself when it is drawn, else the nearest ancestor that is drawn (whose
 * "+N" box holds it). Walks down from the root, so it costs the node's depth, not more.
 */
export function shownAncestor(tree: TraceTree, shown: Shown, node: number): number {
  const path: number[] = [];
  for (let at: number | undefined = node; at !== undefined; at = tree.nodes[at]?.parent) path.push(at);
  path.reverse();
  for (let i = 1; i < path.length; i++) {
    const parent = path[i - 1] as number;
    if (position(tree, path[i] as number) >= (shown.get(parent) ?? 0)) return parent;
  }
  return node;
}

export interface PlacedNode {
  node: number;
  level: number;
  slot: number;
}

/** An outbound message that no indexed transaction received, drawn as a small end box. */
export interface PlacedEnd {
  sender: number;
  message: Message;
  level: number;
  slot: number;
}

/** The "+N" box of a node whose later branches are hidden. */
export interface PlacedMore {
  node: number;
  hiddenBranches: number;
  hiddenTransactions: number;
  level: number;
  slot: number;
}

export interface Layout {
  nodes: PlacedNode[];
  ends: PlacedEnd[];
  more: PlacedMore[];
  slots: number;
  levels: number;
}

export function layout(tree: TraceTree, shown: Shown): Layout {
  const result: Layout = { nodes: [], ends: [], more: [], slots: 0, levels: 0 };
  let nextSlot = 0;
  const take = (level: number) => {
    result.levels = Math.max(result.levels, level + 1);
    return nextSlot++;
  };
  // Iterative (explicit stack), so that a chain of thousands of transactions cannot overflow the call stack.
  type Frame = { node: number; next: number; firstSlot: number | undefined; lastSlot: number | undefined };
  const place = (root: number) => {
    const stack: Frame[] = [{ node: root, next: 0, firstSlot: undefined, lastSlot: undefined }];
    let finishedSlot = 0;
    let returning = false;
    while (stack.length > 0) {
      const frame = stack[stack.length - 1] as Frame;
      const node = tree.nodes[frame.node] as TreeNode;
      const level = node.depth;
      if (returning) {
        frame.firstSlot ??= finishedSlot;
        frame.lastSlot = finishedSlot;
        returning = false;
      }
      const count = shown.get(node.index) ?? 0;
      if (frame.next < count) {
        const branch = node.branches[frame.next++] as Branch;
        if (branch.kind === "tx") {
          stack.push({ node: branch.node, next: 0, firstSlot: undefined, lastSlot: undefined });
        } else {
          const slot = take(level + 1);
          result.ends.push({ sender: node.index, message: branch.message, level: level + 1, slot });
          frame.firstSlot ??= slot;
          frame.lastSlot = slot;
        }
        continue;
      }
      const hidden = node.branches.slice(count);
      if (hidden.length > 0 && count > 0) {
        // Hidden branches after shown ones: a "+N" box in the children's level.
        const slot = take(level + 1);
        result.more.push({ node: node.index, hiddenBranches: hidden.length, hiddenTransactions: hiddenSize(tree, hidden), level: level + 1, slot });
        frame.firstSlot ??= slot;
        frame.lastSlot = slot;
      }
      let slot: number;
      if (frame.firstSlot === undefined || frame.lastSlot === undefined) {
        slot = take(level);
        if (hidden.length > 0) {
          // Nothing shown below: the "+N" box just under the node, in its slot.
          result.more.push({ node: node.index, hiddenBranches: hidden.length, hiddenTransactions: hiddenSize(tree, hidden), level: level + 1, slot });
          result.levels = Math.max(result.levels, level + 2);
        }
      } else {
        slot = (frame.firstSlot + frame.lastSlot) / 2;
      }
      result.nodes.push({ node: node.index, level, slot });
      stack.pop();
      finishedSlot = slot;
      returning = true;
    }
  };
  for (const root of tree.roots) place(root);
  result.slots = nextSlot;
  return result;
}

function hiddenSize(tree: TraceTree, branches: Branch[]): number {
  return branches.reduce((sum, branch) => sum + (branch.kind === "tx" ? (tree.nodes[branch.node] as TreeNode).subtreeSize : 0), 0);
}
