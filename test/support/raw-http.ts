import http from "node:http";
import http2 from "node:http2";
import { brotliDecompressSync, gunzipSync } from "node:zlib";

// Plain HTTP requests that keep the bytes as the server sent them: fetch (undici) would decode a gzip or br body
// and drop Content-Encoding, hiding exactly what the compression and caching tests look at.

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as received, still coded. */
  body: Buffer;
}

export function rawRequest(baseUrl: string, path: string, headers: Record<string, string> = {}, method = "GET"): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // A fresh connection per request (agent: false): a test's requests never queue behind each other's sockets.
    const req = http.request(`${baseUrl}${path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The same over HTTP/2 with prior knowledge, as the REST door is also reached on the one port. */
export function rawRequestHttp2(baseUrl: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const stream = session.request({ ":method": "GET", ":path": path, ...headers });
    let status = 0;
    let responseHeaders: http.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      responseHeaders = h as http.IncomingHttpHeaders;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", reject);
    stream.on("end", () => {
      session.close();
      resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks) });
    });
    stream.end();
  });
}

/** The body with its Content-Encoding undone. */
export function decodedBody(response: RawResponse): Buffer {
  const coding = response.headers["content-encoding"];
  if (coding === undefined) return response.body;
  if (coding === "gzip") return gunzipSync(response.body);
  if (coding === "br") return brotliDecompressSync(response.body);
  throw new Error(`unexpected content-encoding ${coding}`);
}
