import { Code, ConnectError } from "@connectrpc/connect";

/**
 * A parameter that cannot be read, worded as toncenter words its query-decoding failures so that clients
 * matching on the text keep working; REST answers it with 422, the typed API with InvalidArgument.
 */
export function invalidParameter(name: string, index?: number): ConnectError {
  const what = index === undefined ? `"${name}"` : `index ${index} of "${name}"`;
  return new ConnectError(`failed to decode: schema: error converting value for ${what}`, Code.InvalidArgument);
}
