import { loadNativeAddon } from "./native-addon.ts";

// malloc's side of the memory the service gives back (src/runtime/memory-release.ts): glibc's malloc_trim, through
// the project's addon (native/malloc-trim, built by `npm ci`; see native/build.ts for a machine that cannot build it).

interface MallocTrimAddon {
  trim(): boolean;
  glibc: boolean;
}

function loadAddon(): MallocTrimAddon | undefined {
  const addon = loadNativeAddon<MallocTrimAddon>("malloc-trim");
  return addon?.glibc === true ? addon : undefined;
}

const addon = loadAddon();

/** Whether this process can hand malloc's free pages back (a Linux build with glibc and the addon built). */
export const nativeHeapTrimAvailable = addon !== undefined;

/**
 * Hands the operating system back the whole free pages inside malloc's heaps, which glibc keeps for good below any
 * chunk still in use; whether any were. Nothing to do (false) where it is unavailable.
 */
export function trimNativeHeap(): boolean {
  return addon?.trim() ?? false;
}
