import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { startOutageProxy } from "./support/proxy.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// The network between the service and PostgreSQL misbehaving under load, in the sequences issue 23 saw wedge the
// service until a restart: a path that black-holes (accepts connections, moves no bytes) and then resets every
// connection and refuses new ones before it comes back, with the connections opened during the black hole coming
// alive only on the return, as a proxy in front of PostgreSQL (HAProxy) behaves. Whatever the sequence, once the
// database is back the service serves again within seconds, and nothing it holds per request (a pooled connection's
// permit, an admission slot, a request in flight) outlives the requests.

const onRealPostgres = process.env.TEST_DATABASE !== "pglite";

/** Short deadlines, so that a phase of a second or two outlasts them as the 30 s outlasted the defaults. */
const timeouts = {
  REQUEST_TIMEOUT_MS: "1500",
  STATEMENT_TIMEOUT_MS: "700",
  DB_CONNECT_TIMEOUT_MS: "400",
  DB_PROBE_INTERVAL_MS: "200",
  DB_POOL_SIZE: "10",
  MAX_CONCURRENT_REQUESTS: "8",
};
const requestTimeoutMs = Number(timeouts.REQUEST_TIMEOUT_MS);
const statementTimeoutMs = Number(timeouts.STATEMENT_TIMEOUT_MS);
/** Past its deadline, an answer's time to reach the client on a loaded 2-core machine. */
const answerGraceMs = 1500;
/** How soon after the database's return the service must serve: a few probes and a request deadline, with room to spare. */
const recoveryBoundMs = 4000;

const demoTxHash = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";
const demoAccount = "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH";
/** A mix of the service's requests: cheap lookups and pages of traces, which take more admission slots. */
const paths = [
  "/api/v3/masterchainInfo",
  `/api/v3/adjacentTransactions?hash=${demoTxHash}&direction=out`,
  `/api/v3/traces?tx_hash=${demoTxHash}&include_actions=true`,
  `/api/v3/traces?account=${demoAccount}&limit=100`,
  `/api/v3/traces?account=${demoAccount}&limit=1000`,
];

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await loadDemoDataset(db.admin);
});
afterAll(async () => {
  await db?.drop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(onRealPostgres)("the network to the database failing under load", () => {
  interface Phase {
    what: "blackhole" | "blackhole then drop" | "reset and refuse";
    ms: number;
  }

  /**
   * Runs `phases` under load on a service of its own behind a relay of its own, brings the database back, and
   * checks that the service recovers whole. Every step is bounded, so that a wedged service fails the assertions
   * rather than the test's timeout.
   */
  const survives = async (phases: Phase[]) => {
    const proxy = await startOutageProxy(db.url);
    const server = await startTestServer(proxy.url, timeouts);
    const load = startLoad(server, 12);
    try {
      expect(await untilServing(server)).toBeLessThan(recoveryBoundMs);
      load.start();
      await sleep(500);
      for (const phase of phases) {
        if (phase.what === "blackhole") await proxy.blackhole({ onReturn: "resume" });
        else if (phase.what === "blackhole then drop") await proxy.blackhole({ onReturn: "drop" });
        else await proxy.resetAndRefuse();
        await sleep(phase.ms);
      }
      await proxy.restore();
      // Served again within seconds of the return, under the same load.
      expect(await untilServing(server)).toBeLessThan(recoveryBoundMs);
      await sleep(500);
      const statuses = await load.stop();
      // The load saw the outage (so the sequence was staged), and every request it sent was answered by its deadline.
      expect(statuses.filter((s) => s !== 200).length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === unanswered).length).toBe(0);
      // A burst after the load: the whole pool and every slot are there to serve it.
      const burst = await Promise.all(Array.from({ length: 16 }, (_, i) => getAnswer(server, paths[i % paths.length] as string)));
      expect(burst.map(({ status, body }) => (status === 200 ? 200 : `${status} ${body}`))).toEqual(burst.map(() => 200));
      // Nothing the requests held outlives them.
      expect(await heldOnceSettled(server)).toEqual(nothingHeld);
    } finally {
      await load.stop();
      await server.close();
      await proxy.close();
    }
  };

  it("recovers from a black hole, then resets and refusals, then the return of connections opened meanwhile", async () => {
    await survives([
      { what: "blackhole", ms: 2000 },
      { what: "reset and refuse", ms: 800 },
    ]);
  });

  it("recovers from a black hole whose held connections all come alive on the return", async () => {
    await survives([{ what: "blackhole", ms: 2000 }]);
  });

  it("recovers from resets and refusals, then a black hole, then the return", async () => {
    await survives([
      { what: "reset and refuse", ms: 800 },
      { what: "blackhole", ms: 2000 },
    ]);
  });

  it("recovers from the sequence twice over", async () => {
    await survives([
      { what: "blackhole", ms: 1500 },
      { what: "reset and refuse", ms: 400 },
      { what: "blackhole then drop", ms: 1500 },
      { what: "reset and refuse", ms: 400 },
    ]);
  });
});

/** What get() reports for a request the service did not answer by its deadline (plus a grace for the answer's way). */
const unanswered = 0;

/** GET bounded on the client's side a little past the service's deadline: its status (`unanswered` past it). */
async function get(server: TestServer, path: string): Promise<number> {
  return (await getAnswer(server, path)).status;
}

/** get(), with the body: an assertion on a burst says why a request failed (`503 {"error":...}`). */
async function getAnswer(server: TestServer, path: string): Promise<{ status: number; body: string }> {
  try {
    const response = await fetch(`${server.baseUrl}${path}`, { signal: AbortSignal.timeout(requestTimeoutMs + answerGraceMs) });
    return { status: response.status, body: await response.text() };
  } catch {
    return { status: unanswered, body: "" };
  }
}

/** Clients sending the mix of requests one after another from start() until stop(), which gives every status they got. */
function startLoad(server: TestServer, clients: number) {
  let stopped = false;
  const statuses: number[] = [];
  let running: Promise<void>[] = [];
  return {
    start: () => {
      running = Array.from({ length: clients }, async (_, client) => {
        for (let i = client; !stopped; i++) {
          const status = await get(server, paths[i % paths.length] as string);
          statuses.push(status);
          // As a client backs off after a failure: a refusal comes at once, and a tight loop of them would only
          // measure the test's own CPU.
          if (status !== 200) await sleep(20);
        }
      });
    },
    stop: async () => {
      stopped = true;
      await Promise.all(running);
      return statuses;
    },
  };
}

/** Polls the mix until every path answers 200 at once (for at most a little past recoveryBoundMs); the time that took. */
async function untilServing(server: TestServer): Promise<number> {
  const started = Date.now();
  for (;;) {
    const statuses = await Promise.all(paths.map((path) => get(server, path)));
    if (statuses.every((s) => s === 200) || Date.now() - started > recoveryBoundMs) return Date.now() - started;
    await sleep(100);
  }
}

/** What the service holds for requests, per /metrics: all zero once no request is in flight. */
async function held(server: TestServer) {
  const scrape = await scrapeMetrics(server.baseUrl);
  const sum = (name: string) => scrape.samples(name).reduce((total, sample) => total + Number(sample.value), 0);
  return {
    connectionsInUse: sum("tonquery_db_connections_in_use"),
    statementsWaiting: sum("tonquery_db_statements_waiting"),
    admissionSlotsInUse: sum("tonquery_admission_slots_in_use"),
    admissionQueued: sum("tonquery_admission_queue_length"),
    requestsInFlight: sum("tonquery_db_member_requests_in_flight"),
  };
}
const nothingHeld = { connectionsInUse: 0, statementsWaiting: 0, admissionSlotsInUse: 0, admissionQueued: 0, requestsInFlight: 0 };

/** What is held once the work of requests that have ended has had the time to finish (a statement runs to its timeout). */
async function heldOnceSettled(server: TestServer) {
  const until = Date.now() + statementTimeoutMs + requestTimeoutMs;
  let state = await held(server);
  while (JSON.stringify(state) !== JSON.stringify(nothingHeld) && Date.now() < until) {
    await sleep(100);
    state = await held(server);
  }
  return state;
}
