import { create, toBinary } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { type GetAdjacentTransactionsResponse, GetAdjacentTransactionsResponseSchema } from "../../../gen/tonquery/v1/service_pb.ts";
import type { LoadedTransactions } from "../../handlers/adjacent-transactions.ts";
import { writeTransaction } from "./transaction.ts";
import { ProtoWriter } from "./writer.ts";

// The binary protobuf of GetAdjacentTransactionsResponse for the RPC doors that answer in binary, written from the
// rows the data layer read (see LoadedTransactions) without building a Transaction: byte for byte what toBinary
// prints for adjacentTransactionsResponse's message (test/transactions-encoders.test.ts holds the two equal).
//
// Like a traces page (TracesProtoSink, ./traces.ts), the answer travels as the response's unknown fields, which
// toBinary writes verbatim, so that connect keeps its framing, compression and errors. Unlike it, nothing is left
// to the known fields: `transactions` (1) comes before `address_book` (2), so the address book, encoded by toBinary
// (a few entries), follows the transactions in the same unknown field's bytes, and the order is toBinary's own.

const transactionsField = GetAdjacentTransactionsResponseSchema.field.transactions.number;

export function adjacentTransactionsBinary(loaded: LoadedTransactions): GetAdjacentTransactionsResponse {
  const w = new ProtoWriter();
  loaded.set.rows.forEach((row, index) => {
    // The unknown field's own tag is the first transaction's; every later one brings its tag.
    if (index === 0) w.forkBare();
    else w.fork(transactionsField);
    writeTransaction(w, loaded.set, row, loaded.bodies);
    w.join();
  });
  const addressBook = toBinary(GetAdjacentTransactionsResponseSchema, create(GetAdjacentTransactionsResponseSchema, { addressBook: loaded.addressBook }));
  const response = create(GetAdjacentTransactionsResponseSchema);
  // Never empty: an answer without transactions is NOT_FOUND (see loadAdjacentTransactions).
  const transactions = w.finish();
  const data = new Uint8Array(transactions.length + addressBook.length);
  data.set(transactions);
  data.set(addressBook, transactions.length);
  response.$unknown = [{ no: transactionsField, wireType: WireType.LengthDelimited, data }];
  return response;
}
