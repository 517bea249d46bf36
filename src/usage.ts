// The commands printed at start-up; the README shows the same ones.

const rpc = "tonquery.v1.TonQueryService";

/** A wallet transfer of the demo data (fixtures/toncenter/traces_mainnet_tonTransfer_mtw.json) with one child. */
export const demoTransactionHex = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";

export function usageExamples(baseUrl: string, demo: boolean): string {
  const lines = [
    "",
    `tonquery is serving ${demo ? "the demo dataset (real mainnet data) " : ""}on ${baseUrl}`,
    "",
    "REST (toncenter-compatible):",
    `  curl ${baseUrl}/api/v3/masterchainInfo`,
    ...(demo ? [`  curl '${baseUrl}/api/v3/adjacentTransactions?hash=${demoTransactionHex}&direction=out'`] : []),
    "",
    "Connect (JSON over HTTP):",
    `  curl -H 'content-type: application/json' -d '{}' ${baseUrl}/${rpc}/GetMasterchainInfo`,
    ...(demo
      ? [`  curl -H 'content-type: application/json' -d '{"hash":"${demoTransactionHex}","direction":"DIRECTION_OUT"}' ${baseUrl}/${rpc}/GetAdjacentTransactions`]
      : []),
    "",
    "gRPC (HTTP/2 cleartext) and gRPC-web, with buf from this project:",
    `  npx buf curl --schema proto --protocol grpc --http2-prior-knowledge ${baseUrl}/${rpc}/GetMasterchainInfo`,
    `  npx buf curl --schema proto --protocol grpcweb ${baseUrl}/${rpc}/GetMasterchainInfo`,
    ...(demo
      ? [`  npx buf curl --schema proto --protocol grpc --http2-prior-knowledge -d '{"hash":"${demoTransactionHex}"}' ${baseUrl}/${rpc}/GetAdjacentTransactions`]
      : []),
    "",
    `Health: curl ${baseUrl}/healthz`,
    "",
  ];
  return lines.join("\n");
}
