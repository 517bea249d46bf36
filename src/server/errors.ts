import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { log } from "../runtime/log.ts";

/** HTTP status of a failed REST request. Bad input is 422, as toncenter answers it. */
export function restStatus(code: Code): number {
  switch (code) {
    case Code.InvalidArgument:
    case Code.OutOfRange:
    case Code.FailedPrecondition:
      return 422;
    case Code.NotFound:
      return 404;
    case Code.Unavailable:
      return 503;
    case Code.DeadlineExceeded:
      return 504;
    case Code.Canceled:
      return 499;
    case Code.ResourceExhausted:
      return 429;
    case Code.Unimplemented:
      return 501;
    default:
      return 500;
  }
}

/**
 * The error a client sees. Anything that is not already a ConnectError is a bug: it is logged with its
 * cause and reported as a bare internal error so that no SQL or stack trace leaks.
 */
export function publicError(err: unknown, where: string): ConnectError {
  const error = err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
  // An outage is logged once by the availability probe; a request that failed only because of it adds nothing.
  const knownOutage = error.code === Code.Unavailable && error.cause === undefined;
  if (error.code === Code.Internal || error.code === Code.Unknown || (error.code === Code.Unavailable && !knownOutage)) {
    log.error("request failed", { where, code: Code[error.code], error: error.cause ?? error });
  }
  return error;
}

/**
 * Logs what the RPC doors fail with and keeps internals out of the message, as the REST door does: a unary call's
 * failure, and a streaming call's, whose messages can fail long after the handler has answered (StreamTraces).
 */
export const publicErrors: Interceptor = (next) => async (request) => {
  const where = `RPC ${request.method.parent.typeName}/${request.method.name}`;
  let response;
  try {
    response = await next(request);
  } catch (err) {
    throw publicError(err, where);
  }
  return response.stream ? { ...response, message: withPublicErrors(response.message, where) } : response;
};

async function* withPublicErrors<T>(messages: AsyncIterable<T>, where: string): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    throw publicError(err, where);
  }
}
