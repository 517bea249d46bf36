// The commands printed at start-up; the README shows the same ones.

import { projectRoot } from "../runtime/project-files.ts";

const rpc = "tonquery.v1.TonQueryService";

/**
 * This project's buf, runnable from any directory: the server answers reflection, so buf needs no schema, only a
 * binary (plain `npx buf` outside the project would look for an npm package called buf instead).
 */
const buf = `npx --prefix ${/^[\w./-]+$/.test(projectRoot) ? projectRoot : `'${projectRoot.replaceAll("'", `'\\''`)}'`} buf`;
const grpc = `${buf} curl --protocol grpc --http2-prior-knowledge`;
const grpcWeb = `${buf} curl --protocol grpcweb`;

/**
 * A wallet transfer of the demo data (fixtures/toncenter/traces_mainnet_tonTransfer_mtw.json): the root
 * transaction (whose hash is also the trace id) has one child; the wallet and its external message.
 */
export const demoTransactionHex = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";
const demoWallet = "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH";
const demoExternalMessageHex = "0529fa8d5246037fea7c2bc56ae80735862ccf97d70d449877a4535f7f7a7b84";
/** A complete, classified trace of 13 transactions (fixtures/toncenter/traces_array_mainnet_mc35120456_...): cacheable for a day. */
const demoSettledTraceHex = "ad30b672bb5cbadf665ae9fe64a37f8e6939d679e92de925b72a3a6f9069bf72";
/**
 * A USDT transfer (fixtures/toncenter/traces_mainnet_usdtTransfer_mtw.json): the wallet's transaction, whose child
 * is the jetton wallet's, received through a message decoded as a jetton_transfer.
 */
export const demoJettonTransferHex = "3a75b3b25f5ee2741977a8820b2e87a058fe82b5f645c1faf0ca0d5b80efe49c";

/** The demo's last recorded masterchain block: a stream resumed after it replays every block the demo has added. */
const demoLastSeqno = 51317643;

/** How often the demo adds a replayed block (src/demo/replay.ts). */
export const demoReplaySeconds = 3;

export function usageExamples(baseUrl: string, demo: boolean): string {
  const lines = [
    "",
    `tonquery is serving ${demo ? "the demo dataset (real mainnet data) " : ""}on ${baseUrl}`,
    "",
    "REST (toncenter-compatible):",
    `  curl ${baseUrl}/api/v3/masterchainInfo`,
    ...(demo
      ? [
          `  curl '${baseUrl}/api/v3/adjacentTransactions?hash=${demoTransactionHex}&direction=out'`,
          `  curl '${baseUrl}/api/v3/adjacentTransactions?hash=${demoJettonTransferHex}&direction=out'`,
          `  curl '${baseUrl}/api/v3/traces?account=${demoWallet}&limit=5'`,
          `  curl '${baseUrl}/api/v3/traces?msg_hash=${demoExternalMessageHex}&include_actions=true'`,
          `  curl -s --compressed '${baseUrl}/api/v3/traces?trace_id=${demoSettledTraceHex}&include_actions=true'`,
          `  curl '${baseUrl}/api/v2/getBlockTransactionsExt?workchain=-1&shard=-9223372036854775808&seqno=39984096&count=2'`,
        ]
      : [`  curl '${baseUrl}/api/v3/traces?limit=5'`]),
    "",
    "Connect (JSON over HTTP):",
    `  curl -H 'content-type: application/json' -d '{}' ${baseUrl}/${rpc}/GetMasterchainInfo`,
    ...(demo
      ? [
          `  curl -H 'content-type: application/json' -d '{"hash":"${demoTransactionHex}","direction":"DIRECTION_OUT"}' ${baseUrl}/${rpc}/GetAdjacentTransactions`,
          `  curl -H 'content-type: application/json' -d '{"txHash":["${demoTransactionHex}"],"includeActions":true}' ${baseUrl}/${rpc}/GetTraces`,
        ]
      : []),
    "",
    "gRPC (HTTP/2 cleartext) and gRPC-web, with buf from this project, from any directory (the server describes itself):",
    `  ${grpc} ${baseUrl}/${rpc}/GetMasterchainInfo`,
    `  ${grpcWeb} ${baseUrl}/${rpc}/GetMasterchainInfo`,
    ...(demo
      ? [
          `  ${grpc} -d '{"hash":"${demoTransactionHex}"}' ${baseUrl}/${rpc}/GetAdjacentTransactions`,
          `  ${grpcWeb} -d '{"txHash":["${demoTransactionHex}"]}' ${baseUrl}/${rpc}/GetTraces`,
          `  ${grpc} -d '{"workchain":-1,"shard":"-9223372036854775808","seqno":39984096}' ${baseUrl}/${rpc}/GetBlockTransactionsExt`,
        ]
      : []),
    "",
    demo
      ? `Live streams (from the first stream on, the demo appends a block of replayed mainnet traces every ${demoReplaySeconds} s; Ctrl-C to stop each):`
      : "Live streams (toncenter's Streaming API v2, and StreamTraces):",
    `  curl -N -X POST -H 'content-type: application/json' -d '{"types":["transactions","actions"]${demo ? "" : ',"addresses":["<account>"]'}}' ${baseUrl}/api/streaming/v2/sse`,
    demo
      ? `  curl -N -G -d types=actions -H 'Last-Event-ID: ${demoLastSeqno}' ${baseUrl}/api/streaming/v2/sse`
      : `  curl -N -G -d types=actions -d addresses=<account> -H 'Last-Event-ID: <an event id received>' ${baseUrl}/api/streaming/v2/sse`,
    `  ${grpc} -d '{${demo ? "" : '"accounts":["<account>"],'}"includeActions":true}' ${baseUrl}/${rpc}/StreamTraces`,
    "",
    "The trace explorer, in a browser:",
    `  ${baseUrl}/explorer`,
    ...(demo ? [`  ${baseUrl}/explorer?q=${demoJettonTransferHex}   (the demo's USDT transfer)`] : []),
    "",
    `Health: curl ${baseUrl}/readyz`,
    "",
  ];
  return lines.join("\n");
}
