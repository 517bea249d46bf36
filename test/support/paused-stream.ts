import http2 from "node:http2";

/** An HTTP/2 response its client has stopped reading, and what the client can do about it. */
export interface PausedStream<Outcome> {
  headers: http2.IncomingHttpHeaders;
  /** How the stream ends. */
  outcome: Promise<Outcome>;
  /** Reads on to the end of the stream. */
  resume(): Promise<Outcome>;
  /** Resets the stream (the client goes away). */
  cancel(): Promise<Outcome>;
}

/** Pauses `stream` now; the client's flow-control window then holds the server to what it has not read. */
export function pauseStream<Outcome>(stream: http2.ClientHttp2Stream, headers: http2.IncomingHttpHeaders, outcome: Promise<Outcome>): PausedStream<Outcome> {
  stream.pause();
  return {
    headers,
    outcome,
    resume: () => {
      stream.resume();
      return outcome;
    },
    cancel: () => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      return outcome;
    },
  };
}
