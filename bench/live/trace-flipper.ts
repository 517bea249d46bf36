import postgres from "postgres";

// A writer that moves one trace back and forth between two states the index really has, each its own commit, as
// ton-index-worker's batches do: "complete, N transactions" and "pending, N-1 transactions" (its last transaction
// not yet written, the message to it still on its way). A reader that reads the trace from one snapshot answers with
// one of the two, every time; any other answer mixes two commits (issue 22's exact check).

export interface FlippedState {
  state: "complete" | "pending";
  /** Hashes of the trace's transactions in this state, sorted. */
  transactions: string[];
}

export interface TraceFlipper {
  traceId: string;
  complete: FlippedState;
  pending: FlippedState;
  /** Commits so far. */
  flips(): number;
  /** Stops after the commit under way and leaves the trace complete; resolves to the number of commits. */
  stop(): Promise<number>;
}

const quiet = { onnotice: () => {} };

/**
 * Flips a complete trace of 3 to 8 transactions of the database at `url` every `intervalMs` (0: back to back). The
 * trace's last transaction (by lt: nothing in the trace comes after it) is the one taken away and put back.
 */
export async function startTraceFlipper(url: string, options: { intervalMs: number }): Promise<TraceFlipper> {
  const sql = postgres(url, { max: 1, ...quiet });
  // Read in a transaction, as every statement here: see follow.ts on PGlite's shared session.
  const found = await sql.begin("read only", async (tx) => {
    const [trace] = await tx<{ trace_id: string; nodes: number; edges: string; end_lt: string; end_utime: number }[]>`
      select trace_id, nodes_::int as nodes, edges_::text as edges, end_lt::text, end_utime from traces
      where state = 'complete' and classification_state = 'ok' and nodes_ between 3 and 8 and pending_edges_ = 0
      order by nodes_ desc, trace_id limit 1`;
    if (trace === undefined) return undefined;
    // Rows kept as JSON text: parsed in JavaScript, their int64 shards would lose digits.
    const transactions = await tx<{ hash: string; lt: string; row: string }[]>`
      select hash, lt::text, to_jsonb(T)::text as row from transactions T where trace_id = ${trace.trace_id} order by lt desc, hash desc`;
    const [leaf, before] = transactions as unknown as [(typeof transactions)[0], (typeof transactions)[0]];
    const [messages] = await tx<{ rows: string }[]>`select jsonb_agg(to_jsonb(M))::text as rows from messages M where tx_hash = ${leaf.hash} and tx_lt = ${leaf.lt}`;
    const [previous] = await tx<{ end_utime: number }[]>`select now as end_utime from transactions where hash = ${before.hash} and lt = ${before.lt}`;
    return { trace, transactions, leaf, before, messages, previous };
  });
  if (found === undefined) {
    await sql.end();
    throw new Error("no complete trace of 3 to 8 transactions to flip");
  }
  const { trace, transactions, leaf, before, messages, previous } = found;
  const hashes = transactions.map((t) => t.hash);

  const toPending = () =>
    sql.begin("read write", async (tx) => {
      await tx`delete from messages where tx_hash = ${leaf.hash} and tx_lt = ${leaf.lt}`;
      await tx`delete from transactions where hash = ${leaf.hash} and lt = ${leaf.lt}`;
      await tx`
        update traces set state = 'pending', nodes_ = ${trace.nodes - 1}, edges_ = ${Number(trace.edges) - 1}, pending_edges_ = 1,
          end_lt = ${before.lt}, end_utime = ${previous?.end_utime ?? trace.end_utime}
        where trace_id = ${trace.trace_id}`;
    });
  const toComplete = () =>
    sql.begin("read write", async (tx) => {
      await tx`insert into transactions select * from jsonb_populate_record(null::transactions, ${leaf.row}::text::jsonb)`;
      if (messages?.rows !== undefined && messages.rows !== null) {
        await tx`insert into messages select * from jsonb_populate_recordset(null::messages, ${messages.rows}::text::jsonb)`;
      }
      await tx`
        update traces set state = 'complete', nodes_ = ${trace.nodes}, edges_ = ${trace.edges}, pending_edges_ = 0,
          end_lt = ${trace.end_lt}, end_utime = ${trace.end_utime}
        where trace_id = ${trace.trace_id}`;
    });

  let flips = 0;
  let stopping = false;
  const loop = (async () => {
    try {
      while (!stopping) {
        await (flips % 2 === 0 ? toPending() : toComplete());
        flips++;
        if (options.intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
      }
      if (flips % 2 === 1) await toComplete();
    } finally {
      await sql.end({ timeout: 5 });
    }
  })();
  loop.catch(() => {});

  return {
    traceId: trace.trace_id,
    complete: { state: "complete", transactions: [...hashes].sort() },
    pending: { state: "pending", transactions: hashes.filter((h) => h !== leaf.hash).sort() },
    flips: () => flips,
    stop: async () => {
      stopping = true;
      await loop;
      return flips;
    },
  };
}
