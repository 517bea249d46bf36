import { create, toBinary } from "@bufbuild/protobuf";
import { type GetBlockTransactionsExtResponse, GetBlockTransactionsExtResponseSchema } from "../../../gen/tonquery/v1/service_pb.ts";
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
import { implicitInt32, implicitInt64, implicitString } from "./fields.ts";
import { PageBytes, selfEncoded } from "./own-encoding.ts";
import { ProtoWriter } from "./writer.ts";

// The binary protobuf of GetBlockTransactionsExtResponse for the RPC doors (gRPC, gRPC-web, Connect with protobuf),
// written from the rows the data layer read (see LoadedBlockTransactions) without building a RawTransaction: byte for
// byte what toBinary prints for blockTransactionsExtResponse's message (test/transactions-encoders.test.ts holds the
// two equal). Every field is proto3 with implicit presence, so, as toBinary does, a zero or empty scalar is left out,
// a message field is written whenever it is set, and fields go in field-number order.
//
// The answer is the message's bytes, which connect sends as they are (see own-encoding.ts), as a traces page's are
// (TracesProtoSink, ./traces.ts): the known fields as toBinary writes them, then the transactions, `transactions`
// being the message's last field. The JSON codecs need the typed message: the doors that answer in JSON get it
// (see respondsInBinary).

/** The friendly forms of a page's accounts, which come back in it again and again (senders, receivers, the block's own). */
type Addresses = Map<string | null, string>;

/** AccountAddress. */
function address(w: ProtoWriter, no: number, raw: string | null, addresses: Addresses): void {
  let friendly = addresses.get(raw);
  if (friendly === undefined) addresses.set(raw, (friendly = tonlibAddress(raw)));
  w.fork(no);
  implicitString(w, 1, friendly);
  w.join();
}

/** MessageData: its `kind` one of raw (1), text (2), encrypted_text (3). */
function messageData(w: ProtoWriter, no: number, row: MessageRow): void {
  const data = readMessageData(row.body, row.init_state_body, row.opcode);
  w.fork(no);
  if (data.kind === "raw") {
    w.fork(1);
    implicitString(w, 1, data.body);
    implicitString(w, 2, data.initState);
  } else {
    w.fork(data.kind === "text" ? 2 : 3);
    implicitString(w, 1, data.text);
  }
  w.join();
  w.join();
}

/** RawMessage. */
function message(w: ProtoWriter, no: number, row: MessageRow, addresses: Addresses): void {
  const { value, fwdFee, createdLt } = rawMessageAmounts(row);
  w.fork(no);
  implicitString(w, 1, row.msg_hash);
  address(w, 2, row.source, addresses);
  address(w, 3, row.destination, addresses);
  implicitInt64(w, 4, value);
  for (const { id, amount } of rawExtraCurrencies(row)) {
    w.fork(5);
    implicitInt32(w, 1, id);
    implicitString(w, 2, amount);
    w.join();
  }
  implicitInt64(w, 6, fwdFee);
  // 7, ihr_fee: tonlib never reports one; "0" is left out.
  implicitInt64(w, 8, createdLt);
  implicitString(w, 9, row.body_hash ?? "");
  messageData(w, 10, row);
  w.join();
}

/** A page being written: its rows, and the addresses whose forms are known already. */
interface PageInWriting {
  loaded: LoadedBlockTransactions;
  addresses: Addresses;
}

/** One RawTransaction's fields (the caller writes its tag and length). */
function transaction(w: ProtoWriter, row: TransactionRow, { loaded, addresses }: PageInWriting): void {
  const own = blockTransactionMessages(loaded.page, row);
  const { inMsg, outMsgs } = own;
  const { fee, storageFee, otherFee } = rawTransactionFees(row, outMsgs);
  address(w, 1, row.account, addresses);
  implicitInt64(w, 2, String(row.now ?? 0));
  implicitString(w, 3, blockTransactionBoc(loaded.page, row, own));
  w.fork(4);
  implicitInt64(w, 1, row.lt);
  implicitString(w, 2, row.hash);
  w.join();
  implicitInt64(w, 5, fee);
  implicitInt64(w, 6, storageFee);
  implicitInt64(w, 7, otherFee);
  if (inMsg !== undefined) message(w, 8, inMsg, addresses);
  for (const out of outMsgs) message(w, 9, out, addresses);
  implicitString(w, 10, row.account);
}

const transactionsField = GetBlockTransactionsExtResponseSchema.field.transactions.number;

/** The response for a binary RPC door, its bytes those of the typed message, a transaction at a time. */
export function blockTransactionsExtBinary(loaded: LoadedBlockTransactions): GetBlockTransactionsExtResponse {
  const response = create(GetBlockTransactionsExtResponseSchema, { id: loaded.block, reqCount: loaded.reqCount, incomplete: loaded.incomplete });
  const addresses: Addresses = new Map();
  const page = new PageBytes();
  page.append(toBinary(GetBlockTransactionsExtResponseSchema, response));
  page.appendOccurrences(transactionsField, loaded.page.rows, transaction, { loaded, addresses });
  return selfEncoded(response, page.finish());
}
