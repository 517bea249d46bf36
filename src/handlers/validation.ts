import { Code, ConnectError } from "@connectrpc/connect";

/**
 * A parameter that cannot be read, worded as toncenter words its query-decoding failures so that clients
 * matching on the text keep working; REST answers it with 422, the typed API with InvalidArgument.
 */
export function invalidParameter(name: string, index?: number): ConnectError {
  const what = index === undefined ? `"${name}"` : `index ${index} of "${name}"`;
  return new ConnectError(`failed to decode: schema: error converting value for ${what}`, Code.InvalidArgument);
}

/**
 * Whether PostgreSQL can take the string as text: it refuses a NUL character (22021), and a lone surrogate has
 * no UTF-8 form (the driver would send U+FFFD in its place, another value than the one asked for).
 */
export function isStorableText(value: string): boolean {
  return !value.includes("\0") && value.isWellFormed();
}

/**
 * A list parameter's values without repeats (compared as given: callers normalise first), refused when more than
 * `max` remain, so that what one request asks the database for stays bounded whatever its size.
 */
export function distinctValues<T>(name: string, values: readonly T[], max: number): T[] {
  const distinct = new Set(values);
  if (distinct.size > max) throw new ConnectError(`too many values in ${name}: ${distinct.size} > ${max}`, Code.InvalidArgument);
  return [...distinct];
}
