import { Code, ConnectError } from "@connectrpc/connect";
import { Direction } from "../../gen/tonquery/v1/service_pb.ts";

// Legacy query strings follow toncenter's parser: unknown keys are ignored and a scalar given several
// times takes its last value.

export function lastValue(query: URLSearchParams, name: string): string | undefined {
  return query.getAll(name).at(-1);
}

const directions: Record<string, Direction> = { "": Direction.UNSPECIFIED, both: Direction.UNSPECIFIED, in: Direction.IN, out: Direction.OUT };

export function parseDirection(value: string | undefined): Direction {
  const direction = directions[value ?? ""];
  if (direction === undefined) {
    throw new ConnectError(`wrong value for direction parameter: "${value}"; use in, out or both`, Code.InvalidArgument);
  }
  return direction;
}
