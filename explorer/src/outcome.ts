import type { Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { ton } from "./format.ts";

// A transaction's outcome in a few words, as its box in the drawing shows it: whether it went through, the compute
// phase's exit code (and the action phase's result code when that failed), and what it cost.

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
