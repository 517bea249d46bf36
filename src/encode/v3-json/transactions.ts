import type { LoadedTransactions } from "../../handlers/adjacent-transactions.ts";
import { jsonBytes } from "../../present/json-text.ts";
import { presentAddressBook } from "../../present/v3/transaction.ts";
import { printJson } from "../json-pieces.ts";
import { writeTransaction } from "./transaction.ts";

// toncenter's v3 JSON of a list of transactions with their address book ({"transactions":[...],"address_book":{...}},
// /api/v3/adjacentTransactions), written from the rows the data layer read (see LoadedTransactions). Byte for byte
// what presentTransactionsResponse (src/present/v3/transaction.ts) prints for the typed API's answer scanned from the
// same rows; test/transactions-encoders.test.ts holds the two equal.

/** The whole answer, as UTF-8 pieces. */
export function writeTransactionsResponse(loaded: LoadedTransactions): Buffer[] {
  return [
    printJson((out) => {
      out.text(`{"transactions":[`);
      loaded.set.rows.forEach((row, index) => {
        if (index > 0) out.text(",");
        writeTransaction(out, loaded.set, row, loaded.bodies);
      });
      out.text(`],"address_book":`);
      out.raw(jsonBytes(presentAddressBook(loaded.addressBook)));
      out.text("}");
    }),
  ];
}
