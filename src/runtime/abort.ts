import { Code, ConnectError } from "@connectrpc/connect";

/** The error a request ends with when its signal fires: its deadline, its client gone, shutdown. */
export function abortError(signal: AbortSignal): ConnectError {
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError) return reason;
  return new ConnectError("request aborted", Code.Canceled, undefined, undefined, reason);
}

/**
 * `work`'s outcome, or the signal's error as soon as the signal fires (`failure` makes it: by default the request's
 * ConnectError). `work` itself goes on: whoever started it
 * decides what its late end means (a statement runs to its timeout, an admitted request keeps its slot).
 */
export function untilAborted<T>(signal: AbortSignal, work: Promise<T>, failure: (signal: AbortSignal) => unknown = abortError): Promise<T> {
  if (signal.aborted) {
    // It may settle later with nobody waiting for it.
    work.catch(() => {});
    return Promise.reject(failure(signal));
  }
  // One promise and one listener, not an async function racing a second promise: twice per request on every path.
  // Once the signal has fired, `work` settles into a promise already rejected, unobserved, as the loser of a race would.
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(failure(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
