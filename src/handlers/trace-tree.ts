import type { TraceNode } from "../../gen/tonquery/v1/trace_pb.ts";
import type { Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { messagesOf, type TransactionRow, type TransactionRowSet } from "../db/transactions.ts";

export const missingNodeWarning = "missing node in trace found";

export interface TraceTree {
  /** Root first; a node's parent always comes before it. */
  nodes: TraceNode[];
  warning: string | undefined;
}

/** What the tree needs of a transaction, whatever form it is in (a Transaction, or the rows it is read from). */
export interface TraceTreeView<T> {
  hash(tx: T): string;
  lt(tx: T): string;
  now(tx: T): number | undefined;
  aborted(tx: T): boolean | undefined;
  inMsgHash(tx: T): string | undefined;
  /** Notes each outbound message's hash as sent by transaction `index` (a generator of them per transaction cost more than the tree). */
  addOutMsgHashes(tx: T, into: Map<string, number>, index: number): void;
}

export const transactionTreeView: TraceTreeView<Transaction> = {
  hash: (tx) => tx.hash,
  lt: (tx) => tx.lt,
  now: (tx) => tx.now,
  aborted: (tx) => tx.description?.aborted,
  inMsgHash: (tx) => tx.inMsg?.hash,
  addOutMsgHashes(tx, into, index) {
    for (const out of tx.outMsgs) into.set(out.hash, index);
  },
};

/**
 * The tree's view of transactions still in the rows they were read as. A class rather than an object of closures
 * made per trace, which V8 optimises again for new closures (see writeTreeNode in src/encode/v3-json/traces.ts).
 */
class TransactionRowTreeView implements TraceTreeView<TransactionRow> {
  readonly #set: TransactionRowSet;

  constructor(set: TransactionRowSet) {
    this.#set = set;
  }

  hash(row: TransactionRow): string {
    return row.hash;
  }

  lt(row: TransactionRow): string {
    return row.lt;
  }

  now(row: TransactionRow): number | undefined {
    return row.now ?? undefined;
  }

  aborted(row: TransactionRow): boolean | undefined {
    return row.aborted ?? undefined;
  }

  inMsgHash(row: TransactionRow): string | undefined {
    return messagesOf(this.#set, row).inMsg?.msg_hash;
  }

  addOutMsgHashes(row: TransactionRow, into: Map<string, number>, index: number): void {
    for (const out of messagesOf(this.#set, row).outMsgs) into.set(out.msg_hash, index);
  }
}

export function transactionRowTreeView(set: TransactionRowSet): TraceTreeView<TransactionRow> {
  return new TransactionRowTreeView(set);
}

/**
 * Links a trace's transactions (in trace order) into toncenter's tree: a transaction is the child of the one
 * whose outbound message it received; the first transaction that is nobody's child is the root, and any later
 * one is a missing-node warning and stays out of the tree, with everything below it.
 */
export function assembleTraceTree<T>(transactions: readonly T[], view: TraceTreeView<T>): TraceTree {
  const senderOf = new Map<string, number>();
  const parents: (number | undefined)[] = [];
  const inTree: boolean[] = [];
  let root: number | undefined;
  let warning: string | undefined;

  for (let index = 0; index < transactions.length; index++) {
    const tx = transactions[index] as T;
    const inHash = view.inMsgHash(tx);
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
    view.addOutMsgHashes(tx, senderOf, index);
  }

  const position = new Map<number, number>();
  const nodes: TraceNode[] = [];
  for (let index = 0; index < transactions.length; index++) {
    if (!inTree[index]) continue;
    const tx = transactions[index] as T;
    position.set(index, nodes.length);
    const parent = parents[index];
    nodes.push({
      $typeName: "tonquery.v1.TraceNode",
      transactionHash: view.hash(tx),
      inMsgHash: view.inMsgHash(tx),
      parent: parent === undefined ? undefined : position.get(parent),
      transactionLt: view.lt(tx),
      transactionNow: view.now(tx),
      transactionAborted: view.aborted(tx),
    });
  }
  return { nodes, warning };
}
