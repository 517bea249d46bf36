import { describe, expect, it } from "vitest";
import { IdleMemoryRelease, releaseFreedHeapPages } from "../src/runtime/idle-memory.ts";

/** A release whose clock and collection are the test's: when it runs is decided by the requests alone. */
function idleRelease(idleMs: number) {
  let ms = 0;
  const releases: number[] = [];
  const recorded: { seconds: number; bytes: number }[] = [];
  const release = new IdleMemoryRelease({
    idleMs,
    now: () => ms,
    release: () => {
      releases.push(ms);
      ms += 40;
    },
    recorder: { memoryReleased: (seconds, bytes) => recorded.push({ seconds, bytes }) },
  });
  return {
    release,
    releases,
    recorded,
    advance: (by: number) => {
      ms += by;
      release.check();
    },
  };
}

describe("IdleMemoryRelease", () => {
  it("releases once after the idle time that follows some work, never while a request is in flight", () => {
    const idle = idleRelease(1000);
    // A service that has served nothing has nothing to give back.
    idle.advance(5000);
    expect(idle.releases).toEqual([]);

    idle.release.started();
    idle.advance(3000);
    // In flight for longer than the idle time: not idle.
    expect(idle.releases).toEqual([]);
    idle.release.ended();
    idle.advance(999);
    expect(idle.releases).toEqual([]);
    idle.advance(1);
    expect(idle.releases).toEqual([9000]);
    expect(idle.recorded).toEqual([{ seconds: 0.04, bytes: expect.any(Number) }]);

    // Idle on: nothing new to give back.
    idle.advance(10_000);
    expect(idle.releases).toEqual([9000]);

    // A request that ends restarts the wait: two overlapping ones, the service idle only once both have ended.
    idle.release.started();
    idle.release.started();
    idle.release.ended();
    idle.advance(2000);
    expect(idle.releases).toEqual([9000]);
    idle.release.ended();
    idle.advance(1000);
    expect(idle.releases).toEqual([9000, 22_040]);
  });

  it("never releases when turned off", () => {
    const idle = idleRelease(0);
    idle.release.started();
    idle.release.ended();
    idle.advance(60_000);
    expect(idle.releases).toEqual([]);
  });

  it("gives the operating system back the pages a burst left empty, without exposing gc to the service", () => {
    // Young garbage with a window of it live, as a burst of pages leaves behind: V8 grows its heap for it and keeps
    // the emptied pages after collecting them.
    let window: object[][] = [];
    for (let i = 0; i < 150; i++) {
      window.push(Array.from({ length: 20_000 }, (_, j) => ({ text: `value ${i} ${j}`, j })));
      if (window.length > 20) window.shift();
    }
    window = [];
    const before = process.memoryUsage.rss();
    releaseFreedHeapPages();
    const after = process.memoryUsage.rss();
    // The burst grew the heap by well over 100 MB; most of it goes back.
    expect(before - after).toBeGreaterThan(50 * 1024 * 1024);
    expect("gc" in globalThis).toBe(false);
    expect(window).toEqual([]);
  });
});
