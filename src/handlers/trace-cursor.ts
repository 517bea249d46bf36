import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { TraceFilter, TracePosition } from "../db/traces.ts";

// The page token of /traces (REST `cursor`, RPC `page_token`): where the previous page ended, in the page order, and
// which selection it belongs to. Keyset paging costs what a first page costs at any depth, where an offset of
// 10,000 makes PostgreSQL read and drop 10,000 traces first.
//
// Layout, base64url: version (1) | flags (1) | sort key (8, int64) | trace id (32) | scope (8) | tag (12).
// The scope is a digest of the filters and the sort, so a token used with other filters is refused with a message
// that says so; the tag is an HMAC over the rest under CURSOR_SECRET, so a token that was altered is refused
// rather than read as some other position. With the default secret anyone can forge a token, which only names
// another position in public data; a deployment that wants tokens only it issued sets its own secret (the same on
// every instance behind one load balancer).

const version = 1;
const keyIsNull = 1;
const tokenBytes = 1 + 1 + 8 + 32 + 8 + 12;
const defaultSecret = "tonquery trace cursor";

/** The digest of what a token's position is a position in: the selection and its order, not the page size. */
export function traceCursorScope(filter: TraceFilter, ascending: boolean): Buffer {
  const sorted = (list: readonly string[] | undefined) => [...(list ?? [])].sort();
  const canonical = JSON.stringify([
    filter.account ?? null,
    sorted(filter.traceIds),
    sorted(filter.txHashes),
    sorted(filter.msgHashes),
    filter.mcSeqno ?? null,
    filter.startUtime ?? null,
    filter.endUtime ?? null,
    filter.startLt ?? null,
    filter.endLt ?? null,
    ascending,
  ]);
  return createHash("sha256").update(canonical).digest().subarray(0, 8);
}

function tag(secret: string, body: Buffer): Buffer {
  return createHmac("sha256", secret === "" ? defaultSecret : secret)
    .update(body)
    .digest()
    .subarray(0, 12);
}

export function encodeTraceCursor(secret: string, scope: Buffer, position: TracePosition): string {
  const token = Buffer.alloc(tokenBytes);
  token[0] = version;
  token[1] = position.key === null ? keyIsNull : 0;
  token.writeBigInt64BE(position.key === null ? 0n : BigInt(position.key), 2);
  Buffer.from(position.traceId, "base64").copy(token, 10);
  scope.copy(token, 42);
  tag(secret, token.subarray(0, 50)).copy(token, 50);
  return token.toString("base64url");
}

function invalidCursor(why: string): ConnectError {
  return new ConnectError(`invalid cursor: ${why}`, Code.InvalidArgument);
}

/** The position a token names, refused (InvalidArgument) when it is not one we issued for this selection. */
export function decodeTraceCursor(secret: string, scope: Buffer, text: string): TracePosition {
  const token = /^[A-Za-z0-9_-]+$/.test(text) ? Buffer.from(text, "base64url") : Buffer.alloc(0);
  if (token.length !== tokenBytes || token[0] !== version || (token[1] as number) > keyIsNull) throw invalidCursor("not a cursor of this service");
  if (!timingSafeEqual(tag(secret, token.subarray(0, 50)), token.subarray(50))) throw invalidCursor("it was altered or issued by another deployment");
  if (!token.subarray(42, 50).equals(scope)) throw invalidCursor("it belongs to other filters or another sort order");
  const key = token[1] === keyIsNull ? null : token.readBigInt64BE(2).toString();
  return { key, traceId: token.subarray(10, 42).toString("base64") };
}
