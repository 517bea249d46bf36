import { create, toBinary } from "@bufbuild/protobuf";
import { type GetAdjacentTransactionsResponse, GetAdjacentTransactionsResponseSchema } from "../../../gen/tonquery/v1/service_pb.ts";
import type { TransactionRow } from "../../db/transactions.ts";
import type { LoadedTransactions } from "../../handlers/adjacent-transactions.ts";
import { PageBytes, selfEncoded } from "./own-encoding.ts";
import { writeTransaction } from "./transaction.ts";
import type { ProtoWriter } from "./writer.ts";

// The binary protobuf of GetAdjacentTransactionsResponse for the RPC doors that answer in binary, written from the
// rows the data layer read (see LoadedTransactions) without building a Transaction: byte for byte what toBinary
// prints for adjacentTransactionsResponse's message (test/transactions-encoders.test.ts holds the two equal).
//
// Like a traces page (TracesProtoSink, ./traces.ts), the answer is the message's bytes, which connect sends as they
// are (see own-encoding.ts): every transaction as an occurrence of `transactions` (1), then `address_book` (2),
// encoded by toBinary (a few entries), as toBinary orders them.

const transactionsField = GetAdjacentTransactionsResponseSchema.field.transactions.number;

export function adjacentTransactionsBinary(loaded: LoadedTransactions): GetAdjacentTransactionsResponse {
  const page = new PageBytes();
  page.appendOccurrences(transactionsField, loaded.set.rows, writeLoadedTransaction, loaded);
  const response = create(GetAdjacentTransactionsResponseSchema, { addressBook: loaded.addressBook });
  page.append(toBinary(GetAdjacentTransactionsResponseSchema, response));
  return selfEncoded(response, page.finish());
}

function writeLoadedTransaction(w: ProtoWriter, row: TransactionRow, loaded: LoadedTransactions): void {
  writeTransaction(w, loaded.set, row, loaded.bodies);
}
