import type { Message, Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { decodedValue } from "./decoded.ts";
import { el, type Child } from "./dom.ts";
import { type Names, opcodeHex, ton, utcTime, words } from "./format.ts";
import { accountLink } from "./links.ts";
import type { Selection } from "./route.ts";
import { messageType, transactionOutcome } from "./summary.ts";

// The side panel: every field of the selected transaction or message that a person debugging a trace looks at,
// with the decoded body, and links to the messages and transactions next to it.

export interface PanelContext {
  names: Names;
  transaction(hash: string): Transaction | undefined;
  message(hash: string): { message: Message; senderTx: string | undefined; receiverTx: string | undefined } | undefined;
  select(selection: Selection): void;
}

type Field = [label: string, value: Child | Child[]];

function fields(rows: Array<Field | undefined | false>): HTMLDListElement {
  const list = el("dl", { class: "fields" });
  for (const row of rows) {
    if (!row) continue;
    const [label, value] = row;
    list.append(el("dt", { text: label }), el("dd", {}, ...(Array.isArray(value) ? value : [value])));
  }
  return list;
}

/** A shard id (a signed 64-bit integer in the API) as the 16 hex digits blocks are written with: -9223372036854775808 is 8000000000000000. */
function shardHex(shard: string): string {
  try {
    return BigInt.asUintN(64, BigInt(shard)).toString(16).padStart(16, "0");
  } catch {
    return shard;
  }
}

function hash(value: string): HTMLElement {
  return el("code", { class: "hash", text: value });
}

function selectLink(context: PanelContext, selection: Selection, text: string, title?: string): HTMLButtonElement {
  return el("button", { class: "link", text, title, attrs: { type: "button", "data-select": `${selection.kind}:${selection.hash}` }, on: { click: () => context.select(selection) } });
}

/** "the transaction of UQCg…N-qH", naming the account it ran on. */
function transactionOf(hash: string, context: PanelContext): string {
  const tx = context.transaction(hash);
  return tx === undefined ? "transaction" : `the transaction of ${context.names.label(tx.account)}`;
}

function messageSummary(message: Message): string {
  const type = messageType(message);
  return `${type} · ${ton(message.value ?? "0")}${message.bounced ? " · bounced" : ""}`;
}

export function transactionPanel(tx: Transaction, context: PanelContext): HTMLElement {
  const { names } = context;
  const d = tx.description;
  const compute = d?.computePh;
  const action = d?.action;
  const outcome = transactionOutcome(tx);
  return el(
    "section",
    { class: "panel-body", attrs: { "data-panel": "tx", "data-hash": tx.hash } },
    el("h2", {}, "Transaction ", el("span", { class: `outcome ${outcome.ok ? "ok" : "failed"}`, text: outcome.text })),
    hash(tx.hash),
    fields([
      ["account", [accountLink(tx.account, names), el("div", { class: "muted small", text: names.friendly(tx.account) })]],
      names.kind(tx.account) !== "" && ["contract", names.kind(tx.account)],
      ["time", utcTime(tx.now)],
      ["lt", tx.lt],
      ["total fees", ton(tx.totalFees)],
      ["balance", `${ton(tx.accountStateBefore?.balance)} → ${ton(tx.accountStateAfter?.balance)}`],
      ["status", `${tx.origStatus ?? "?"} → ${tx.endStatus ?? "?"}`],
      d !== undefined && ["type", `${d.type}${d.aborted ? ", aborted" : ""}${d.destroyed ? ", destroyed" : ""}`],
      tx.blockRef !== undefined && ["block", `(${tx.blockRef.workchain},${shardHex(tx.blockRef.shard)},${tx.blockRef.seqno})`],
      tx.mcBlockSeqno !== undefined && ["masterchain block", String(tx.mcBlockSeqno)],
    ]),
    compute !== undefined &&
      el(
        "section",
        {},
        el("h3", { text: "compute phase" }),
        fields(
          compute.skipped
            ? [["skipped", words(compute.reason ?? "yes")]]
            : [
                ["success", compute.success ? "yes" : "no"],
                ["exit code", String(compute.exitCode ?? "—")],
                compute.exitArg !== undefined && compute.exitArg !== 0 && ["exit arg", String(compute.exitArg)],
                // An external message's transaction runs on gas credit, with a limit of 0.
                ["gas", `${compute.gasUsed ?? "?"} used${compute.gasLimit !== undefined && compute.gasLimit !== "0" ? ` of ${compute.gasLimit}` : ""}, ${ton(compute.gasFees)}`],
                ["VM steps", String(compute.vmSteps ?? "—")],
              ],
        ),
      ),
    action !== undefined &&
      el(
        "section",
        {},
        el("h3", { text: "action phase" }),
        fields([
          ["success", action.success ? "yes" : "no"],
          ["result code", String(action.resultCode ?? "—")],
          ["messages created", String(action.msgsCreated ?? 0)],
          ["forward fees", ton(action.totalFwdFees)],
        ]),
      ),
    d?.bounce !== undefined && el("section", {}, el("h3", { text: "bounce phase" }), fields([["type", d.bounce.type]])),
    el(
      "section",
      {},
      el("h3", { text: "messages" }),
      el(
        "ul",
        { class: "messages" },
        tx.inMsg === undefined ? el("li", { class: "muted", text: "no inbound message (tick-tock)" }) : el("li", {}, "in: ", selectLink(context, { kind: "msg", hash: tx.inMsg.hash }, messageSummary(tx.inMsg), tx.inMsg.hash)),
        ...tx.outMsgs.map((message) => el("li", {}, "out: ", selectLink(context, { kind: "msg", hash: message.hash }, messageSummary(message), message.hash))),
      ),
    ),
  );
}

export function messagePanel(found: NonNullable<ReturnType<PanelContext["message"]>>, context: PanelContext): HTMLElement {
  const { names } = context;
  const { message, senderTx, receiverTx } = found;
  const decoded = message.messageContent?.decoded;
  return el(
    "section",
    { class: "panel-body", attrs: { "data-panel": "msg", "data-hash": message.hash } },
    el("h2", {}, "Message ", message.bounced ? el("span", { class: "outcome failed", text: "bounced" }) : null),
    hash(message.hash),
    fields([
      ["from", message.source === undefined ? el("span", { class: "muted", text: "external (from outside the chain)" }) : accountLink(message.source, names)],
      ["to", message.destination === undefined ? el("span", { class: "muted", text: "external (out of the chain)" }) : accountLink(message.destination, names)],
      ["value", ton(message.value ?? "0")],
      ["type", messageType(message)],
      message.opcode !== undefined && ["opcode", opcodeHex(message.opcode)],
      ["bounce", `${message.bounce ? "bounceable" : "not bounceable"}${message.bounced ? ", bounced" : ""}`],
      message.fwdFee !== undefined && ["forward fee", ton(message.fwdFee)],
      message.createdLt !== undefined && ["created lt", message.createdLt],
      message.createdAt !== undefined && ["created", utcTime(message.createdAt)],
      message.initState !== undefined && ["state init", hash(message.initState.hash)],
      senderTx !== undefined && ["sent by", selectLink(context, { kind: "tx", hash: senderTx }, transactionOf(senderTx, context), senderTx)],
      ["received by", receiverTx === undefined ? el("span", { class: "muted", text: "no indexed transaction" }) : selectLink(context, { kind: "tx", hash: receiverTx }, transactionOf(receiverTx, context), receiverTx)],
    ]),
    el(
      "section",
      {},
      el("h3", { text: "body" }),
      decoded?.data !== undefined
        ? el("div", { class: "decoded-body" }, decodedValue(decoded.data, names))
        : el("p", { class: "muted", text: message.messageContent?.body === undefined ? "no body" : "the body does not decode with tonquery's schema" }),
      message.messageContent?.body !== undefined &&
        el("details", { class: "long" }, el("summary", { text: `raw body (bag of cells, ${message.messageContent.body.length} base64 characters)` }), el("code", { text: message.messageContent.body })),
    ),
  );
}
