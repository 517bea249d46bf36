import type { GetBlockTransactionsExtResponse } from "../../../gen/tonquery/v1/service_pb.ts";
import type { AccountAddress, MessageData, RawMessage, RawTransaction } from "../../../gen/tonquery/v1/block_transactions_pb.ts";

// toncenter v2's JSON: every object carries its tonlib "@type" first; 64-bit integers are strings.

function presentAddress(address: AccountAddress | undefined) {
  return { "@type": "accountAddress", account_address: address?.accountAddress ?? "" };
}

function presentMessageData(data: MessageData | undefined) {
  switch (data?.kind.case) {
    case "text":
      return { "@type": "msg.dataText", text: data.kind.value.text };
    case "encryptedText":
      return { "@type": "msg.dataEncryptedText", text: data.kind.value.text };
    case "raw":
      return { "@type": "msg.dataRaw", body: data.kind.value.body, init_state: data.kind.value.initState };
    default:
      return { "@type": "msg.dataRaw", body: "", init_state: "" };
  }
}

function presentMessage(message: RawMessage) {
  return {
    "@type": "raw.message",
    hash: message.hash,
    source: presentAddress(message.source),
    destination: presentAddress(message.destination),
    value: message.value,
    extra_currencies: message.extraCurrencies.map((c) => ({ "@type": "extraCurrency", id: c.id, amount: c.amount })),
    fwd_fee: message.fwdFee,
    ihr_fee: message.ihrFee,
    created_lt: message.createdLt,
    body_hash: message.bodyHash,
    msg_data: presentMessageData(message.msgData),
  };
}

function presentTransaction(tx: RawTransaction) {
  return {
    "@type": "raw.transaction",
    address: presentAddress(tx.address),
    utime: Number(tx.utime),
    data: tx.data,
    transaction_id: { "@type": "internal.transactionId", lt: tx.transactionId?.lt ?? "0", hash: tx.transactionId?.hash ?? "" },
    fee: tx.fee,
    storage_fee: tx.storageFee,
    other_fee: tx.otherFee,
    // Left out, not null, for a transaction without an inbound message (as recorded for tick-tock).
    ...(tx.inMsg === undefined ? {} : { in_msg: presentMessage(tx.inMsg) }),
    out_msgs: tx.outMsgs.map(presentMessage),
    account: tx.account,
  };
}

export function presentBlockTransactionsExt(response: GetBlockTransactionsExtResponse) {
  const id = response.id;
  return {
    "@type": "blocks.transactionsExt",
    id: {
      "@type": "ton.blockIdExt",
      workchain: id?.workchain ?? 0,
      shard: id?.shard ?? "0",
      seqno: id?.seqno ?? 0,
      root_hash: id?.rootHash ?? "",
      file_hash: id?.fileHash ?? "",
    },
    req_count: response.reqCount,
    incomplete: response.incomplete,
    transactions: response.transactions.map(presentTransaction),
    "@extra": `${(Date.now() / 1000).toFixed(3)}:tonquery`,
  };
}
