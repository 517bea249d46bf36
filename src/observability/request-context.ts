import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

/** Which door served a request: the typed API's three protocols, the REST paths, or anything else on the port. */
export type Door = "rest" | "connect" | "grpc" | "grpc_web" | "http";

/**
 * What is known of one request while it is served. The door that recognises the request names it (door,
 * operation) and the RPC door notes its outcome; the access log, the metrics and the server span read it when the
 * response is over. Label values stay few: an operation is one of the router's procedures or "other".
 */
export class RequestRecord {
  door: Door = "http";
  operation = "other";
  /** The RPC's outcome as a gRPC code name, once the RPC door knows it. */
  rpcCode: string | undefined = undefined;
  /**
   * A REST answer cut short after its head went out (see the router's cutShort): the status its failure would have
   * had (500, 503, 504), which the metrics and the access log give as its code beside the 200 that was sent.
   */
  restCode: string | undefined = undefined;
  /** Response body bytes written so far (a WebSocket session: the text of the messages sent). */
  bytes = 0;
  /** An Upgrade request its door accepted: a WebSocket session, logged when its connection closes (see observeUpgrades). */
  upgraded = false;
  readonly id: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** The client's address, read on arrival: an HTTP/2 stream no longer knows it once closed. */
  readonly client: string | undefined;

  constructor(id: string, startedAt: number, client: string | undefined) {
    this.id = id;
    this.startedAt = startedAt;
    this.client = client;
  }
}

// AsyncLocalStorage rather than an id passed down every call: error lines are written from the doors, from
// errors.ts and from anything below them, and each must carry the id of the request it belongs to. On Node 24 a
// store costs one context frame per request (AsyncContextFrame), measured in the bench with the rest of the
// request observation.
const storage = new AsyncLocalStorage<RequestRecord>();

/** The request being served by the code that calls it, if any. */
export function currentRequest(): RequestRecord | undefined {
  return storage.getStore();
}

/** The door that recognised the request says what it is; returns the record, to note more on it. */
export function nameRequest(door: Door, operation: string): RequestRecord | undefined {
  const record = storage.getStore();
  if (record !== undefined) {
    record.door = door;
    record.operation = operation;
  }
  return record;
}

export function runInRequest<A extends unknown[]>(record: RequestRecord, fn: (...args: A) => void, ...args: A): void {
  storage.run(record, fn, ...args);
}

/** Longest X-Request-Id taken from a client: ids are echoed into every log line and response of the request. */
export const maxRequestIdLength = 128;
const acceptableRequestId = new RegExp(`^[\\x21-\\x7e]{1,${maxRequestIdLength}}$`);

/** The client's X-Request-Id when it is printable ASCII without spaces and at most 128 characters, else a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === "string" && acceptableRequestId.test(header) ? header : randomUUID();
}

// gRPC's canonical code names by number (connect's Code enum has no OK and spells its members in PascalCase).
const grpcCodeNames = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

export function grpcCodeName(code: number): string {
  return grpcCodeNames[code] ?? "UNKNOWN";
}
