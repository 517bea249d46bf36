// The commands printed at start-up; the README shows the same ones.

const rpc = "tonquery.v1.TonQueryService";

export function usageExamples(baseUrl: string, demo: boolean): string {
  const lines = [
    "",
    `tonquery is serving ${demo ? "the demo dataset (real mainnet data) " : ""}on ${baseUrl}`,
    "",
    "REST (toncenter-compatible):",
    `  curl ${baseUrl}/api/v3/masterchainInfo`,
    "",
    "Connect (JSON over HTTP):",
    `  curl -H 'content-type: application/json' -d '{}' ${baseUrl}/${rpc}/GetMasterchainInfo`,
    "",
    "gRPC (HTTP/2 cleartext) and gRPC-web, with buf from this project:",
    `  npx buf curl --schema proto --protocol grpc --http2-prior-knowledge ${baseUrl}/${rpc}/GetMasterchainInfo`,
    `  npx buf curl --schema proto --protocol grpcweb ${baseUrl}/${rpc}/GetMasterchainInfo`,
    "",
    `Health: curl ${baseUrl}/healthz`,
    "",
  ];
  return lines.join("\n");
}
