import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** What the hub reports when scraped. */
export interface HubState {
  open: Iterable<{ door: string }>;
  /** Masterchain blocks committed in the index beyond the hub's position (gaps, reads under way). */
  indexLag: number;
  /** Blocks between the hub's position and the slowest stream's. */
  streamLag: number;
}

const doors = ["rpc", "sse", "ws"];

/** Live streams' series on /metrics (see README "Live streams"). */
export class StreamMetrics {
  readonly #sent: Counter<"door">;
  readonly #opened: Counter<"door">;
  readonly #slow: Counter<"door">;
  readonly #gaps: Counter;
  readonly #actionsTimedOut: Counter;
  readonly #polls: Counter;
  readonly #fanOut: Histogram;
  readonly #handOutDelay: Histogram;
  #state: (() => HubState) | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const metrics = this;
    new Gauge({
      name: "tonquery_streams_open",
      help: "Live streams open now, by door (rpc: StreamTraces over Connect, gRPC and gRPC-web; sse; ws).",
      labelNames: ["door"],
      registers,
      collect() {
        const counts = new Map(doors.map((door) => [door, 0]));
        for (const stream of metrics.#state?.().open ?? []) counts.set(stream.door, (counts.get(stream.door) ?? 0) + 1);
        for (const [door, count] of counts) this.set({ door }, count);
      },
    });
    new Gauge({
      name: "tonquery_stream_index_lag_blocks",
      help: "Masterchain blocks committed in the index beyond the position the streams have been handed (a gap being waited for, a block being read).",
      registers,
      collect() {
        this.set(metrics.#state?.().indexLag ?? 0);
      },
    });
    new Gauge({
      name: "tonquery_stream_max_lag_blocks",
      help: "Blocks between the streams' shared position and the slowest open stream's (streams catching up from an old position, slow clients).",
      registers,
      collect() {
        this.set(metrics.#state?.().streamLag ?? 0);
      },
    });
    this.#opened = new Counter({ name: "tonquery_streams_opened_total", help: "Live streams opened, by door.", labelNames: ["door"], registers });
    this.#sent = new Counter({ name: "tonquery_stream_messages_sent_total", help: "Stream messages handed to clients (a block's traces, or a heartbeat), by door.", labelNames: ["door"], registers });
    this.#slow = new Counter({
      name: "tonquery_stream_slow_consumer_ends_total",
      help: "Streams ended because their client read slower than the index moved (STREAM_BUFFER_BLOCKS blocks waiting), by door.",
      labelNames: ["door"],
      registers,
    });
    this.#gaps = new Counter({ name: "tonquery_stream_gaps_skipped_total", help: "Masterchain seqnos the streams moved past after STREAM_GAP_WAIT_MS without the block appearing.", registers });
    this.#actionsTimedOut = new Counter({
      name: "tonquery_stream_actions_wait_expired_total",
      help: "Traces sent without actions because the classifier had not classified them within STREAM_ACTIONS_WAIT_MS.",
      registers,
    });
    this.#polls = new Counter({ name: "tonquery_stream_polls_total", help: "Polls of the index for new masterchain blocks (one per interval per instance while streams are open).", registers });
    this.#fanOut = new Histogram({
      name: "tonquery_stream_fan_out_seconds",
      help: "CPU time of handing one block to every live stream, once it is read.",
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
      registers,
    });
    this.#handOutDelay = new Histogram({
      name: "tonquery_stream_hand_out_delay_seconds",
      help: "From the poll that first saw a masterchain block committed to its hand-out to the live streams: waiting for earlier blocks (out-of-order commits), for the classifier, and the block's reads.",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
  }

  /** From the poll that first saw a block committed to its hand-out to the live streams. */
  handedOut(seconds: number): void {
    this.#handOutDelay.observe(seconds);
  }

  watch(state: () => HubState): void {
    this.#state = state;
  }
  opened(door: string): void {
    this.#opened.inc({ door });
  }
  closed(_door: string): void {}
  sent(door: string): void {
    this.#sent.inc({ door });
  }
  slowConsumer(door: string): void {
    this.#slow.inc({ door });
  }
  gapSkipped(seqnos: number): void {
    this.#gaps.inc(seqnos);
  }
  actionsTimedOut(traces: number): void {
    this.#actionsTimedOut.inc(traces);
  }
  polled(): void {
    this.#polls.inc();
  }
  fannedOut(ms: number): void {
    this.#fanOut.observe(ms / 1000);
  }
}
