import type {
  AccountState,
  AddressBookRow,
  DecodedContent,
  ExtraCurrencies,
  Message,
  MessageBody,
  Transaction,
  TransactionDescription,
} from "../../../gen/tonquery/v1/transaction_pb.ts";
import type { JsonObject } from "@bufbuild/protobuf";
import { DecodedBody } from "../../decoding/page-bodies.ts";
import type { JsonText } from "../json-text.ts";
import { presentBlockRef } from "./block.ts";

// toncenter's v3 JSON for transactions. Key order follows its responses. Inside the description a missing
// phase or a missing phase field is left out (toncenter omits them): it stays undefined here and JSON
// serialisation drops it. Elsewhere a missing value is null.

type Json = Record<string, unknown>;

export function presentExtraCurrencies(extra: ExtraCurrencies | undefined): Record<string, string> | null {
  if (extra === undefined) return null;
  const out: Record<string, string> = {};
  for (const [id, amount] of Object.entries(extra.amounts)) out[id] = amount;
  return out;
}

export function presentOpcode(opcode: number | undefined): string | null {
  if (opcode === undefined) return null;
  let printed = printedOpcodes.get(opcode);
  if (printed === undefined) {
    printed = `0x${opcode.toString(16).padStart(8, "0")}`;
    // A page's messages carry a few dozen distinct opcodes; the bound keeps arbitrary bodies from growing the cache.
    if (printedOpcodes.size >= 4096) printedOpcodes.clear();
    printedOpcodes.set(opcode, printed);
  }
  return printed;
}

const printedOpcodes = new Map<number, string>();

function presentDecoded(decoded: DecodedContent | undefined): JsonText | JsonObject | null {
  // `data` is the decoded value exactly as toncenter prints it; pages carry it already printed.
  if (decoded instanceof DecodedBody) return decoded.text;
  return decoded?.data ?? null;
}

function presentBody(body: MessageBody | undefined): Json | null {
  if (body === undefined) return null;
  return {
    hash: body.hash,
    body: body.body ?? null,
    decoded: presentDecoded(body.decoded),
  };
}

export function presentMessage(message: Message): Json {
  return ({
    hash: message.hash,
    source: message.source ?? null,
    destination: message.destination ?? null,
    value: message.value ?? null,
    value_extra_currencies: presentExtraCurrencies(message.valueExtraCurrencies),
    fwd_fee: message.fwdFee ?? null,
    ihr_fee: message.ihrFee ?? null,
    extra_flags: message.extraFlags ?? null,
    created_lt: message.createdLt ?? null,
    created_at: message.createdAt ?? null,
    opcode: presentOpcode(message.opcode),
    decoded_opcode: message.decodedOpcode ?? null,
    ihr_disabled: message.ihrDisabled ?? null,
    bounce: message.bounce ?? null,
    bounced: message.bounced ?? null,
    import_fee: message.importFee ?? null,
    message_content: presentBody(message.messageContent),
    init_state: presentBody(message.initState),
    hash_norm: message.hashNorm,
    in_msg_tx_hash: message.inMsgTxHash ?? null,
    out_msg_tx_hash: message.outMsgTxHash ?? null,
  });
}

export function presentAccountState(state: AccountState | undefined): Json | null {
  if (state === undefined) return null;
  return {
    hash: state.hash,
    balance: state.balance ?? null,
    extra_currencies: presentExtraCurrencies(state.extraCurrencies),
    account_status: state.accountStatus ?? null,
    frozen_hash: state.frozenHash ?? null,
    data_hash: state.dataHash ?? null,
    code_hash: state.codeHash ?? null,
    code_boc: state.codeBoc ?? null,
    data_boc: state.dataBoc ?? null,
  };
}

function presentDescription(d: TransactionDescription | undefined): Json | null {
  if (d === undefined) return null;
  const size = (s: { cells: string; bits: string } | undefined) => (s === undefined ? undefined : { cells: s.cells, bits: s.bits });
  return ({
    type: d.type,
    aborted: d.aborted,
    destroyed: d.destroyed,
    credit_first: d.creditFirst,
    is_tock: d.isTock,
    installed: d.installed,
    storage_ph: d.storagePh
      ? ({
          storage_fees_collected: d.storagePh.storageFeesCollected,
          storage_fees_due: d.storagePh.storageFeesDue,
          status_change: d.storagePh.statusChange,
        })
      : undefined,
    credit_ph: d.creditPh
      ? ({
          due_fees_collected: d.creditPh.dueFeesCollected,
          credit: d.creditPh.credit,
          // Left out when empty, as toncenter does.
          credit_extra_currencies:
            d.creditPh.creditExtraCurrencies && Object.keys(d.creditPh.creditExtraCurrencies.amounts).length > 0
              ? presentExtraCurrencies(d.creditPh.creditExtraCurrencies)
              : undefined,
        })
      : undefined,
    compute_ph: d.computePh
      ? ({
          skipped: d.computePh.skipped,
          reason: d.computePh.reason,
          success: d.computePh.success,
          msg_state_used: d.computePh.msgStateUsed,
          account_activated: d.computePh.accountActivated,
          gas_fees: d.computePh.gasFees,
          gas_used: d.computePh.gasUsed,
          gas_limit: d.computePh.gasLimit,
          gas_credit: d.computePh.gasCredit,
          mode: d.computePh.mode,
          exit_code: d.computePh.exitCode,
          exit_arg: d.computePh.exitArg,
          vm_steps: d.computePh.vmSteps === undefined ? undefined : Number(d.computePh.vmSteps),
          vm_init_state_hash: d.computePh.vmInitStateHash,
          vm_final_state_hash: d.computePh.vmFinalStateHash,
        })
      : undefined,
    action: d.action
      ? ({
          success: d.action.success,
          valid: d.action.valid,
          no_funds: d.action.noFunds,
          status_change: d.action.statusChange,
          total_fwd_fees: d.action.totalFwdFees,
          total_action_fees: d.action.totalActionFees,
          result_code: d.action.resultCode,
          result_arg: d.action.resultArg,
          tot_actions: d.action.totActions,
          spec_actions: d.action.specActions,
          skipped_actions: d.action.skippedActions,
          msgs_created: d.action.msgsCreated,
          action_list_hash: d.action.actionListHash,
          tot_msg_size: size(d.action.totMsgSize),
        })
      : undefined,
    bounce: d.bounce
      ? ({
          type: d.bounce.type,
          msg_size: size(d.bounce.msgSize),
          req_fwd_fees: d.bounce.reqFwdFees,
          msg_fees: d.bounce.msgFees,
          fwd_fees: d.bounce.fwdFees,
        })
      : undefined,
    split_info: d.splitInfo
      ? ({
          cur_shard_pfx_len: d.splitInfo.curShardPfxLen,
          acc_split_depth: d.splitInfo.accSplitDepth,
          this_addr: d.splitInfo.thisAddr,
          sibling_addr: d.splitInfo.siblingAddr,
        })
      : undefined,
  });
}

export function presentTransaction(tx: Transaction): Json {
  return ({
    account: tx.account,
    hash: tx.hash,
    lt: tx.lt,
    now: tx.now ?? null,
    mc_block_seqno: tx.mcBlockSeqno ?? null,
    trace_id: tx.traceId,
    prev_trans_hash: tx.prevTransHash ?? null,
    prev_trans_lt: tx.prevTransLt ?? null,
    orig_status: tx.origStatus ?? null,
    end_status: tx.endStatus ?? null,
    total_fees: tx.totalFees ?? null,
    total_fees_extra_currencies: presentExtraCurrencies(tx.totalFeesExtraCurrencies),
    description: presentDescription(tx.description),
    block_ref: tx.blockRef ? presentBlockRef(tx.blockRef) : null,
    in_msg: tx.inMsg ? presentMessage(tx.inMsg) : null,
    out_msgs: tx.outMsgs.map(presentMessage),
    account_state_before: presentAccountState(tx.accountStateBefore),
    account_state_after: presentAccountState(tx.accountStateAfter),
    emulated: tx.emulated,
    finality: tx.finality,
    trace_external_hash: tx.traceExternalHash ?? null,
  });
}

export function presentAddressBook(book: Record<string, AddressBookRow>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [address, row] of Object.entries(book)) {
    out[address] = { user_friendly: row.userFriendly ?? null, domain: row.domain ?? null, interfaces: row.interfaces?.names ?? null };
  }
  return out;
}

export function presentTransactionsResponse(response: { transactions: Transaction[]; addressBook: Record<string, AddressBookRow> }) {
  return { transactions: response.transactions.map(presentTransaction), address_book: presentAddressBook(response.addressBook) };
}
