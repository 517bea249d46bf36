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
import { Admission } from "./admission.ts";
import type { ServiceDeps } from "./service-deps.ts";

/** The one implementation behind both doors: Connect/gRPC/gRPC-web call it through the router, REST directly. */
export function createTonQueryService(deps: ServiceDeps) {
  const admission = new Admission(deps.config.maxConcurrentRequests);
  const admitted = <T>(context: HandlerContext, work: () => Promise<T>) => admission.run(context.signal, work);
  return {
    getMasterchainInfo: (request: GetMasterchainInfoRequest, context: HandlerContext) =>
      admitted(context, () => getMasterchainInfo(deps, request, context)),
    getAdjacentTransactions: (request: GetAdjacentTransactionsRequest, context: HandlerContext) =>
      admitted(context, () => getAdjacentTransactions(deps, request, context)),
    getTraces: (request: GetTracesRequest, context: HandlerContext) => admitted(context, () => getTraces(deps, request, context)),
    getBlockTransactionsExt: (request: GetBlockTransactionsExtRequest, context: HandlerContext) =>
      admitted(context, () => getBlockTransactionsExt(deps, request, context)),
  } satisfies ServiceImpl<typeof TonQueryService>;
}

export type TonQueryServiceImpl = ReturnType<typeof createTonQueryService>;

export function connectRoutes(service: TonQueryServiceImpl) {
  return (router: ConnectRouter) => {
    router.service(TonQueryService, service);
  };
}
