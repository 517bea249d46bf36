import { Code, ConnectError } from "@connectrpc/connect";
import { Direction, SortOrder } from "../../gen/tonquery/v1/service_pb.ts";
import { invalidParameter } from "../handlers/validation.ts";
import { parseAddress } from "../ton/address.ts";
import { parseHash } from "../ton/hash.ts";

// Legacy query strings read as toncenter's parser reads them: unknown keys are ignored, a scalar given several
// times takes its last value, an empty value counts as absent, lists are repeated keys, and a value that cannot
// be converted is a 422 naming the key (and the index, in a list).

export function lastValue(query: URLSearchParams, name: string): string | undefined {
  const value = query.getAll(name).at(-1);
  return value === "" ? undefined : value;
}

// Value tables are Maps: a plain object would also answer for "constructor", "__proto__", "toString", ...
const directions: ReadonlyMap<string, Direction> = new Map([
  ["", Direction.UNSPECIFIED],
  ["both", Direction.UNSPECIFIED],
  ["in", Direction.IN],
  ["out", Direction.OUT],
]);

export function parseDirection(value: string | undefined): Direction {
  const direction = directions.get(value ?? "");
  if (direction === undefined) {
    throw new ConnectError(`wrong value for direction parameter: "${value}"; use in, out or both`, Code.InvalidArgument);
  }
  return direction;
}

/** A list of hashes; like toncenter, an element that is not a hash but contains commas is split on them. */
export function hashList(query: URLSearchParams, name: string): string[] {
  return query
    .getAll(name)
    .filter((value) => value !== "")
    .flatMap((value, index) => {
      if (parseHash(value) !== undefined) return [value];
      const parts = value.split(",");
      if (parts.length > 1 && parts.every((part) => parseHash(part) !== undefined)) return parts;
      throw invalidParameter(name, index);
    });
}

export function addressParam(query: URLSearchParams, name: string): string | undefined {
  const value = lastValue(query, name);
  if (value !== undefined && parseAddress(value) === undefined) throw invalidParameter(name);
  return value;
}

function integerParam(query: URLSearchParams, name: string, min: bigint, max: bigint, allowFraction = false): string | undefined {
  const value = lastValue(query, name);
  if (value === undefined) return undefined;
  const match = (allowFraction ? /^(-?\d+)(?:\.\d*)?$/ : /^(-?\d+)$/).exec(value);
  if (match === null) throw invalidParameter(name);
  const n = BigInt(match[1] as string);
  if (n < min || n > max) throw invalidParameter(name);
  return n.toString();
}

export const int32Param = (query: URLSearchParams, name: string) => optionalNumber(integerParam(query, name, -(2n ** 31n), 2n ** 31n - 1n));
/** Unix time: a uint32, or a float whose fraction is dropped, as toncenter's UtimeType. */
export const utimeParam = (query: URLSearchParams, name: string) => optionalNumber(integerParam(query, name, 0n, 2n ** 32n - 1n, true));
export const uint64Param = (query: URLSearchParams, name: string) => integerParam(query, name, 0n, 2n ** 64n - 1n);

function optionalNumber(value: string | undefined): number | undefined {
  return value === undefined ? undefined : Number(value);
}

/**
 * A limit or offset (unsigned in the typed API): below `min` it is refused here, in the wording of toncenter's
 * limit check (toncenter itself silently clamps; the interface document sets the bounds).
 */
export function atLeastParam(query: URLSearchParams, name: string, min: number): number | undefined {
  const value = int32Param(query, name);
  if (value !== undefined && value < min) throw new ConnectError(`${name} is not allowed: ${value} < ${min}`, Code.InvalidArgument);
  return value;
}

/** toncenter's Go strconv.ParseBool. */
export function boolParam(query: URLSearchParams, name: string): boolean | undefined {
  const value = lastValue(query, name);
  if (value === undefined) return undefined;
  if (["1", "t", "T", "true", "TRUE", "True"].includes(value)) return true;
  if (["0", "f", "F", "false", "FALSE", "False"].includes(value)) return false;
  throw invalidParameter(name);
}

export function sortParam(query: URLSearchParams): SortOrder {
  const value = lastValue(query, "sort")?.toLowerCase();
  if (value === undefined) return SortOrder.UNSPECIFIED;
  if (value === "asc" || value === "a") return SortOrder.ASC;
  if (value === "desc" || value === "d") return SortOrder.DESC;
  throw new ConnectError("wrong value for sort parameter", Code.InvalidArgument);
}
