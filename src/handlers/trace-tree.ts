import type { TraceNode } from "../../gen/tonquery/v1/trace_pb.ts";
import type { Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";

export const missingNodeWarning = "missing node in trace found";

export interface TraceTree {
  /** Root first; a node's parent always comes before it. */
  nodes: TraceNode[];
  warning: string | undefined;
}

/**
 * Links a trace's transactions (in trace order) into toncenter's tree: a transaction is the child of the one
 * whose outbound message it received; the first transaction that is nobody's child is the root, and any later
 * one is a missing-node warning and stays out of the tree, with everything below it.
 */
export function assembleTraceTree(transactions: readonly Transaction[]): TraceTree {
  const senderOf = new Map<string, number>();
  const parents: (number | undefined)[] = [];
  const inTree: boolean[] = [];
  let root: number | undefined;
  let warning: string | undefined;

  transactions.forEach((tx, index) => {
    const inHash = tx.inMsg?.hash;
    const parent = inHash === undefined ? undefined : senderOf.get(inHash);
    if (parent !== undefined && inHash !== undefined) {
      senderOf.delete(inHash);
      inTree.push(inTree[parent] === true);
    } else if (root === undefined) {
      root = index;
      inTree.push(true);
    } else {
      warning = missingNodeWarning;
      inTree.push(false);
    }
    parents.push(parent);
    for (const out of tx.outMsgs) senderOf.set(out.hash, index);
  });

  const position = new Map<number, number>();
  const nodes: TraceNode[] = [];
  transactions.forEach((tx, index) => {
    if (!inTree[index]) return;
    position.set(index, nodes.length);
    const parent = parents[index];
    nodes.push({
      $typeName: "tonquery.v1.TraceNode",
      transactionHash: tx.hash,
      inMsgHash: tx.inMsg?.hash,
      parent: parent === undefined ? undefined : position.get(parent),
      transactionLt: tx.lt,
      transactionNow: tx.now,
      transactionAborted: tx.description?.aborted,
    });
  });
  return { nodes, warning };
}
