import { setTimeout as sleep } from "node:timers/promises";

/** Polls `read` until it gives `expected` (compared as JSON), or 5 s pass; returns what it gave last. */
export async function until<T>(read: () => Promise<T>, expected: T): Promise<T> {
  const deadline = Date.now() + 5000;
  let value = await read();
  while (JSON.stringify(value) !== JSON.stringify(expected) && Date.now() < deadline) {
    await sleep(20);
    value = await read();
  }
  return value;
}

/** Polls `read` until two readings 200 ms apart agree: the server has stopped moving. */
export async function settled(read: () => Promise<number>): Promise<number> {
  let last = await read();
  for (;;) {
    await sleep(200);
    const now = await read();
    if (now === last) return now;
    last = now;
  }
}
