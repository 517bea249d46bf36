// The page's state lives in its URL, so that a link (or a reload, or the back button) opens the same view:
//
//   ?q=TEXT                      a search, resolved to one of the views below (the URL is then replaced by it)
//   ?trace=ID[&tx=H | &msg=H]    a trace, with a transaction or a message selected
//   ?account=ADDR[&page=TOKEN]   an account's traces, newest first; TOKEN is the API's page token of older ones
//   (nothing)                    the newest traces of the index
//
// Hashes are written base64url (no padding), the shortest form the API accepts that needs no escaping in a URL.

export type Selection = { kind: "tx"; hash: string } | { kind: "msg"; hash: string };

export type View =
  | { kind: "home" }
  | { kind: "search"; query: string }
  | { kind: "trace"; traceId: string; selection?: Selection }
  | { kind: "account"; account: string; pageToken?: string };

export function viewOfSearch(search: string): View {
  const params = new URLSearchParams(search);
  const value = (name: string) => {
    const found = params.get(name)?.trim();
    return found === undefined || found === "" ? undefined : found;
  };
  const query = value("q");
  if (query !== undefined) return { kind: "search", query };
  const traceId = value("trace");
  if (traceId !== undefined) {
    // Selections are compared with the API's hashes, which are standard base64.
    const normal = (hash: string | undefined) => (hash === undefined ? undefined : (standardHash(hash) ?? hash));
    const tx = normal(value("tx"));
    const msg = normal(value("msg"));
    const selection: Selection | undefined = tx !== undefined ? { kind: "tx", hash: tx } : msg !== undefined ? { kind: "msg", hash: msg } : undefined;
    return selection === undefined ? { kind: "trace", traceId } : { kind: "trace", traceId, selection };
  }
  const account = value("account");
  if (account !== undefined) {
    const pageToken = value("page");
    return pageToken === undefined ? { kind: "account", account } : { kind: "account", account, pageToken };
  }
  return { kind: "home" };
}

/** The query string (with its "?", or "" for the home view) that opens `view`. */
export function searchOfView(view: View): string {
  const params = new URLSearchParams();
  switch (view.kind) {
    case "home":
      break;
    case "search":
      params.set("q", view.query);
      break;
    case "trace":
      params.set("trace", urlHash(view.traceId));
      if (view.selection) params.set(view.selection.kind, urlHash(view.selection.hash));
      break;
    case "account":
      params.set("account", view.account);
      if (view.pageToken !== undefined) params.set("page", view.pageToken);
      break;
  }
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/** A hash as the API sends it (standard base64) in base64url without padding; other forms are left as they are. */
export function urlHash(hash: string): string {
  return /^[A-Za-z0-9+/]{43}=$/.test(hash) ? hash.replace(/\+/g, "-").replace(/\//g, "_").replace(/=$/, "") : hash;
}

/** Any accepted form of a 32-byte hash (hex, 0x-hex, base64, base64url) in the API's standard base64, to compare. */
export function standardHash(hash: string): string | undefined {
  const hex = /^(?:0x)?([0-9a-fA-F]{64})$/.exec(hash);
  if (hex) {
    const bytes = (hex[1] as string).match(/../g) as string[];
    return btoa(String.fromCharCode(...bytes.map((pair) => parseInt(pair, 16))));
  }
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(hash)) return undefined;
  return `${hash.replace(/-/g, "+").replace(/_/g, "/").slice(0, 43)}=`;
}
