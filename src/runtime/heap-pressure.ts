import { constants, PerformanceObserver } from "node:perf_hooks";
import { loadNativeAddon } from "./native-addon.ts";

// V8's memory-pressure signal (native/memory-pressure, built by `npm ci`), for the releases the service runs under load
// (src/runtime/memory-release.ts): V8 collects incrementally, reducing memory, beside the requests in flight, where
// the `gc` function's last-resort collection stops them for its whole length (see the addon's source for the figures).

interface MemoryPressureAddon {
  moderate(): void;
}

const addon = loadNativeAddon<MemoryPressureAddon>("memory-pressure");

/** Whether this process can signal memory pressure to V8 (the addon built for this Node version). */
export const heapPressureSignalAvailable = addon !== undefined;

/** A collection a memory release set going, which ends after the call that started it. */
export interface HeapCollection {
  /** Whether a full collection has ended since the start. */
  ended(): boolean;
  /** How long the collector has stopped the event loop for it so far (its incremental steps and its final pause). */
  pauseMs(): number;
  /** Stops following it. */
  close(): void;
}

/**
 * Tells V8 of moderate memory pressure: unless a collection is under way already (which then ends as it would have),
 * V8 starts one that reduces memory, marks incrementally, mostly on its helper threads, and hands back the pages it
 * empties when it ends. Returns at once; the collection is followed through the process's GC performance entries.
 */
export function signalHeapPressure(): HeapCollection {
  let ended = false;
  let pauseMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
      // Scavenges run whatever the release does; the full collection's steps and its final pause are the release's.
      if (kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL || kind === constants.NODE_PERFORMANCE_GC_MAJOR) pauseMs += entry.duration;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) ended = true;
    }
  });
  observer.observe({ type: "gc" });
  const started = performance.now();
  addon?.moderate();
  pauseMs += performance.now() - started;
  return {
    ended: () => ended,
    pauseMs: () => pauseMs,
    close: () => observer.disconnect(),
  };
}
