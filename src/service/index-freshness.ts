import { Code, ConnectError } from "@connectrpc/connect";

// The read-your-index rule of the service, in headers (both doors; see README "Running at scale"): with replicas,
// every answer says how fresh the index that served it was, and a client may ask for at least that on its next
// request, so that what it has seen (masterchainInfo's last block, a trace) never disappears again, whichever
// instance and whichever replica serves it. A service on a single database sends no X-Index-Seqno (its index never
// goes back) and serves any X-Min-Index-Seqno from that database.

/** Response header (with replicas): the newest masterchain seqno of the member that served, read after the request's last statement. */
export const indexSeqnoHeader = "x-index-seqno";

/** Request header: serve from a member known to hold at least this masterchain seqno (the primary when none is). */
export const minIndexSeqnoHeader = "x-min-index-seqno";

/** Masterchain seqnos are 32-bit unsigned. */
const maxSeqno = 2 ** 32 - 1;

/** The freshness a request asks for; an empty header asks for none, a malformed one is refused like a bad parameter. */
export function minIndexSeqno(headers: Headers): number | undefined {
  const value = headers.get(minIndexSeqnoHeader)?.trim();
  if (value === undefined || value === "") return undefined;
  if (!/^\d{1,10}$/.test(value) || Number(value) > maxSeqno) {
    throw new ConnectError(`invalid ${minIndexSeqnoHeader}: expected a masterchain seqno`, Code.InvalidArgument);
  }
  return Number(value);
}

export function exposeIndexSeqno(headers: Headers, seqno: number | undefined): void {
  if (seqno !== undefined) headers.set(indexSeqnoHeader, String(seqno));
}
