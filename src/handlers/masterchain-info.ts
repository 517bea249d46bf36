import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  type GetMasterchainInfoRequest,
  type GetMasterchainInfoResponse,
  GetMasterchainInfoResponseSchema,
} from "../../gen/tonquery/v1/service_pb.ts";
import { selectMasterchainRange } from "../db/blocks.ts";
import type { ServiceDeps } from "../service/deps.ts";

export async function getMasterchainInfo(
  deps: ServiceDeps,
  _request: GetMasterchainInfoRequest,
  context: HandlerContext,
): Promise<GetMasterchainInfoResponse> {
  const range = await selectMasterchainRange(deps.db.sql, context.signal);
  if (range === undefined) {
    throw new ConnectError("no blocks indexed: the database holds no masterchain block yet", Code.NotFound);
  }
  return create(GetMasterchainInfoResponseSchema, range);
}
