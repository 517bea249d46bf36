import type { Config } from "../runtime/config.ts";
import { maxBodyBytes, ssePath, wsPath } from "../streams/rest.ts";
import { eventTypes, unservedTypes } from "../streams/toncenter.ts";
import { addressInput, hashInput, query, ref } from "./inputs.ts";
import { hashBase64, map, nullable, object, rawAddress, type Schema } from "./schemas.ts";

// The live streams' doors (src/streams/rest.ts) in the OpenAPI document: the subscription as parseSubscription
// (src/streams/toncenter.ts) reads it, the events as blockEvents writes them, and every other answer the doors give.
// Apart from document.ts because these doors share none of the REST paths' conventions: other methods, other error
// bodies (toncenter's Streaming API's), a body that never ends.

export const streamingTag = "toncenter streaming v2";

/** The event schemas' names, one per type: Stream<name>Event. */
const eventSchemaNames = ["Transactions", "Actions", "Trace", "AccountStateChange"].map((name) => `Stream${name}Event`);

const typeList = eventTypes.map((type) => `\`${type}\``).join(", ");

/** A subscription field: its schema in a JSON body, and what a reader of either form needs to know. */
interface Field {
  schema: Schema;
  description: string;
  /** In a GET's query: a list (comma-separated or repeated key) or a flag (true/false/1/0). */
  form: "list" | "flag" | "text";
  "x-max-distinct-values"?: number;
}

function subscriptionFields(config: Config): Record<string, Field> {
  const list = (items: Schema, description: string, maxDistinct: number): Field => ({
    schema: { type: "array", items },
    description,
    form: "list",
    "x-max-distinct-values": maxDistinct,
  });
  return {
    types: {
      schema: { type: "array", items: { type: "string", enum: [...eventTypes] }, minItems: 1 },
      description:
        `Required: the events to send, one or more of ${typeList}. ` +
        `toncenter's ${unservedTypes.map((type) => `\`${type}\``).join(" and ")} are refused with a 400 (not served from the index).`,
      form: "list",
    },
    addresses: list(
      addressInput,
      "The accounts to follow, raw or user-friendly; none: every account (a firehose), but `account_state_change` events come only for accounts listed. " +
        "Required with any type but `trace` when `trace_external_hash_norms` is given. " +
        `At most ${config.streamMaxAddresses} distinct values (STREAM_MAX_ADDRESSES; one address in two forms counts twice), else 400.`,
      config.streamMaxAddresses,
    ),
    trace_external_hash_norms: list(
      hashInput,
      "The normalised external message hashes of the traces `trace` events are sent for; required with type `trace`. " +
        `At most ${config.streamMaxAddresses} distinct values (STREAM_MAX_ADDRESSES), else 400.`,
      config.streamMaxAddresses,
    ),
    action_types: list(
      { type: "string" },
      `Only actions of these types in \`actions\` events; none: every type. At most ${config.maxListValues} distinct names (MAX_LIST_VALUES), else 400.`,
      config.maxListValues,
    ),
    supported_action_types: list(
      { type: "string" },
      "The action types the client understands, type names or toncenter's shortcuts, as /api/v3/traces reads them; none: `latest`. " +
        `At most ${config.maxListValues} distinct names (MAX_LIST_VALUES), else 400.`,
      config.maxListValues,
    ),
    min_finality: {
      schema: { type: "string", enum: ["finalized"] },
      description: "Only `finalized` (the index holds committed blocks only): any other value is a 400 saying so.",
      form: "text",
    },
    include_address_book: { schema: { type: "boolean", default: false }, description: "Add `address_book` to each event, for the addresses it names.", form: "flag" },
    include_metadata: { schema: { type: "boolean", default: false }, description: "Add `metadata` to each event, for the token contracts it names.", form: "flag" },
  };
}

/** The subscription as a JSON object: a POST body, or a WebSocket subscribe message's fields. */
function subscriptionSchema(config: Config): Schema {
  const fields = subscriptionFields(config);
  const properties = Object.fromEntries(
    Object.entries(fields).map(([name, field]) => [
      name,
      {
        ...(name === "types" ? field.schema : nullable(field.schema)),
        description: field.description,
        ...(field["x-max-distinct-values"] !== undefined && { "x-max-distinct-values": field["x-max-distinct-values"] }),
      },
    ]),
  );
  return {
    type: "object",
    description:
      "toncenter's Streaming API v2 subscription. A field given as null counts as absent; other members are ignored. A string holding a NUL character is a 400.",
    required: ["types"],
    properties,
  };
}

/** The same subscription in a GET's query, for EventSource, which cannot POST. */
function subscriptionParameters(config: Config): Schema[] {
  return Object.entries(subscriptionFields(config)).map(([name, field]) => {
    if (field.form === "list") {
      return query(name, `${field.description} Comma-separated, or the key repeated; empty values are dropped.`, field.schema, {
        style: "form",
        explode: true,
        ...(name === "types" && { required: true }),
        ...(field["x-max-distinct-values"] !== undefined && { "x-max-distinct-values": field["x-max-distinct-values"] }),
      });
    }
    if (field.form === "flag") return query(name, `${field.description} \`true\` or \`1\`, \`false\` or \`0\`; anything else is a 400.`, field.schema);
    return query(name, field.description, field.schema);
  });
}

const eventIdPattern = "^\\s*(?:[0-9]{1,10}(?::[0-9]{1,9})?)?\\s*$";
const resumeDescription =
  "Resume after this event id (`N:k`) or masterchain seqno (`N`): block N+1 on, or block N from its event k+1. " +
  "Any seqno within STREAM_RESUME_WINDOW_BLOCKS of the index is accepted, not only one this server sent; absent or empty: from now.";

function lastEventIdHeader(): Schema {
  return {
    name: "Last-Event-ID",
    in: "header",
    required: false,
    description: `${resumeDescription} EventSource sends it by itself when it reconnects.`,
    schema: { type: "string", pattern: eventIdPattern },
  };
}

/** What ends or refuses a stream, as toncenter's Streaming API words it: the message, the Connect code's name, and where to resume when there is a place. */
const streamError = object(
  {
    error: { type: "string" },
    code: { type: "string", description: "the Connect code's name: `InvalidArgument`, `OutOfRange`, `ResourceExhausted`, `Unavailable`, ..." },
    position: { type: "integer", minimum: 0, description: "the masterchain seqno to resume after (410: the oldest accepted)" },
    last_event_id: { type: "string", description: "`position` as an event id, for Last-Event-ID" },
  },
  ["position", "last_event_id"],
);

const finality = { const: "finalized" };
const traceNorm = nullable({ ...hashBase64, description: "the normalised hash of the trace's external message; null for a trace that has none" });
/** Members every event may end with, as the subscription asks. */
const bookAndMetadata = { address_book: ref("schemas", "AddressBook"), metadata: ref("schemas", "Metadata") };
const bookAndMetadataKeys = ["address_book", "metadata"];

/** A `transactions` or `actions` event: the trace's matching items, never none, under the type's name. */
function listEvent(type: "transactions" | "actions", items: string, description: string): Schema {
  return object(
    {
      type: { const: type },
      finality,
      trace_external_hash_norm: traceNorm,
      [type]: { type: "array", minItems: 1, items: ref("schemas", items), description },
      ...bookAndMetadata,
    },
    bookAndMetadataKeys,
  );
}

/** The events' data, as src/streams/toncenter.ts blockEvents writes them (a block's events: trace by trace, per trace in this order). */
function eventSchemas(): Record<string, Schema> {
  return {
    StreamTransactionsEvent: listEvent("transactions", "Transaction", "the trace's transactions of the followed accounts"),
    StreamActionsEvent: listEvent("actions", "Action", "the trace's actions naming a followed account, of `action_types`"),
    StreamTraceEvent: object(
      {
        type: { const: "trace" },
        finality,
        trace_external_hash_norm: { ...hashBase64, description: "one of the subscription's `trace_external_hash_norms`" },
        trace: nullable(ref("schemas", "TraceNode")),
        transactions: map("^[A-Za-z0-9+/]{43}=$", ref("schemas", "Transaction"), "the trace's transactions by hash"),
        actions: { type: "array", items: ref("schemas", "Action"), description: "every action of the trace, when the subscription also has type `actions`" },
        ...bookAndMetadata,
      },
      ["actions", ...bookAndMetadataKeys],
    ),
    StreamAccountStateChangeEvent: object({
      type: { const: "account_state_change" },
      finality,
      account: rawAddress,
      state: { ...ref("schemas", "AccountState"), description: "the state the trace leaves the account in (after its last transaction in it)" },
    }),
    StreamEvent: {
      description: "The data of an `event`: one of the subscription's types.",
      oneOf: eventSchemaNames.map((name) => ref("schemas", name)),
    },
    StreamHeartbeat: object({
      type: { const: "heartbeat" },
      position: { type: "integer", minimum: 0, description: "the stream's position: every block up to this masterchain seqno has been sent" },
    }),
    StreamConnected: object({ status: { const: "subscribed" } }),
    StreamError: streamError,
  };
}

/** The WebSocket's messages: toncenter's operations from the client, acknowledgements, errors and events from the server. */
function webSocketSchemas(events: Record<string, Schema>): Record<string, Schema> {
  const id = { description: "any JSON value; echoed in the answer" };
  const eventId = { type: "string", pattern: "^[0-9]+(?::[0-9]+)?$", description: "the event's id (SSE's `id:`), to resume from" };
  // The event schemas are closed: an allOf with them could not add a member.
  const withEventId = (schema: Schema): Schema => ({
    ...schema,
    required: [...(schema.required as string[]), "event_id"],
    properties: { ...(schema.properties as Record<string, Schema>), event_id: eventId },
  });
  const operation = (name: string): Schema => ({ type: "object", required: ["operation"], properties: { operation: { const: name }, id } });
  return {
    StreamWsSubscribe: {
      description: "Starts a subscription, replacing the current one: no event of the old one follows the acknowledgement.",
      allOf: [
        ref("schemas", "StreamSubscription"),
        {
          type: "object",
          required: ["operation"],
          properties: {
            operation: { const: "subscribe" },
            id,
            last_event_id: { type: ["string", "integer", "null"], pattern: eventIdPattern, minimum: 0, description: resumeDescription },
          },
        },
      ],
    },
    StreamWsClientMessage: {
      description: "A text message holding a JSON object.",
      oneOf: [ref("schemas", "StreamWsSubscribe"), operation("unsubscribe"), operation("ping")],
    },
    StreamWsServerMessage: {
      description: "A text message holding a JSON object: an acknowledgement, an error, an event or a heartbeat.",
      anyOf: [
        object({ id, status: { enum: ["subscribed", "unsubscribed", "pong"] } }, ["id"]),
        {
          ...streamError,
          description: "A refused operation (`code` and `position` as over SSE; a message that is no JSON object, or an unknown operation: `error` only), or the end of the subscription with its position",
          required: ["error"],
          properties: { id, ...(streamError.properties as Record<string, Schema>) },
        },
        ...eventSchemaNames.map((name) => withEventId(events[name] as Schema)),
        withEventId(events.StreamHeartbeat as Schema),
      ],
    },
  };
}

const sseEventsDescription = [
  "Server-sent events, until the client goes away or the stream ends:",
  "",
  '- `event: connected`, `data: {"status":"subscribed"}` (schema StreamConnected), then `retry: 1000`;',
  "- `event: event` with `id:` and one event as `data:` (StreamEvent: StreamTransactionsEvent, StreamActionsEvent, StreamTraceEvent, StreamAccountStateChangeEvent). " +
    "The events of masterchain block N go out in order, each but the last with the id `N:k` (k counting from 0), the last with the id `N`;",
  "- `event: heartbeat` with `id: N` and `data:` StreamHeartbeat, after STREAM_HEARTBEAT_MS with nothing to send;",
  "- `event: error` with `data:` StreamError, last: the stream ended with its position (`ResourceExhausted`: the client read too slowly; `Unavailable`: the server is shutting down). Resume with `Last-Event-ID` set to its `last_event_id`.",
].join("\n");

const sseExample =
  'event: connected\ndata: {"status":"subscribed"}\n\nretry: 1000\n\n' +
  'event: event\nid: 51317644:0\ndata: {"type":"transactions","finality":"finalized","trace_external_hash_norm":null,"transactions":[...]}\n\n' +
  'event: heartbeat\nid: 51317644\ndata: {"type":"heartbeat","position":51317644}\n\n';

function streamErrorResponse(description: string, examples: Record<string, Schema>): Schema {
  return {
    description,
    content: {
      "application/json": {
        schema: ref("schemas", "StreamError"),
        examples: Object.fromEntries(Object.entries(examples).map(([name, value]) => [name, { value }])),
      },
    },
  };
}

function sseResponses(config: Config): Record<string, Schema> {
  return {
    "200": {
      description: `The stream (sent once the stream is admitted: the first stream of an instance waits for its first poll of the index). ${sseEventsDescription}`,
      headers: {
        "Cache-Control": { schema: { const: "no-cache, no-store" } },
        "X-Accel-Buffering": { description: "asks nginx not to buffer the stream", schema: { const: "no" } },
      },
      content: {
        "text/event-stream": {
          schema: { type: "string" },
          example: sseExample,
          // Which schema each event's data follows, by event name, for tools that read extensions.
          "x-event-data": {
            connected: ref("schemas", "StreamConnected"),
            event: ref("schemas", "StreamEvent"),
            heartbeat: ref("schemas", "StreamHeartbeat"),
            error: ref("schemas", "StreamError"),
          },
        },
      },
    },
    "400": streamErrorResponse(
      `A bad subscription (or a POST body that is no JSON object, or larger than ${maxBodyBytes} bytes), or a malformed event id`,
      {
        types: { error: `types is required: one or more of ${eventTypes.join(", ")}`, code: "InvalidArgument" },
        addresses: { error: `too many addresses: ${config.streamMaxAddresses + 1} > ${config.streamMaxAddresses}`, code: "InvalidArgument" },
        eventId: { error: 'malformed event id "x": expected a masterchain seqno N or N:k', code: "InvalidArgument" },
      },
    ),
    "410": streamErrorResponse(
      "The resume position is older than STREAM_RESUME_WINDOW_BLOCKS (then with the oldest position accepted), or ahead of the index's newest block (without a position)",
      {
        old: {
          error: `position 5 is older than the resume window of ${config.streamResumeWindowBlocks} blocks: the oldest position accepted now is 51307644`,
          code: "OutOfRange",
          position: 51307644,
          last_event_id: "51307644",
        },
      },
    ),
    "429": streamErrorResponse(`STREAM_MAX_STREAMS (${config.streamMaxStreams}) streams are open on this instance`, {
      full: { error: `too many streams on this instance (${config.streamMaxStreams})`, code: "ResourceExhausted" },
    }),
    "500": streamErrorResponse("A bug, its details in the log, never in the answer", { bug: { error: "internal error", code: "Internal" } }),
    "503": streamErrorResponse("The server is shutting down", { shutdown: { error: "the server is shutting down", code: "Unavailable" } }),
  };
}

function webSocketProtocol(config: Config): string {
  return [
  "toncenter's Streaming API v2 over a WebSocket: a GET with `Upgrade: websocket` (the query is ignored). Every message is text holding a JSON object (schemas StreamWsClientMessage and StreamWsServerMessage under components); one subscription at a time.",
  "",
  '- `{"operation":"subscribe","id":...,"types":[...],...,"last_event_id":"N:k"}`: the subscription\'s fields as the SSE body takes them (StreamSubscription), `last_event_id` as SSE\'s Last-Event-ID. ' +
    'Answered `{"id","status":"subscribed"}`, or `{"id","error","code"}` (plus `position`, `last_event_id` for a position out of the window) for what SSE refuses with 400, 410, 429 or 503. A new subscribe replaces the current subscription.',
  '- `{"operation":"unsubscribe","id":...}`: answered `{"id","status":"unsubscribed"}`.',
  '- `{"operation":"ping","id":...}`: answered `{"id","status":"pong"}`.',
  '- any other operation: `{"id","error"}`; a binary message or one that is no JSON object: `{"error"}`.',
  "",
  "The server sends each event as its JSON with its id as the last member, `event_id`; a heartbeat `{\"type\":\"heartbeat\",\"position\",\"event_id\"}` after STREAM_HEARTBEAT_MS with nothing to send; " +
    'and the end of a subscription as `{"id","error","code","position","last_event_id"}` (too slow a reader, or shutdown; after shutdown\'s the server closes with 1001). ' +
    `It sends a ping frame every STREAM_HEARTBEAT_MS (${config.streamHeartbeatMs} ms) and closes a connection that answered none of the last two; a message larger than ${maxBodyBytes} bytes closes the connection (1009).`,
  "",
    "An Upgrade request with another method than GET is refused by the WebSocket library with a 405 (`text/html`, `Invalid HTTP method`, no Allow header); a request without `Upgrade: websocket`, whatever its method, gets the 426 " +
      "(but an OPTIONS with an Origin header, a CORS preflight, answered 204 as on every path).",
  ].join("\n");
}

/** The streaming doors' paths, operations tagged `streamingTag`. */
export function streamingPaths(config: Config): Record<string, Record<string, Schema>> {
  const description =
    "toncenter's Streaming API v2: the traces the index commits, block after block, for a set of accounts, as events; resumable after any event id. " +
    "Answers POST and GET only: HEAD and every other method get a 405 with `Allow: POST, GET` (the response StreamingMethodNotAllowed under components), " +
    "but an OPTIONS with an Origin header, a CORS preflight, answered 204 as on every path.";
  return {
    [ssePath]: {
      post: {
        tags: [streamingTag],
        operationId: "streamSse",
        summary: "Live stream as server-sent events",
        description,
        parameters: [lastEventIdHeader()],
        requestBody: { required: true, content: { "application/json": { schema: ref("schemas", "StreamSubscription") } } },
        responses: sseResponses(config),
      },
      get: {
        tags: [streamingTag],
        operationId: "streamSseQuery",
        summary: "Live stream as server-sent events, subscribed in the query (EventSource)",
        description: `${description} The subscription is read from the query, as browsers' EventSource cannot POST; unknown keys are ignored.`,
        parameters: [
          ...subscriptionParameters(config),
          query("last_event_id", `Read when no Last-Event-ID header is sent. ${resumeDescription}`, { type: "string", pattern: eventIdPattern }),
          lastEventIdHeader(),
        ],
        responses: sseResponses(config),
      },
    },
    [wsPath]: {
      get: {
        tags: [streamingTag],
        operationId: "streamWebSocket",
        summary: "Live stream over a WebSocket",
        description: webSocketProtocol(config),
        responses: {
          "101": {
            description: "Switching Protocols: the connection speaks WebSocket from here on, as described above",
            headers: {
              Upgrade: { schema: { const: "websocket" } },
              Connection: { schema: { const: "Upgrade" } },
              "Sec-WebSocket-Accept": { schema: { type: "string" } },
              "X-Request-Id": { description: "the request's id, as on every response (README, \"Observability\")", schema: { type: "string" } },
            },
          },
          "400": {
            description: "A malformed handshake (Sec-WebSocket-Key, Sec-WebSocket-Version, ...), refused by the WebSocket library",
            content: { "text/html": { schema: { type: "string" }, example: "Missing or invalid Sec-WebSocket-Key header" } },
          },
          "426": {
            description: "A request without `Upgrade: websocket`, whatever its method (HEAD: without the body; not a CORS preflight)",
            headers: { Upgrade: { schema: { const: "websocket" } } },
            content: { "application/json": { schema: ref("schemas", "Error"), example: { error: "this path speaks WebSocket: send an Upgrade request" } } },
          },
        },
      },
    },
  };
}

/** The schemas the streaming operations refer to. */
export function streamingSchemas(config: Config): Record<string, Schema> {
  const events = eventSchemas();
  return { StreamSubscription: subscriptionSchema(config), ...events, ...webSocketSchemas(events) };
}

/** The 405 of the SSE path: not an operation, as the REST paths' 405s are not. */
export function streamingMethodNotAllowed(): Schema {
  return {
    description: "A method other than POST and GET on /api/streaming/v2/sse, HEAD included",
    headers: { Allow: { schema: { const: "POST, GET" } } },
    content: {
      "application/json": {
        schema: ref("schemas", "Error"),
        example: { error: "method not allowed: POST a subscription (or GET one in the query, for EventSource)" },
      },
    },
  };
}
