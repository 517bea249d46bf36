import type { ConnectRouter, HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type GetAdjacentTransactionsRequest,
  type GetBlockTransactionsExtRequest,
  type GetMasterchainInfoRequest,
  type GetTracesRequest,
  TonQueryService,
} from "../gen/tonquery/v1/service_pb.ts";
import { getAdjacentTransactions } from "./handlers/adjacent-transactions.ts";
import { getBlockTransactionsExt } from "./handlers/block-transactions-ext.ts";
import { getMasterchainInfo } from "./handlers/masterchain-info.ts";
import { getTraces } from "./handlers/traces.ts";
import type { ServiceDeps } from "./service-deps.ts";

/** The one implementation behind both doors: Connect/gRPC/gRPC-web call it through the router, REST directly. */
export function createTonQueryService(deps: ServiceDeps) {
  return {
    getMasterchainInfo: (request: GetMasterchainInfoRequest, context: HandlerContext) => getMasterchainInfo(deps, request, context),
    getAdjacentTransactions: (request: GetAdjacentTransactionsRequest, context: HandlerContext) =>
      getAdjacentTransactions(deps, request, context),
    getTraces: (request: GetTracesRequest, context: HandlerContext) => getTraces(deps, request, context),
    getBlockTransactionsExt: (request: GetBlockTransactionsExtRequest, context: HandlerContext) =>
      getBlockTransactionsExt(deps, request, context),
  } satisfies ServiceImpl<typeof TonQueryService>;
}

export type TonQueryServiceImpl = ReturnType<typeof createTonQueryService>;

export function connectRoutes(service: TonQueryServiceImpl) {
  return (router: ConnectRouter) => {
    router.service(TonQueryService, service);
  };
}
