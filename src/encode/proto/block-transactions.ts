import { create } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
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

// The binary protobuf of GetBlockTransactionsExtResponse for the RPC doors (gRPC, gRPC-web, Connect with protobuf),
// written from the rows the data layer read (see LoadedBlockTransactions) without building a RawTransaction: byte for
// byte what toBinary prints for blockTransactionsExtResponse's message (test/transactions-encoders.test.ts holds the
// two equal). Every field is proto3 with implicit presence, so, as toBinary does, a zero or empty scalar is left out,
// a message field is written whenever it is set, and fields go in field-number order.
//
// The transactions travel already encoded, as occurrences of field `transactions` in the response's unknown fields,
// as a traces page carries its traces (TracesProtoSink, ./traces.ts): connect still serialises the response (its
// framing, compression and errors stay), toBinary writes them verbatim after the known fields, and `transactions` is
// the message's last field, so the bytes are the same. The JSON codecs print no unknown fields: the doors that answer
// in JSON get the typed message (see respondsInBinary).

const LEN = WireType.LengthDelimited;
const VARINT = WireType.Varint;

/** A decimal int64 as toBinary writes it: left out when zero. */
function int64(w: BinaryWriter, no: number, value: string): void {
  if (Number(value) !== 0) w.tag(no, VARINT).int64(value);
}

function string(w: BinaryWriter, no: number, value: string): void {
  if (value !== "") w.tag(no, LEN).string(value);
}

/** The friendly forms of a page's accounts, which come back in it again and again (senders, receivers, the block's own). */
type Addresses = Map<string | null, string>;

/** AccountAddress. */
function address(w: BinaryWriter, no: number, raw: string | null, addresses: Addresses): void {
  let friendly = addresses.get(raw);
  if (friendly === undefined) addresses.set(raw, (friendly = tonlibAddress(raw)));
  w.tag(no, LEN).fork();
  string(w, 1, friendly);
  w.join();
}

/** MessageData: its `kind` one of raw (1), text (2), encrypted_text (3). */
function messageData(w: BinaryWriter, no: number, row: MessageRow): void {
  const data = readMessageData(row.body, row.init_state_body, row.opcode);
  w.tag(no, LEN).fork();
  if (data.kind === "raw") {
    w.tag(1, LEN).fork();
    string(w, 1, data.body);
    string(w, 2, data.initState);
  } else {
    w.tag(data.kind === "text" ? 2 : 3, LEN).fork();
    string(w, 1, data.text);
  }
  w.join().join();
}

/** RawMessage. */
function message(w: BinaryWriter, no: number, row: MessageRow, addresses: Addresses): void {
  const { value, fwdFee, createdLt } = rawMessageAmounts(row);
  w.tag(no, LEN).fork();
  string(w, 1, row.msg_hash);
  address(w, 2, row.source, addresses);
  address(w, 3, row.destination, addresses);
  int64(w, 4, value);
  for (const { id, amount } of rawExtraCurrencies(row)) {
    w.tag(5, LEN).fork();
    if (id !== 0) w.tag(1, VARINT).int32(id);
    string(w, 2, amount);
    w.join();
  }
  int64(w, 6, fwdFee);
  // 7, ihr_fee: tonlib never reports one; "0" is left out.
  int64(w, 8, createdLt);
  string(w, 9, row.body_hash ?? "");
  messageData(w, 10, row);
  w.join();
}

/** One RawTransaction, as an occurrence of the response's field `transactions`, without its tag. */
function transaction(w: BinaryWriter, loaded: LoadedBlockTransactions, row: TransactionRow, addresses: Addresses): void {
  const own = blockTransactionMessages(loaded.page, row);
  const { inMsg, outMsgs } = own;
  const { fee, storageFee, otherFee } = rawTransactionFees(row, outMsgs);
  w.fork();
  address(w, 1, row.account, addresses);
  int64(w, 2, String(row.now ?? 0));
  string(w, 3, blockTransactionBoc(loaded.page, row, own));
  w.tag(4, LEN).fork();
  int64(w, 1, row.lt);
  string(w, 2, row.hash);
  w.join();
  int64(w, 5, fee);
  int64(w, 6, storageFee);
  int64(w, 7, otherFee);
  if (inMsg !== undefined) message(w, 8, inMsg, addresses);
  for (const out of outMsgs) message(w, 9, out, addresses);
  string(w, 10, row.account);
  w.join();
}

const transactionsField = GetBlockTransactionsExtResponseSchema.field.transactions.number;

/**
 * The response for a binary RPC door: toBinary of it is the typed message's bytes. The page's transactions are written
 * by one writer into one unknown field whose bytes run on into the next occurrences of the field: toBinary writes the
 * first tag, then the bytes, which hold every later occurrence with its own tag. A writer and a copy per transaction
 * cost more than the encoding they carried.
 */
export function blockTransactionsExtBinary(loaded: LoadedBlockTransactions): GetBlockTransactionsExtResponse {
  const response = create(GetBlockTransactionsExtResponseSchema, { id: loaded.block, reqCount: loaded.reqCount, incomplete: loaded.incomplete });
  if (loaded.page.rows.length === 0) return response;
  const addresses: Addresses = new Map();
  const w = new BinaryWriter();
  loaded.page.rows.forEach((row, index) => {
    if (index > 0) w.tag(transactionsField, LEN);
    transaction(w, loaded, row, addresses);
  });
  response.$unknown = [{ no: transactionsField, wireType: LEN, data: w.finish() }];
  return response;
}
