import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../gen/health/v1/health_pb.ts";
import { runQuery } from "../src/db/client.ts";
import type { MemberStats } from "../src/db/replicas.ts";
import { loadDemoDataset } from "../src/demo/dataset.ts";
import { readSchema } from "../src/embedded/pglite.ts";
import { indexSeqnoHeader, minIndexSeqnoHeader } from "../src/service/index-freshness.ts";
import { scrapeMetrics } from "./support/metrics.ts";
import { type ClusterNode, type ReplicaCluster, replicaClusterUnsupported, startReplicaCluster } from "./support/replica-cluster.ts";
import { startTestServer, type TestServer } from "./support/server.ts";

// The service on a real primary with two streaming replicas (PostgreSQL's own binaries, see replica-cluster.ts):
// reads spread over the replicas, a replica killed under load, one whose replay is paused, and the client's
// read-your-index rule (X-Index-Seqno sent back as X-Min-Index-Seqno).

const onPglite = process.env.TEST_DATABASE === "pglite";
const unsupported = onPglite ? undefined : await replicaClusterUnsupported(["pg_stat_statements"]);
if (unsupported !== undefined) {
  if (process.env.CI) throw new Error(`CI must run the replica tests against real streaming replication, but ${unsupported}`);
  console.warn(`test/replicas.test.ts skipped: ${unsupported}`);
}
if (onPglite) console.warn("test/replicas.test.ts skipped: TEST_DATABASE=pglite, and replication needs real PostgreSQL servers (the PostgreSQL run covers it)");

/** A recorded wallet transfer of the demo dataset: a trace with transactions, messages and actions. */
const demoTxHash = "79a9866494c57ea5a8457e4c80194b665276d37ef609488beae12d2a1ef1794f";
const paths = [
  "/api/v3/masterchainInfo",
  `/api/v3/adjacentTransactions?hash=${demoTxHash}&direction=out`,
  `/api/v3/traces?tx_hash=${demoTxHash}&include_actions=true`,
];
/**
 * The service's read-only transactions (probes open none): one per statement run alone, one per request's snapshot
 * and one per statement run beside its anchor, so at least one per request that reads.
 */
const serviceStatements =
  "select coalesce(sum(calls), 0)::int as n from pg_stat_statements where lower(query) in ('begin read only', 'begin isolation level repeatable read read only')";

describe.skipIf(onPglite || unsupported !== undefined)("a primary with streaming replicas", () => {
  let cluster: ReplicaCluster;
  /** MAX_REPLICA_LAG_MS 600: a replica paused for a second is out. */
  let strict: TestServer;
  /** MAX_REPLICA_LAG_MS of ten minutes: a paused replica stays in, and only the client's header keeps it fresh. */
  let lenient: TestServer;
  let primary: ClusterNode;
  let replica1: ClusterNode;
  let replica2: ClusterNode;

  beforeAll(async () => {
    cluster = await startReplicaCluster({
      replicas: 2,
      settings: ["shared_preload_libraries = 'pg_stat_statements'"],
      load: async (admin) => {
        await admin.unsafe(await readSchema());
        await loadDemoDataset(admin);
        await admin.unsafe("create extension pg_stat_statements");
      },
    });
    primary = cluster.primary;
    [replica1, replica2] = cluster.replicas as [ClusterNode, ClusterNode];
    const env = (maxLagMs: number) => ({
      DATABASE_URL: primary.url,
      DATABASE_REPLICA_URLS: cluster.replicas.map((r) => r.url).join(","),
      DB_PROBE_INTERVAL_MS: "100",
      MAX_REPLICA_LAG_MS: String(maxLagMs),
    });
    strict = await startTestServer(primary.url, env(600));
    lenient = await startTestServer(primary.url, env(600_000));
    await until(() => serving(strict, replica1) && serving(strict, replica2) && serving(lenient, replica1) && serving(lenient, replica2), "replicas serving");
  });
  afterAll(async () => {
    await strict?.close();
    await lenient?.close();
    await cluster?.close();
  });

  const member = (server: TestServer, node: ClusterNode): MemberStats => {
    const found = server.db.memberStats().find((m) => m.url.includes(`:${node.port}/`));
    if (found === undefined) throw new Error(`no member on port ${node.port}`);
    return found;
  };
  const serving = (server: TestServer, node: ClusterNode) => member(server, node).serving;
  /** The member's series of /metrics, as Prometheus would read them. */
  const memberMetrics = async (server: TestServer, node: ClusterNode) => {
    const scrape = await scrapeMetrics(server.baseUrl);
    const label = { member: member(server, node).url };
    const value = (name: string) => {
      const samples = scrape.samples(name, label);
      return samples.length === 1 ? Number(samples[0]?.value) : undefined;
    };
    return {
      role: scrape.samples("tonquery_db_member_up", label)[0]?.labels?.role,
      types: [scrape.type("tonquery_db_member_requests_total"), scrape.type("tonquery_db_member_lag_seconds")],
      up: value("tonquery_db_member_up"),
      serving: value("tonquery_db_member_serving"),
      lagSeconds: value("tonquery_db_member_lag_seconds"),
      seqno: value("tonquery_db_member_index_seqno"),
      requests: value("tonquery_db_member_requests_total"),
      statements: value("tonquery_db_member_statements_total"),
      failovers: value("tonquery_db_member_failovers_total"),
    };
  };
  const statementsOn = async (node: ClusterNode) => Number((await cluster.query(node, serviceStatements))[0]?.n);
  const lastSeqno = (body: unknown) => (body as { last: { seqno: number } }).last.seqno;
  const masterchainInfo = async (server: TestServer, minSeqno?: number) => {
    const response = await fetch(`${server.baseUrl}/api/v3/masterchainInfo`, {
      headers: minSeqno === undefined ? {} : { [minIndexSeqnoHeader]: String(minSeqno) },
    });
    expect(response.status).toBe(200);
    return { last: lastSeqno(await response.json()), indexSeqno: Number(response.headers.get(indexSeqnoHeader)) };
  };
  /** A new masterchain block on the primary, as the indexer would add it: the newest one again, one seqno up. */
  const writeBlock = async (): Promise<number> => {
    const [row] = await cluster.admin.begin(async (tx) => {
      await tx`create temp table next_block on commit drop as select * from blocks where workchain = -1 order by seqno desc limit 1`;
      await tx`update next_block set seqno = seqno + 1`;
      return tx<{ seqno: number }[]>`insert into blocks select * from next_block returning seqno`;
    });
    return row?.seqno as number;
  };

  it("spreads requests over the replicas and leaves the primary alone", async () => {
    const before = await Promise.all([primary, replica1, replica2].map(statementsOn));
    const requestsBefore = [primary, replica1, replica2].map((n) => member(lenient, n).requests);
    const scrapedBefore = await Promise.all([primary, replica1, replica2].map((n) => memberMetrics(lenient, n)));
    const failoversBefore = [replica1, replica2].map((n) => member(lenient, n).failovers);
    // The lenient server: how lag takes a replica out is tested below. On a loaded machine a replica can drop out for
    // a moment (a probe past its bound marks it down until the next one answers): a request sent meanwhile goes to the
    // primary, as it should. Whether a replica was out is watched while each request runs (the server is in this
    // process, so the watch runs between its steps).
    const replicasServing = () => serving(lenient, replica1) && serving(lenient, replica2);
    let replicaOut = false;
    const watch = setInterval(() => {
      if (!replicasServing()) replicaOut = true;
    }, 1);
    const answers = [];
    let sentWhileReplicaOut = 0;
    try {
      for (let i = 0; i < 30; i++) {
        replicaOut = !replicasServing();
        answers.push(await lenient.rest(paths[i % paths.length] as string));
        if (replicaOut || !replicasServing()) sentWhileReplicaOut++;
      }
    } finally {
      clearInterval(watch);
    }
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);

    // What the replicas' own statistics say, not only the service's counters.
    const after = await Promise.all([primary, replica1, replica2].map(statementsOn));
    const ran = after.map((n, i) => n - (before[i] as number));
    const requests = [primary, replica1, replica2].map((n, i) => member(lenient, n).requests - (requestsBefore[i] as number));
    // The primary takes a request only while a replica is out, or when a replica failed under a request that had read
    // from it (a statement cancelled by replay: the request goes on on the primary, counted as a failover). CI runs
    // saw the primary take 1 to 3 of the 30. It runs what the service sent it and nothing else.
    const failovers = [replica1, replica2].reduce((sum, n, i) => sum + member(lenient, n).failovers - (failoversBefore[i] as number), 0);
    const routed = `requests per member ${JSON.stringify(requests)}, statements per member ${JSON.stringify(ran)}, ${sentWhileReplicaOut} requests sent while a replica was out, ${failovers} failovers`;
    expect(requests[0], routed).toBeLessThanOrEqual(sentWhileReplicaOut + failovers);
    if (requests[0] === 0) expect(ran[0], routed).toBe(0);
    // The requests sent while both replicas served are spread over the two (a third each at least: 10 of 30 on a
    // quiet run); a CI run saw 5 of 30 go to the primary while a replica was out.
    const spread = Math.floor((30 - sentWhileReplicaOut) / 3);
    expect(ran[1], routed).toBeGreaterThanOrEqual(spread);
    expect(ran[2], routed).toBeGreaterThanOrEqual(spread);
    expect(requests[1], routed).toBeGreaterThanOrEqual(spread);
    expect(requests[2], routed).toBeGreaterThanOrEqual(spread);
    expect(member(lenient, replica1).seqno).toBe(lastSeqno(answers[0]?.body));

    // The same split as /metrics publishes it, per member, once both replicas serve again (see above).
    await until(replicasServing, "replicas serving");
    const scraped = await Promise.all([primary, replica1, replica2].map((n) => memberMetrics(lenient, n)));
    expect(scraped.map((m) => m.role)).toEqual(["primary", "replica", "replica"]);
    expect(scraped[0]?.types).toEqual(["COUNTER", "GAUGE"]);
    expect(scraped.map((m, i) => (m.requests as number) - (scrapedBefore[i]?.requests as number))).toEqual(requests);
    for (const m of scraped) {
      expect(m).toMatchObject({ up: 1, serving: 1, seqno: lastSeqno(answers[0]?.body) });
      expect(m.lagSeconds).toBeGreaterThanOrEqual(0);
      expect(m.lagSeconds).toBeLessThan(5);
    }
    expect((scraped[1]?.statements as number) - (scrapedBefore[1]?.statements as number)).toBeGreaterThanOrEqual(ran[1] as number);
  });

  it("skips a killed replica without failing a request, moves the statement it ran, and sends a request that read from it to the primary", async () => {
    // A request that has read from the replica about to be killed: its next statement must not go to the other
    // replica, which may be further behind than what it read.
    let halfDone = new AbortController().signal;
    const port = (signal: AbortSignal) => runQuery(signal, strict.db.sql, "test_server_port", (tx) => tx<{ port: number }[]>`select inet_server_port() as port`);
    for (let i = 0; i < 4 && (await port(halfDone))[0]?.port !== replica1.port; i++) halfDone = new AbortController().signal;
    expect(await port(halfDone)).toEqual([{ port: replica1.port }]);
    // One statement on each replica (each goes to the member with fewer in flight), still running at the kill.
    const sleepers = [0, 1].map(() => runQuery(new AbortController().signal, strict.db.sql, "test_sleep", (tx) => tx`select pg_sleep(0.8)::text as slept`));
    // Clients keep asking across the kill, each until it has had answers after the kill was noticed; counted, not
    // timed, so that a slow machine only makes the test longer.
    let detected = false;
    const loops = Array.from({ length: 3 }, async (_, i) => {
      const statuses: number[] = [];
      for (let n = i, afterDetection = 0; afterDetection < 5; n++) {
        const noticed = detected;
        statuses.push((await strict.rest(paths[n % paths.length] as string)).status);
        if (noticed) afterDetection++;
      }
      return statuses;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const killedAt = Date.now();
    await cluster.stop(replica1, "immediate");
    await until(() => !member(strict, replica1).up, "the killed replica marked down");
    const detectedMs = Date.now() - killedAt;
    detected = true;
    const servedWhenDetected = member(strict, replica1).requests;

    expect(await port(halfDone)).toEqual([{ port: primary.port }]);

    const statuses = (await Promise.all(loops)).flat();
    expect(await Promise.all(sleepers)).toEqual([[{ slept: "" }], [{ slept: "" }]]);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const killed = member(strict, replica1);
    expect(killed.failovers).toBeGreaterThanOrEqual(1);
    expect(killed.requests).toBe(servedWhenDetected);
    expect(await memberMetrics(strict, replica1)).toMatchObject({ up: 0, serving: 0, failovers: killed.failovers, requests: killed.requests });
    console.info(`replica killed: marked down ${detectedMs} ms after pg_ctl stop -m immediate was started; ${statuses.length} requests across the kill, none failed; ${killed.failovers} statements moved`);
  });

  it("takes the restarted replica back", async () => {
    await cluster.start(replica1);
    await until(() => serving(strict, replica1), "the restarted replica serving");
    const before = member(strict, replica1).requests;
    for (let i = 0; i < 10; i++) expect((await strict.rest(paths[i % paths.length] as string)).status).toBe(200);
    expect(member(strict, replica1).requests).toBeGreaterThan(before);
  });

  describe("a replica whose replay is paused", () => {
    let oldSeqno: number;
    let newSeqno: number;
    beforeAll(async () => {
      await cluster.caughtUp();
      oldSeqno = (await masterchainInfo(strict)).last;
      await cluster.query(replica2, "select pg_wal_replay_pause()");
      newSeqno = await writeBlock();
      await cluster.caughtUp([replica1]);
    });

    it("is not used once it is over MAX_REPLICA_LAG_MS behind", async () => {
      expect(newSeqno).toBe(oldSeqno + 1);
      await until(() => !serving(strict, replica2), "the paused replica out");
      const before = member(strict, replica2).requests;
      for (let i = 0; i < 20; i++) expect((await masterchainInfo(strict)).last).toBe(newSeqno);
      expect(member(strict, replica2).requests).toBe(before);
      expect(member(strict, replica2).lagMs).toBeGreaterThan(600);
      const scraped = await memberMetrics(strict, replica2);
      expect(scraped).toMatchObject({ up: 1, serving: 0, seqno: oldSeqno });
      expect(scraped.lagSeconds).toBeGreaterThan(0.6);
      expect(await memberMetrics(strict, replica1)).toMatchObject({ serving: 1, seqno: newSeqno });
    });

    it("never takes a client that sends X-Min-Index-Seqno back to an older index", async () => {
      // Within the lenient bound the paused replica serves: without the header a client sees `last` go back and forth.
      await until(() => serving(lenient, replica1) && serving(lenient, replica2), "both replicas serving the lenient server");
      const plain = new Set<number>();
      for (let i = 0; i < 10; i++) plain.add((await masterchainInfo(lenient)).last);
      expect(plain).toEqual(new Set([oldSeqno, newSeqno]));

      // A client that sends back what it was told never goes back, once it has seen the new block.
      let told: number | undefined;
      let highest = 0;
      const seen: number[] = [];
      for (let i = 0; i < 20; i++) {
        const { last, indexSeqno } = await masterchainInfo(lenient, told);
        expect(indexSeqno).toBeGreaterThanOrEqual(last);
        expect(last).toBeGreaterThanOrEqual(highest);
        highest = last;
        told = indexSeqno;
        seen.push(last);
      }
      expect(seen).toContain(newSeqno);
      expect(seen.slice(seen.indexOf(newSeqno))).toEqual(Array(20 - seen.indexOf(newSeqno)).fill(newSeqno));

      // The same over the RPC doors, with the header in the call's metadata.
      for (const protocol of ["connect", "grpc"] as const) {
        for (let i = 0; i < 6; i++) {
          let header: string | null = null;
          const response = await lenient.client(protocol).getMasterchainInfo(
            {},
            { headers: { [minIndexSeqnoHeader]: String(newSeqno) }, onHeader: (h) => (header = h.get(indexSeqnoHeader)) },
          );
          expect(response.last?.seqno).toBe(newSeqno);
          expect(header).toBe(String(newSeqno));
        }
      }
    });

    it("sends a client asking for more than any replica is known to hold to the primary", async () => {
      const before = member(lenient, primary).requests;
      const { last } = await masterchainInfo(lenient, newSeqno + 1000);
      expect(last).toBe(newSeqno);
      expect(member(lenient, primary).requests).toBe(before + 1);
    });

    it("is used again once replay resumes", async () => {
      await cluster.query(replica2, "select pg_wal_replay_resume()");
      await cluster.caughtUp([replica2]);
      await until(() => serving(strict, replica2), "the resumed replica serving");
      const before = member(strict, replica2).requests;
      for (let i = 0; i < 10; i++) expect((await masterchainInfo(strict)).last).toBe(newSeqno);
      expect(member(strict, replica2).requests).toBeGreaterThan(before);
    });
  });

  it("serves from the primary when no replica can", async () => {
    await cluster.stop(replica1, "fast");
    await cluster.query(replica2, "select pg_wal_replay_pause()");
    const newest = await writeBlock();
    await until(() => !member(strict, replica1).up && !serving(strict, replica2), "no replica serving");
    const before = await statementsOn(primary);
    for (let i = 0; i < 10; i++) expect((await masterchainInfo(strict)).last).toBe(newest);
    expect(await statementsOn(primary)).toBeGreaterThanOrEqual(before + 10);
    expect(await strict.rest("/healthz")).toMatchObject({ status: 200 });
    await cluster.query(replica2, "select pg_wal_replay_resume()");
  });

  it("reports health for the cluster, not the primary: SERVING while a replica serves, NOT_SERVING when no member can", async () => {
    // replica1 is stopped (previous test); replica2 resumed replay and catches up.
    await cluster.caughtUp([replica2]);
    await until(() => serving(strict, replica2), "replica2 serving");
    const health = createClient(Health, strict.transport("grpc"));
    const stop = new AbortController();
    const statuses: ServingStatus[] = [];
    const stream = (async () => {
      for await (const { status } of health.watch({ service: "" }, { signal: stop.signal })) statuses.push(status);
    })().catch(() => {});
    try {
      await until(() => statuses.length > 0, "the first Watch status");
      expect(statuses).toEqual([ServingStatus.SERVING]);

      await cluster.stop(primary, "fast");
      await until(() => !member(strict, primary).up, "the primary marked down");
      // A probe or two later the replica still serves: the primary's outage alone changes nothing a client sees.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(serving(strict, replica2)).toBe(true);
      expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
      expect(await strict.rest("/readyz")).toMatchObject({ status: 200 });
      expect((await strict.rest("/api/v3/masterchainInfo")).status).toBe(200);
      expect(statuses).toEqual([ServingStatus.SERVING]);

      await cluster.stop(replica2, "fast");
      await until(() => statuses.at(-1) === ServingStatus.NOT_SERVING, "Watch NOT_SERVING with no member left");
      expect((await health.check({ service: "" })).status).toBe(ServingStatus.NOT_SERVING);

      await cluster.start(primary);
      await until(() => statuses.at(-1) === ServingStatus.SERVING, "Watch SERVING again with the primary back");
      expect(statuses).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.SERVING]);
    } finally {
      stop.abort();
      await stream;
    }
  });
});

/** Polls `condition` every 20 ms; fails after 15 s, naming what it waited for. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
