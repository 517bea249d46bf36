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
import { type JsonPieces, printJson, quote } from "../json-pieces.ts";

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

  address(out: JsonPieces, raw: string | null): void {
    let printed = this.#addresses.get(raw);
    if (printed === undefined) {
      printed = `{"@type":"accountAddress","account_address":${quote(tonlibAddress(raw))}}`;
      this.#addresses.set(raw, printed);
    }
    out.text(printed);
  }

  message(out: JsonPieces, row: MessageRow): void {
    const { value, fwdFee, createdLt } = rawMessageAmounts(row);
    out.field('{"@type":"raw.message","hash":', row.msg_hash);
    out.text(',"source":');
    this.address(out, row.source);
    out.text(',"destination":');
    this.address(out, row.destination);
    out.field(',"value":', value);
    out.text(',"extra_currencies":[');
    rawExtraCurrencies(row).forEach(({ id, amount }, index) => {
      out.text(index === 0 ? '{"@type":"extraCurrency","id":' : ',{"@type":"extraCurrency","id":');
      out.text(JSON.stringify(id));
      out.field(',"amount":', amount);
      out.text("}");
    });
    out.field('],"fwd_fee":', fwdFee);
    out.field(',"ihr_fee":"0","created_lt":', createdLt);
    out.field(',"body_hash":', row.body_hash ?? "");
    out.text(',"msg_data":');
    messageData(out, row);
    out.text("}");
  }

  transaction(out: JsonPieces, row: TransactionRow): void {
    const page = this.#loaded.page;
    const own = blockTransactionMessages(page, row);
    const { fee, storageFee, otherFee } = rawTransactionFees(row, own.outMsgs);
    out.text('{"@type":"raw.transaction","address":');
    this.address(out, row.account);
    out.text(',"utime":');
    out.text(JSON.stringify(Number(String(row.now ?? 0))));
    out.field(',"data":', blockTransactionBoc(page, row, own));
    out.field(',"transaction_id":{"@type":"internal.transactionId","lt":', row.lt);
    out.field(',"hash":', row.hash);
    out.field('},"fee":', fee);
    out.field(',"storage_fee":', storageFee);
    out.field(',"other_fee":', otherFee);
    // in_msg is left out, not null, for a transaction without an inbound message (as recorded for tick-tock).
    if (own.inMsg !== undefined) {
      out.text(',"in_msg":');
      this.message(out, own.inMsg);
    }
    out.text(',"out_msgs":[');
    own.outMsgs.forEach((outMsg, index) => {
      if (index > 0) out.text(",");
      this.message(out, outMsg);
    });
    out.field('],"account":', row.account);
    out.text("}");
  }
}

function messageData(out: JsonPieces, row: MessageRow): void {
  const data = readMessageData(row.body, row.init_state_body, row.opcode);
  switch (data.kind) {
    case "text":
      out.field('{"@type":"msg.dataText","text":', data.text);
      break;
    case "encrypted_text":
      out.field('{"@type":"msg.dataEncryptedText","text":', data.text);
      break;
    case "raw":
      out.field('{"@type":"msg.dataRaw","body":', data.body);
      out.field(',"init_state":', data.initState);
      break;
  }
  out.text("}");
}

/** Transactions put into one piece of the body: a page of 1000 is a few megabytes, written in a few pieces. */
const transactionsPerPiece = 100;

/**
 * The answer as UTF-8 pieces: `content`, everything up to toncenter's `@extra` stamp (the time of the answer, the
 * result's last member, which the ETag leaves out: see withoutV2Stamp in src/rest/router.ts), then `stamp`, the rest.
 */
export function writeBlockTransactionsExt(loaded: LoadedBlockTransactions, now = Date.now()): { content: Buffer[]; stamp: Buffer } {
  const { block } = loaded;
  const { rows } = loaded.page;
  const writer = new PageWriter(loaded);
  const content: Buffer[] = [];
  for (let from = 0; from === 0 || from < rows.length; from += transactionsPerPiece) {
    content.push(
      printJson((out) => {
        if (from === 0) {
          out.text('{"ok":true,"result":{"@type":"blocks.transactionsExt","id":{"@type":"ton.blockIdExt","workchain":');
          out.text(String(block.workchain));
          out.field(',"shard":', block.shard);
          out.text(',"seqno":');
          out.text(String(block.seqno));
          out.field(',"root_hash":', block.rootHash);
          out.field(',"file_hash":', block.fileHash);
          out.text(`},"req_count":${loaded.reqCount},"incomplete":${loaded.incomplete},"transactions":[`);
        }
        const to = Math.min(rows.length, from + transactionsPerPiece);
        for (let index = from; index < to; index++) {
          if (index > 0) out.text(",");
          writer.transaction(out, rows[index] as TransactionRow);
        }
        if (to === rows.length) out.text("]");
      }),
    );
  }
  return { content, stamp: Buffer.from(`,"@extra":"${(now / 1000).toFixed(3)}:tonquery"}}`) };
}
