import { Code, ConnectError } from "@connectrpc/connect";

/** The error a request ends with when its signal fires: its deadline, its client gone, shutdown. */
export function abortError(signal: AbortSignal): ConnectError {
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError) return reason;
  return new ConnectError("request aborted", Code.Canceled, undefined, undefined, reason);
}

/**
 * `work`'s outcome, or the signal's error as soon as the signal fires. `work` itself goes on: whoever started it
 * decides what its late end means (a statement runs to its timeout, an admitted request keeps its slot).
 */
export async function untilAborted<T>(signal: AbortSignal, work: Promise<T>): Promise<T> {
  // Whichever loses the race may settle later with nobody waiting for it.
  work.catch(() => {});
  if (signal.aborted) throw abortError(signal);
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {});
  try {
    return await Promise.race([work, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
