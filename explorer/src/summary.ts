import type { Message, Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { opcodeHex, ton } from "./format.ts";

// Transactions and messages in a few words, as the drawing labels them: a transaction's outcome (whether it went
// through, the compute phase's exit code, the action phase's result code when that failed, what it cost) and what
// a message is (its decoded type, a comment, or its opcode).

export interface Outcome {
  ok: boolean;
  /** "ok", "aborted", "compute skipped: no state", ... */
  text: string;
  /** "exit 0", "exit 37 · action 34", or "" when the compute phase did not run. */
  codes: string;
  fee: string;
}

export function transactionOutcome(tx: Transaction): Outcome {
  const d = tx.description;
  const compute = d?.computePh;
  const action = d?.action;
  const aborted = d?.aborted === true;
  const skipped = compute?.skipped === true;
  const codes = [
    compute !== undefined && !skipped && compute.exitCode !== undefined ? `exit ${compute.exitCode}` : "",
    action !== undefined && action.resultCode !== undefined && action.resultCode !== 0 ? `action ${action.resultCode}` : "",
  ].filter((code) => code !== "");
  const text = aborted ? "aborted" : skipped ? `compute skipped${compute.reason ? `: ${compute.reason.replace(/_/g, " ")}` : ""}` : "ok";
  return { ok: !aborted, text, codes: codes.join(" · "), fee: `fee ${ton(tx.totalFees ?? "0")}` };
}

/** What a message is, in a few words: its decoded type, a comment, or its opcode. */
export function messageType(message: Message): string {
  const decoded = message.messageContent?.decoded;
  if (decoded?.comment !== undefined) return `“${decoded.comment.length > 24 ? `${decoded.comment.slice(0, 24)}…` : decoded.comment}”`;
  if (message.decodedOpcode !== undefined) return message.decodedOpcode;
  if (decoded?.type !== undefined && decoded.type !== "") return decoded.type;
  if (message.opcode !== undefined) return opcodeHex(message.opcode);
  return message.source === undefined ? "external" : "empty body";
}
