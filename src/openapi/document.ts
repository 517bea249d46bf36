import packageJson from "../../package.json" with { type: "json" };
import { actionTypeShortcuts, defaultActionTypes } from "../actions/types.ts";
import type { Config } from "../runtime/config.ts";
import { defaultCount, maxCount } from "../handlers/block-transactions-ext.ts";
import { traceTooLargeWarning } from "../handlers/traces.ts";
import { addressInput, hashForms, hashInput, query, ref } from "./inputs.ts";
import { bodySchemas, type Schema } from "./schemas.ts";
import { streamingMethodNotAllowed, streamingPaths, streamingSchemas, streamingTag } from "./streaming.ts";

// The OpenAPI 3.1 document of the REST paths, built from the running configuration: the bounds and defaults it
// states (limit, list sizes) are the ones this process enforces. Parameters are described as src/rest/queries.ts,
// src/rest/params.ts and the handlers read and check them; bodies in schemas.ts; the live streams' doors in
// streaming.ts.

export type OpenApiDocument = Schema & { paths: Record<string, Record<string, Schema>>; components: Record<string, Record<string, Schema>> };

const hashListElement: Schema = { type: "string", pattern: `^(?:${hashForms})(?:,(?:${hashForms}))*$` };

const int32Min = -(2 ** 31);
const int32Max = 2 ** 31 - 1;

/** A repeated key (`?tx_hash=a&tx_hash=b`): each value a hash, or hashes joined by commas. */
function hashList(name: string, what: string, maxListValues: number): Schema {
  return query(
    name,
    `${what}. Repeat the key for several (\`?${name}=A&${name}=B\`); a value may also hold several hashes joined by commas. ` +
      `At most ${maxListValues} distinct hashes (the same hash in several forms counts once; MAX_LIST_VALUES), else 422.`,
    { type: "array", items: hashListElement },
    { style: "form", explode: true, "x-max-distinct-values": maxListValues },
  );
}

/** An error body in the path's dialect, with examples of its texts (as the service words them). */
function errorContent(status: number, schema: "Error" | "V2Error", examples: Record<string, string>): Schema {
  const body = (text: string) => (schema === "V2Error" ? { ok: false, error: text, code: status } : { error: text });
  const media: Schema = { schema: ref("schemas", schema) };
  if (Object.keys(examples).length > 0) {
    media.examples = Object.fromEntries(Object.entries(examples).map(([name, text]) => [name, { value: body(text) }]));
  }
  return { "application/json": media };
}

function errorResponse(status: number, description: string, schema: "Error" | "V2Error", examples: Record<string, string> = {}): Schema {
  return { description, content: errorContent(status, schema, examples) };
}

/** The statuses every REST operation can answer besides its own. */
function commonResponses(dialect: "v3" | "v2"): Record<string, Schema> {
  const suffix = dialect === "v2" ? "V2" : "";
  return {
    "400": ref("responses", "MalformedTarget"),
    "500": ref("responses", `Internal${suffix}`),
    "503": ref("responses", `Unavailable${suffix}`),
    "504": ref("responses", `Timeout${suffix}`),
  };
}

/**
 * The answer to every method but GET and HEAD. Not an operation of any path: an operation per refused method made
 * Swagger UI list each path twice, offering a "POST" that does not exist. It is a component the document's
 * description points to, so a client can still read its shape.
 */
function refusedMethod(dialect: "v3" | "v2"): Schema {
  const schema = dialect === "v2" ? "V2Error" : "Error";
  return {
    description: "Method not allowed: POST, PUT, PATCH, DELETE and every other method but GET and HEAD, named in the error",
    headers: { Allow: { schema: { const: "GET, HEAD" } } },
    content: errorContent(405, schema, { post: "method POST not allowed: use GET" }),
  };
}

/** The failures any operation can meet, in one dialect: named Internal, Unavailable, Timeout (plus the suffix). */
function sharedErrors(suffix: string, schema: "Error" | "V2Error"): Record<string, Schema> {
  return {
    [`Internal${suffix}`]: errorResponse(500, "A bug: details only in the log", schema, { internal: "internal error" }),
    [`Unavailable${suffix}`]: errorResponse(503, "The database does not answer", schema, { unavailable: "database unavailable" }),
    [`Timeout${suffix}`]: errorResponse(504, "A statement timed out (STATEMENT_TIMEOUT_MS) or the request's deadline passed (REQUEST_TIMEOUT_MS)", schema, {
      timeout: "timeout: the query took longer than the statement timeout",
    }),
  };
}

function json(schemaName: string, description: string): Schema {
  return { description, content: { "application/json": { schema: ref("schemas", schemaName) } } };
}

export function openApiDocument(config: Config): OpenApiDocument {
  const shortcuts = Object.keys(actionTypeShortcuts)
    .map((name) => `\`${name}\``)
    .join(", ");
  const v3 = "toncenter v3";
  const v2 = "toncenter v2";
  const operational = "operations";

  return {
    openapi: "3.1.0",
    info: {
      title: "tonquery REST API",
      version: packageJson.version,
      summary: "toncenter-compatible REST paths over a ton-index-worker database",
      description: [
        "The legacy REST paths of tonquery, answering as toncenter does. The same operations are served typed over Connect, gRPC and gRPC-web on this port (proto/tonquery/v1).",
        "",
        "Query strings are read as toncenter reads them: unknown keys are ignored, a key given several times takes its last value (lists: every value), an empty value counts as absent.",
        "Hashes are accepted as 64 hex digits (optionally `0x`-prefixed), base64 or base64url (percent-encode a base64 `+`: a bare one reads as a space); addresses as raw `workchain:hex` or user-friendly base64/base64url.",
        "Responses print hashes as standard base64, addresses as raw `workchain:HEX`, 64-bit integers as decimal strings.",
        "",
        "Every path but the live streams' answers HEAD as GET, without the body, and any other method with a 405 and `Allow: GET, HEAD` (bodies: the responses MethodNotAllowed and MethodNotAllowedV2 under components). " +
          "The live streams' paths (tag toncenter streaming v2) say what they answer other methods. A request whose headers or body come later than HEADERS_TIMEOUT_MS / BODY_TIMEOUT_MS gets a 408 and its connection is closed.",
      ].join("\n"),
      license: { name: packageJson.license, identifier: packageJson.license },
    },
    tags: [
      { name: v3, description: "toncenter's index API v3" },
      { name: v2, description: "toncenter's HTTP API v2: bodies wrapped in `{\"ok\": true, \"result\": ...}`, errors `{\"ok\": false, \"error\", \"code\"}`" },
      { name: streamingTag, description: "toncenter's Streaming API v2: live streams of the committed traces, as server-sent events or over a WebSocket (README, \"Live streams\")" },
      { name: operational, description: "health and this documentation" },
    ],
    paths: {
      "/api/v3/masterchainInfo": {
        get: {
          tags: [v3],
          operationId: "getMasterchainInfo",
          summary: "First and last indexed masterchain blocks",
          description: "The lowest and the highest masterchain block of the index (the first need not be the genesis).",
          responses: {
            "200": json("MasterchainInfo", "The two blocks"),
            "404": errorResponse(404, "The index holds no masterchain block yet", "Error", {
              empty: "no blocks indexed: the database holds no masterchain block yet",
            }),
            ...commonResponses("v3"),
          },
        },
      },
      "/api/v3/adjacentTransactions": {
        get: {
          tags: [v3],
          operationId: "getAdjacentTransactions",
          summary: "Parent or children of a transaction",
          description:
            "The transactions on the other side of the transaction's messages, in lt order, each with its messages (bodies decoded) and account states, and the address book of every address they mention.",
          parameters: [
            query("hash", "The transaction's hash.", hashInput, { required: true }),
            query(
              "direction",
              "`in`: the parent (the sender of its inbound message); `out`: the children (the receivers of its outbound messages); `both` or absent: both.",
              { type: "string", enum: ["in", "out", "both"], default: "both" },
            ),
          ],
          responses: {
            "200": json("TransactionsResponse", "The adjacent transactions"),
            "404": errorResponse(404, "No indexed transaction on the other side (or no such transaction)", "Error", { none: "adjacent transactions not found" }),
            "422": errorResponse(422, "A missing or malformed hash, or an unknown direction", "Error", {
              hash: 'failed to decode: schema: error converting value for "hash"',
              direction: 'wrong value for direction parameter: "up"; use in, out or both',
            }),
            ...commonResponses("v3"),
          },
        },
      },
      "/api/v3/traces": {
        get: {
          tags: [v3],
          operationId: "getTraces",
          summary: "Traces by account, hash, block or time",
          description: [
            "Traces selected by at most one of `account`, `trace_id`, `tx_hash`, `msg_hash` (none: every trace), combined with the block, time and lt filters, a page at a time.",
            "Each trace carries its header, the tree of its transactions, the transactions themselves and, with `include_actions`, its classified actions;",
            `a trace of more than ${config.maxTraceTransactions} transactions (MAX_TRACE_TRANSACTIONS) comes back with \`is_incomplete: true\`, \`warning: "${traceTooLargeWarning}"\` and no transactions.`,
            "The response also describes every address involved (`address_book`) and every token contract (`metadata`).",
          ].join(" "),
          parameters: [
            query("account", "Traces with a transaction of this account.", addressInput),
            hashList("trace_id", "Traces by id (the hash of the trace's first transaction)", config.maxListValues),
            hashList("tx_hash", "Traces holding one of these transactions", config.maxListValues),
            hashList("msg_hash", "Traces holding one of these messages (also matched against an external message's normalised hash)", config.maxListValues),
            query("mc_seqno", "Traces completed in this masterchain block; 404 when the block is unknown.", {
              type: "integer",
              format: "int32",
              minimum: int32Min,
              maximum: int32Max,
            }),
            query("start_utime", "Traces that started at or after this Unix time; also orders the page by time. A fraction is accepted and dropped.", {
              type: "integer",
              minimum: 0,
              maximum: 2 ** 32 - 1,
            }),
            query("end_utime", "Traces that started at or before this Unix time; also orders the page by time. A fraction is accepted and dropped.", {
              type: "integer",
              minimum: 0,
              maximum: 2 ** 32 - 1,
            }),
            query("start_lt", "Traces that started at or after this logical time (an unsigned 64-bit integer).", { type: "integer", minimum: 0 }),
            query("end_lt", "Traces that started at or before this logical time (an unsigned 64-bit integer).", { type: "integer", minimum: 0 }),
            query("include_actions", "Add each trace's classified actions. Also accepted: `1`, `t`, `T`, `TRUE`, `True` and `0`, `f`, `F`, `FALSE`, `False`.", {
              type: "boolean",
              default: false,
            }),
            query(
              "supported_action_types",
              `The action types the client understands (with include_actions): type names or the shortcuts ${shortcuts}. ` +
                "Repeat the key for several; a comma is part of the name, not a separator. " +
                `At most ${config.maxListValues} distinct names (MAX_LIST_VALUES), else 422; a name holding a NUL character is a 422.`,
              { type: "array", items: { type: "string" }, default: [...defaultActionTypes] },
              { style: "form", explode: true, "x-max-distinct-values": config.maxListValues },
            ),
            query("limit", `Traces per page: 1 to ${config.maxLimit} (MAX_LIMIT), default ${config.defaultLimit} (DEFAULT_LIMIT).`, {
              type: "integer",
              format: "int32",
              minimum: 1,
              maximum: config.maxLimit,
              default: config.defaultLimit,
            }),
            query("offset", "Traces to skip. A deep offset costs what it skips: page with `cursor` instead. Not with `cursor`.", {
              type: "integer",
              format: "int32",
              minimum: 0,
              maximum: int32Max,
              default: 0,
            }),
            query("sort", "Order by end lt (or end time when a time filter is given), then trace id. Case-insensitive; `a` and `d` are accepted too.", {
              type: "string",
              enum: ["asc", "desc"],
              default: "desc",
            }),
            query(
              "cursor",
              "The `next_cursor` of the previous page: the page after it, in the same order, at the cost of a first page. " +
                "Only with the filters and `sort` it was issued for; an altered cursor, or one with `offset`, is a 422.",
              { type: "string", pattern: "^[A-Za-z0-9_-]+$" },
            ),
          ],
          responses: {
            "200": json("TracesResponse", "A page of traces"),
            "404": errorResponse(404, "`mc_seqno` names a masterchain block the index does not hold", "Error", { block: "masterchain block 99999999 not found" }),
            "422": errorResponse(422, "A malformed or out-of-range parameter", "Error", {
              limit: `limit is not allowed: ${config.maxLimit + 1} > ${config.maxLimit}`,
              selectors: "only one of account, trace_id, tx_hash, msg_hash should be specified",
              element: 'failed to decode: schema: error converting value for index 0 of "tx_hash"',
              tooMany: `too many values in tx_hash: ${config.maxListValues + 1} > ${config.maxListValues}`,
              sort: "wrong value for sort parameter",
              cursor: "invalid cursor: it belongs to other filters or another sort order",
            }),
            ...commonResponses("v3"),
          },
        },
      },
      "/api/v2/getBlockTransactionsExt": {
        get: {
          tags: [v2],
          operationId: "getBlockTransactionsExt",
          summary: "Transactions of a block, with their BOCs",
          description:
            "The block's transactions in tonlib's form, ordered by account then lt, `count` at a time; the next page starts after `after_lt` + `after_hash` " +
            "(the lt and the account of the last transaction returned). `data` is the transaction's BOC rebuilt from the index, or empty when it cannot be rebuilt exactly. " +
            "Integers are read strictly: no fraction, no hex.",
          parameters: [
            query("workchain", "The block's workchain.", { type: "integer", format: "int32", minimum: int32Min, maximum: int32Max }, { required: true }),
            query("shard", "The block's shard as a signed decimal (`-9223372036854775808` for the masterchain).", { type: "integer", format: "int64" }, { required: true }),
            query("seqno", "The block's seqno.", { type: "integer", format: "int32", minimum: 1, maximum: int32Max }, { required: true }),
            query("root_hash", "Must match the block's root hash, else 404.", hashInput),
            query("file_hash", "Must match the block's file hash, else 404.", hashInput),
            query("after_lt", "The lt of the last transaction of the previous page; with after_hash.", { type: "integer", format: "int64", minimum: 0 }),
            query("after_hash", "The account of the last transaction of the previous page (any address form, or its 32-byte account id as a hash); with after_lt.", {
              type: "string",
              pattern: `^(?:-?[0-9]+:[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{48}|${hashForms})$`,
            }),
            query("count", `Transactions per page: 1 to ${maxCount}, default ${defaultCount}.`, { type: "integer", format: "int32", minimum: 1, maximum: maxCount, default: defaultCount }),
          ],
          responses: {
            "200": json("V2BlockTransactionsExtResult", "A page of the block's transactions"),
            "404": errorResponse(404, "The index does not hold the block (or its hashes differ)", "V2Error", {
              block: "block not found: (-1,-9223372036854775808,1)",
            }),
            "422": errorResponse(422, "A missing, malformed or out-of-range parameter", "V2Error", {
              parse: "failed to parse get request: failed to parse seqno",
              count: "failed to validate request: count should be positive",
              cursor: "failed to validate request: after_lt and after_hash should be used together",
            }),
            ...commonResponses("v2"),
          },
        },
      },
      ...streamingPaths(config),
      "/healthz": {
        get: {
          tags: [operational],
          operationId: "health",
          summary: "Whether the database answers",
          description: "Answered from the availability probe's last result, so it costs the database nothing. Methods but GET/HEAD: 405.",
          responses: {
            "200": json("Health", "The database answers"),
            "503": json("HealthUnavailable", "The database does not answer"),
          },
        },
      },
      "/openapi.json": {
        get: {
          tags: [operational],
          operationId: "openApiDocument",
          summary: "This document",
          responses: { "200": { description: "OpenAPI 3.1", content: { "application/json": { schema: { type: "object" } } } } },
        },
      },
      "/docs": {
        get: {
          tags: [operational],
          operationId: "docs",
          summary: "This document, browsable (Swagger UI, served from this server)",
          responses: { "200": { description: "An HTML page", content: { "text/html": { schema: { type: "string" } } } } },
        },
      },
    },
    components: {
      schemas: { ...bodySchemas(traceTooLargeWarning), ...streamingSchemas(config) },
      responses: {
        MethodNotAllowed: refusedMethod("v3"),
        MethodNotAllowedV2: refusedMethod("v2"),
        StreamingMethodNotAllowed: streamingMethodNotAllowed(),
        MalformedTarget: errorResponse(400, "A request target that makes no URL (answered before the path is known, so in v3's form on every path)", "Error", {
          target: "malformed request target",
        }),
        ...sharedErrors("", "Error"),
        ...sharedErrors("V2", "V2Error"),
      },
    },
  };
}
