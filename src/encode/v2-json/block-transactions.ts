import {
  blockTransactionBoc,
  blockTransactionMessages,
  rawExtraCurrencies,
  rawMessageAmounts,
  rawTransactionFees,
  tonlibAddress,
} from "../../db/block-transactions.ts";
import type { MessageRow, TransactionRow } from "../../db/transactions.ts";
import type { LoadedBlockTransactions } from "../../handlers/block-transactions-ext.ts";
import { readMessageData } from "../../ton/message-data.ts";
import { quote } from "../v3-json/transaction.ts";

// toncenter v2's JSON of /api/v2/getBlockTransactionsExt ({"ok":true,"result":{...}}), written from the rows the data
// layer read (see LoadedBlockTransactions): every object carries its tonlib "@type" first; 64-bit integers are
// strings. Byte for byte what presentBlockTransactionsExt (src/present/v2/block-transactions.ts) prints for the typed
// API's message built from the same rows, up to the time stamp; test/transactions-encoders.test.ts holds the two equal.

/** One page's printing: the same accounts come back in it again and again (senders, receivers, the block's own). */
class PageWriter {
  readonly #loaded: LoadedBlockTransactions;
  readonly #addresses = new Map<string | null, string>();

  constructor(loaded: LoadedBlockTransactions) {
    this.#loaded = loaded;
  }

  address(raw: string | null): string {
    let printed = this.#addresses.get(raw);
    if (printed === undefined) {
      printed = `{"@type":"accountAddress","account_address":${quote(tonlibAddress(raw))}}`;
      this.#addresses.set(raw, printed);
    }
    return printed;
  }

  message(row: MessageRow): string {
    const { value, fwdFee, createdLt } = rawMessageAmounts(row);
    const extra = rawExtraCurrencies(row);
    return (
      `{"@type":"raw.message","hash":${quote(row.msg_hash)},"source":${this.address(row.source)},"destination":${this.address(row.destination)},` +
      `"value":${quote(value)},"extra_currencies":[${extra.map(({ id, amount }) => `{"@type":"extraCurrency","id":${JSON.stringify(id)},"amount":${quote(amount)}}`).join(",")}],` +
      `"fwd_fee":${quote(fwdFee)},"ihr_fee":"0","created_lt":${quote(createdLt)},"body_hash":${quote(row.body_hash ?? "")},"msg_data":${messageData(row)}}`
    );
  }

  transaction(row: TransactionRow): string {
    const page = this.#loaded.page;
    const own = blockTransactionMessages(page, row);
    const { fee, storageFee, otherFee } = rawTransactionFees(row, own.outMsgs);
    let outMsgs = "";
    for (const out of own.outMsgs) outMsgs += `${outMsgs === "" ? "" : ","}${this.message(out)}`;
    // in_msg is left out, not null, for a transaction without an inbound message (as recorded for tick-tock).
    return (
      `{"@type":"raw.transaction","address":${this.address(row.account)},"utime":${JSON.stringify(Number(String(row.now ?? 0)))},` +
      `"data":${quote(blockTransactionBoc(page, row, own))},` +
      `"transaction_id":{"@type":"internal.transactionId","lt":${quote(row.lt)},"hash":${quote(row.hash)}},` +
      `"fee":${quote(fee)},"storage_fee":${quote(storageFee)},"other_fee":${quote(otherFee)},` +
      `${own.inMsg === undefined ? "" : `"in_msg":${this.message(own.inMsg)},`}"out_msgs":[${outMsgs}],"account":${quote(row.account)}}`
    );
  }
}

function messageData(row: MessageRow): string {
  const data = readMessageData(row.body, row.init_state_body, row.opcode);
  switch (data.kind) {
    case "text":
      return `{"@type":"msg.dataText","text":${quote(data.text)}}`;
    case "encrypted_text":
      return `{"@type":"msg.dataEncryptedText","text":${quote(data.text)}}`;
    case "raw":
      return `{"@type":"msg.dataRaw","body":${quote(data.body)},"init_state":${quote(data.initState)}}`;
  }
}

/** Transactions put into one piece of the body: a page of 1000 is a few megabytes, written in a few pieces. */
const transactionsPerPiece = 100;

/**
 * The answer as UTF-8 pieces: `content`, everything up to toncenter's `@extra` stamp (the time of the answer, the
 * result's last member, which the ETag leaves out: see withoutV2Stamp in src/rest/router.ts), then `stamp`, the rest.
 */
export function writeBlockTransactionsExt(loaded: LoadedBlockTransactions, now = Date.now()): { content: Buffer[]; stamp: Buffer } {
  const { block } = loaded;
  let text =
    `{"ok":true,"result":{"@type":"blocks.transactionsExt","id":{"@type":"ton.blockIdExt","workchain":${block.workchain},` +
    `"shard":${quote(block.shard)},"seqno":${block.seqno},"root_hash":${quote(block.rootHash)},"file_hash":${quote(block.fileHash)}},` +
    `"req_count":${loaded.reqCount},"incomplete":${loaded.incomplete},"transactions":[`;
  const content: Buffer[] = [];
  const writer = new PageWriter(loaded);
  loaded.page.rows.forEach((row, index) => {
    if (index > 0 && index % transactionsPerPiece === 0) {
      content.push(Buffer.from(text));
      text = "";
    }
    text += `${index > 0 ? "," : ""}${writer.transaction(row)}`;
  });
  content.push(Buffer.from(`${text}]`));
  return { content, stamp: Buffer.from(`,"@extra":"${(now / 1000).toFixed(3)}:tonquery"}}`) };
}
