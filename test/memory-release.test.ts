import { describe, expect, it } from "vitest";
import type { HeapCollection } from "../src/runtime/heap-pressure.ts";
import { MemoryRelease, releaseFreedHeapPages } from "../src/runtime/memory-release.ts";

/**
 * A release whose clock, resident set and collection are the test's: when it runs is decided by the requests and
 * the resident set alone. A collection takes `pauseMs` and leaves `residentAfter` bytes.
 */
function idleRelease(idleMs: number, pressure?: { softLimitBytes: number; pauseMs: number; residentAfter: number }) {
  let ms = 0;
  let resident = 0;
  const pauseMs = pressure?.pauseMs ?? 40;
  const releases: number[] = [];
  const recorded: { trigger: string; seconds: number; bytes: number }[] = [];
  const release = new MemoryRelease({
    idleMs,
    softLimitBytes: pressure?.softLimitBytes,
    now: () => ms,
    residentBytes: () => resident,
    release: () => {
      releases.push(ms);
      ms += pauseMs;
      if (pressure !== undefined) resident = pressure.residentAfter;
    },
    recorder: { memoryReleased: (trigger, seconds, bytes) => recorded.push({ trigger, seconds, bytes }) },
  });
  return {
    release,
    releases,
    recorded,
    setResident: (bytes: number) => {
      resident = bytes;
    },
    advance: (by: number) => {
      ms += by;
      release.check();
    },
  };
}

const mb = 1024 * 1024;

/**
 * A release past a 200 MB soft limit whose clock and resident set the test moves (`at`, from 0 ms and 300 MB), with
 * its collection, trim and pressure signal noted in `steps` as they happen; `checkAt` moves the clock and checks.
 */
function steppedRelease(options: {
  idleMs: number;
  collect: (at: { ms: number; resident: number }) => void;
  trim: (at: { ms: number; resident: number }) => void;
  signalPressure?: () => HeapCollection;
}) {
  const at = { ms: 0, resident: 300 * mb };
  const steps: string[] = [];
  const recorded: { trigger: string; seconds: number; bytes: number }[] = [];
  const { signalPressure } = options;
  const release = new MemoryRelease({
    idleMs: options.idleMs,
    softLimitBytes: 200 * mb,
    now: () => at.ms,
    residentBytes: () => at.resident,
    release: () => {
      steps.push(`collect at ${at.ms}`);
      options.collect(at);
    },
    trim: () => {
      steps.push(`trim at ${at.ms}`);
      options.trim(at);
    },
    signalPressure:
      signalPressure &&
      (() => {
        steps.push(`signal at ${at.ms}`);
        return signalPressure();
      }),
    recorder: { memoryReleased: (trigger, seconds, bytes) => recorded.push({ trigger, seconds, bytes }) },
  });
  const checkAt = (ms: number) => {
    at.ms = ms;
    release.check();
  };
  return { at, steps, recorded, checkAt, release };
}

describe("MemoryRelease", () => {
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
    expect(idle.recorded).toEqual([{ trigger: "idle", seconds: 0.04, bytes: expect.any(Number) }]);

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

  it("releases under load once the resident set passes the soft limit, no sooner after the last than a hundred times its pause", () => {
    const idle = idleRelease(10_000, { softLimitBytes: 200 * mb, pauseMs: 50, residentAfter: 150 * mb });
    idle.release.started();
    idle.setResident(200 * mb);
    idle.advance(250);
    // At the limit is not past it.
    expect(idle.releases).toEqual([]);
    idle.setResident(230 * mb);
    idle.advance(250);
    expect(idle.releases).toEqual([500]);
    expect(idle.recorded).toEqual([{ trigger: "pressure", seconds: 0.05, bytes: 80 * mb }]);

    // Past the limit again at once: the next release waits 100 times the 50 ms pause, though the request is still in flight.
    idle.setResident(260 * mb);
    idle.advance(4900);
    expect(idle.releases).toEqual([500]);
    idle.advance(100);
    expect(idle.releases).toEqual([500, 5550]);

    // A pause shorter than 10 ms still leaves a second between two releases.
    const quick = idleRelease(0, { softLimitBytes: 200 * mb, pauseMs: 1, residentAfter: 150 * mb });
    quick.release.started();
    quick.setResident(250 * mb);
    quick.advance(250);
    quick.setResident(250 * mb);
    quick.advance(999);
    quick.advance(1);
    expect(quick.releases).toEqual([250, 1251]);
  });

  it("waits twice as long after each release under pressure that gave back less than a tenth of the limit, up to 64 times", () => {
    // Live memory past the limit (an embedded database's): each release gives back 10 MB of 300.
    const live = idleRelease(0, { softLimitBytes: 200 * mb, pauseMs: 10, residentAfter: 290 * mb });
    live.release.started();
    while (live.releases.length < 9) {
      live.setResident(300 * mb);
      live.advance(250);
    }
    const gaps = live.releases.slice(1).map((at, i) => at - (live.releases[i] as number));
    // Each wait a whole number of checks past 1 s (the pause is 10 ms), doubled after each unproductive release, 64 s at most.
    expect(gaps.map((gap) => Math.ceil(gap / 1000))).toEqual([3, 5, 9, 17, 33, 65, 65, 65]);

    // A release that gives back a tenth of the limit or more puts the wait back to one second.
    const productive = idleRelease(0, { softLimitBytes: 200 * mb, pauseMs: 10, residentAfter: 150 * mb });
    productive.release.started();
    for (let i = 0; i < 20; i++) {
      productive.setResident(300 * mb);
      productive.advance(250);
    }
    // (a release at the first check a second past the last one's end: each pause is 10 ms)
    expect(productive.releases).toEqual([250, 1260, 2270, 3280, 4290]);
  });

  it("does not release under pressure when nothing has run since the last release, nor when turned off", () => {
    const idle = idleRelease(0, { softLimitBytes: 200 * mb, pauseMs: 5, residentAfter: 300 * mb });
    idle.release.started();
    idle.release.ended();
    idle.setResident(300 * mb);
    idle.advance(250);
    expect(idle.releases).toEqual([250]);
    // Still 300 MB, but idle with nothing served since: what is resident is what the process needs.
    idle.advance(60_000);
    expect(idle.releases).toEqual([250]);

    const off = idleRelease(0, { softLimitBytes: 0, pauseMs: 5, residentAfter: 0 });
    off.release.started();
    off.setResident(1024 * mb);
    off.advance(60_000);
    expect(off.releases).toEqual([]);
  });

  it("trims malloc's heaps at the check after the collection, and records the two as one release", () => {
    const { at, steps, recorded, checkAt, release } = steppedRelease({
      idleMs: 0,
      collect: (state) => {
        state.ms += 5;
        state.resident = 250 * mb;
      },
      trim: (state) => {
        state.ms += 1;
        state.resident = 180 * mb;
      },
    });
    release.started();
    checkAt(250);
    // The collection alone: the trim waits for the collector's own thread to free the dead Buffers.
    expect(steps).toEqual(["collect at 250"]);
    expect(recorded).toEqual([]);
    checkAt(505);
    expect(steps).toEqual(["collect at 250", "trim at 505"]);
    // Both pauses, and all they gave back (productive: the next may come a second after the trim).
    expect(recorded).toEqual([{ trigger: "pressure", seconds: 0.006, bytes: 120 * mb }]);
    at.resident = 300 * mb;
    for (let ms = 750; ms < 1506; ms += 250) checkAt(ms);
    expect(steps).toHaveLength(2);
    checkAt(1506);
    expect(steps).toEqual(["collect at 250", "trim at 505", "collect at 1506"]);
  });

  it("under pressure, signals V8 and follows the collection it sets going to its end, then trims; idle, collects at once", () => {
    let collectionEnded = false;
    let closed = 0;
    const { at, steps, recorded, checkAt, release } = steppedRelease({
      idleMs: 10_000,
      collect: (state) => {
        state.ms += 50;
        state.resident = 150 * mb;
      },
      signalPressure: () => ({ ended: () => collectionEnded, pauseMs: () => (collectionEnded ? 30 : 4), close: () => void closed++ }),
      trim: (state) => {
        state.resident -= 20 * mb;
      },
    });
    release.started();
    checkAt(250);
    // Under load: the signal, and no collection in the call.
    expect(steps).toEqual(["signal at 250"]);
    checkAt(500);
    checkAt(750);
    // V8 is still marking: nothing to trim yet, nothing recorded, and no second signal though still past the limit.
    expect(steps).toEqual(["signal at 250"]);
    expect(recorded).toEqual([]);
    collectionEnded = true;
    at.resident = 180 * mb;
    checkAt(1000);
    expect(closed).toBe(1);
    // The trim at the check after the one that saw the collection end, for the Buffers freed after it.
    expect(steps).toEqual(["signal at 250"]);
    checkAt(1250);
    expect(steps).toEqual(["signal at 250", "trim at 1250"]);
    // One release: the collector's pauses for it, and all that the collection and the trim gave back.
    expect(recorded).toEqual([{ trigger: "pressure", seconds: 0.03, bytes: 140 * mb }]);

    // A signal V8 does not act on (marking off, say) is recorded as it stands after five seconds.
    collectionEnded = false;
    at.resident = 300 * mb;
    checkAt(5000);
    expect(steps.at(-1)).toBe("signal at 5000");
    checkAt(9750);
    expect(closed).toBe(1);
    checkAt(10_000);
    expect(closed).toBe(2);
    checkAt(10_250);

    // Idle: the collection done within the call.
    release.ended();
    checkAt(30_000);
    checkAt(30_250);
    expect(steps.slice(-4)).toEqual(["signal at 5000", "trim at 10250", "collect at 30000", "trim at 30250"]);
    expect(recorded.map((r) => r.trigger)).toEqual(["pressure", "pressure", "idle"]);
    release.close();
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
