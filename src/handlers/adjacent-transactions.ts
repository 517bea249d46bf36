import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  Direction,
  type GetAdjacentTransactionsRequest,
  type GetAdjacentTransactionsResponse,
  GetAdjacentTransactionsResponseSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import type { AddressBookRow } from "../../gen/tonquery/v1/transaction_pb.ts";
import { lookUpAddresses } from "../db/addresses.ts";
import { scanTransactionRows, selectAdjacentTransactionRows, transactionRowAddresses, type TransactionRowSet } from "../db/transactions.ts";
import { type BodyDecoding, pageBodyDecoding } from "../decoding/page-bodies.ts";
import type { ServiceDeps } from "../service/deps.ts";
import { parseHash } from "../ton/hash.ts";
import { invalidParameter } from "./validation.ts";

/**
 * An answer of getAdjacentTransactions as the data layer read it: the transactions' rows, how their bodies are
 * decoded, and the address book. REST JSON writes from this directly (src/encode/v3-json/), the typed API through
 * adjacentTransactionsResponse.
 */
export interface LoadedTransactions {
  set: TransactionRowSet;
  bodies: BodyDecoding;
  addressBook: Record<string, AddressBookRow>;
}

export async function getAdjacentTransactions(
  deps: ServiceDeps,
  request: GetAdjacentTransactionsRequest,
  context: HandlerContext,
): Promise<GetAdjacentTransactionsResponse> {
  return adjacentTransactionsResponse(await loadAdjacentTransactions(deps, request, context));
}

/** The loaded answer as the typed API's message. */
export async function adjacentTransactionsResponse(loaded: LoadedTransactions): Promise<GetAdjacentTransactionsResponse> {
  const transactions = await scanTransactionRows(loaded.set, loaded.bodies);
  return create(GetAdjacentTransactionsResponseSchema, { transactions, addressBook: loaded.addressBook });
}

export async function loadAdjacentTransactions(
  deps: ServiceDeps,
  request: GetAdjacentTransactionsRequest,
  context: HandlerContext,
): Promise<LoadedTransactions> {
  if (request.hash === "") throw new ConnectError("hash is required: a transaction hash in hex, base64 or base64url", Code.InvalidArgument);
  const hash = parseHash(request.hash);
  if (hash === undefined) throw invalidParameter("hash");
  const direction = request.direction === Direction.IN ? "in" : request.direction === Direction.OUT ? "out" : undefined;

  const set = await selectAdjacentTransactionRows(deps.db.sql, context.signal, hash, direction);
  if (set.rows.length === 0) throw new ConnectError("adjacent transactions not found", Code.NotFound);
  const { addressBook } = await lookUpAddresses(deps.db.sql, context.signal, transactionRowAddresses(set), {
    book: true,
    metadata: false,
    testnet: deps.config.testnet,
  });
  return { set, bodies: pageBodyDecoding(deps.config), addressBook };
}
