import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  Direction,
  type GetAdjacentTransactionsRequest,
  type GetAdjacentTransactionsResponse,
  GetAdjacentTransactionsResponseSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import type { Transaction } from "../../gen/tonquery/v1/transaction_pb.ts";
import { selectAddressBook } from "../db/address-book.ts";
import { selectAdjacentTransactions } from "../db/transactions.ts";
import { pageBodyDecoding } from "../decoding/page-bodies.ts";
import type { ServiceDeps } from "../service/deps.ts";
import { parseHash } from "../ton/hash.ts";
import { invalidParameter } from "./validation.ts";

export async function getAdjacentTransactions(
  deps: ServiceDeps,
  request: GetAdjacentTransactionsRequest,
  context: HandlerContext,
): Promise<GetAdjacentTransactionsResponse> {
  if (request.hash === "") throw new ConnectError("hash is required: a transaction hash in hex, base64 or base64url", Code.InvalidArgument);
  const hash = parseHash(request.hash);
  if (hash === undefined) throw invalidParameter("hash");
  const direction = request.direction === Direction.IN ? "in" : request.direction === Direction.OUT ? "out" : undefined;

  const bodies = pageBodyDecoding(deps.config);
  const transactions = await selectAdjacentTransactions(deps.db.sql, context.signal, hash, direction, bodies);
  if (transactions.length === 0) throw new ConnectError("adjacent transactions not found", Code.NotFound);
  const addressBook = await selectAddressBook(deps.db.sql, context.signal, transactionAddresses(transactions), deps.config.testnet);
  return create(GetAdjacentTransactionsResponseSchema, { transactions, addressBook });
}

/** The addresses toncenter's address_book covers for a list of transactions. */
export function transactionAddresses(transactions: readonly Transaction[]): string[] {
  const addresses: string[] = [];
  for (const tx of transactions) {
    addresses.push(tx.account);
    if (tx.inMsg?.source !== undefined) addresses.push(tx.inMsg.source);
    for (const out of tx.outMsgs) if (out.destination !== undefined) addresses.push(out.destination);
  }
  return addresses;
}
