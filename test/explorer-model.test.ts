import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { StreamTracesResponseSchema, type StreamTracesRequestSchema, type StreamTracesResponse } from "../gen/tonquery/v1/stream_pb.ts";
import { TraceActionSchema, TraceNodeSchema, TraceSchema, type Trace } from "../gen/tonquery/v1/trace_pb.ts";
import { MessageSchema, TransactionSchema, type Message } from "../gen/tonquery/v1/transaction_pb.ts";
import { Names, shortAddress, units } from "../explorer/src/format.ts";
import { type LiveState, streamedTraces, withArrivals } from "../explorer/src/live.ts";
import { classifyQuery } from "../explorer/src/query.ts";
import { searchOfView, standardHash, urlHash, viewOfSearch, type View } from "../explorer/src/route.ts";
import { actionPhrase, phraseText } from "../explorer/src/sentences.ts";
import { buildTree, collapse, initialShown, layout, reveal, showMore, shownAncestor } from "../explorer/src/tree.ts";

// The explorer's rules that need no browser: reading the search box, the URL of each view, amounts and sentences,
// the tree's shown parts and layout, and how traces that arrive live join the account's list.

const hash = (n: number) => Buffer.alloc(32, n).toString("base64");
const address = (n: number) => `0:${Buffer.alloc(32, n).toString("hex").toUpperCase()}`;

describe("the search box", () => {
  it("takes every form of a hash and an address, and explains anything else", () => {
    const bytes = Buffer.alloc(32, 7);
    for (const form of [bytes.toString("hex"), `0x${bytes.toString("hex").toUpperCase()}`, bytes.toString("base64"), bytes.toString("base64url"), ` ${bytes.toString("hex")} `]) {
      expect(classifyQuery(form), form).toEqual({ kind: "hash", hash: form.trim() });
    }
    for (const form of [address(3), address(3).toLowerCase(), "-1:" + "3".repeat(64), "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH", "EQCvZd3aFy5fclovN+avmZbLFzuIM2giDKnQwG3GrTB62ulR"]) {
      expect(classifyQuery(form), form).toEqual({ kind: "account", address: form });
    }
    for (const form of ["", "abc", "0x1234", bytes.toString("hex").slice(1), "1:2:3"]) expect(classifyQuery(form).kind, form).toBe("invalid");
  });
});

describe("the URL of a view", () => {
  it("opens the same view, with hashes in base64url and selections compared in the API's form", () => {
    const views: View[] = [
      { kind: "home" },
      { kind: "search", query: "ab cd" },
      { kind: "trace", traceId: hash(1) },
      { kind: "trace", traceId: hash(1), selection: { kind: "tx", hash: hash(2) } },
      { kind: "trace", traceId: hash(1), selection: { kind: "msg", hash: hash(3) } },
      { kind: "account", account: "UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH" },
      { kind: "account", account: address(4), pageToken: "token+/=" },
    ];
    for (const view of views) {
      const search = searchOfView(view);
      // A trace's link needs no escapes: its hashes are base64url.
      if (view.kind === "trace") expect(search, JSON.stringify(view)).not.toMatch(/%/);
      const back = viewOfSearch(search);
      expect(back.kind === "trace" ? { ...back, traceId: standardHash(back.traceId) } : back).toEqual(view);
    }
    expect(searchOfView({ kind: "trace", traceId: hash(255) })).toBe(`?trace=${urlHash(hash(255))}`);
    expect(urlHash(hash(255))).toBe("_".repeat(42) + "8");
    expect(standardHash(Buffer.alloc(32, 255).toString("hex"))).toBe(hash(255));
    expect(standardHash("nonsense")).toBeUndefined();
  });
});

describe("amounts, names and sentences", () => {
  it("write amounts in whole units, and a jetton's with its symbol and decimals", () => {
    expect([units("1500000000", 9), units("0", 9), units("1234567000000000", 9), units("-5", 2), units("9000000", 6)]).toEqual(["1.5", "0", "1,234,567", "-0.05", "9"]);
    expect(shortAddress("UQCgf9xAc0HumzY_N2Lgk5oQk3_pL7N04GT0KaP-H7upN-qH")).toBe("UQCg…N-qH");
    const names = new Names(
      { [address(1)]: { userFriendly: "UQAAAA", domain: "alice.ton" } as never, [address(2)]: { userFriendly: "EQBBBBBBBBBBBBBB" } as never },
      { [address(9)]: { isIndexed: true, tokenInfo: [{ type: "jetton_masters", symbol: "USD₮", extra: { decimals: "6" } }] } as never },
    );
    const transfer = create(TraceActionSchema, {
      type: "jetton_transfer",
      success: true,
      details: { asset: address(9), sender: address(1), receiver: address(2), amount: "10000000", comment: "thanks" },
    });
    const phrase = actionPhrase(transfer, names);
    expect(phraseText(phrase, names)).toBe("jetton transfer 10 USD₮ from alice.ton to EQBB…BBBB “thanks”");
    expect(phrase.filter((part) => typeof part !== "string")).toEqual([{ address: address(1) }, { address: address(2) }]);
    const unknown = create(TraceActionSchema, { type: "some_new_action", success: false, accounts: [address(1), address(2)] });
    expect(phraseText(actionPhrase(unknown, names), names)).toBe("some new action — alice.ton, EQBB…BBBB (failed)");
  });
});

/** A trace: `parents[i]` is the index of transaction i's parent (-1 for the root); `undelivered[i]` more messages it sent. */
function trace(parents: number[], undelivered: Record<number, number> = {}): Trace {
  const named = (name: string) => Buffer.from(name.padEnd(32, ".")).toString("base64");
  const inMsgs = parents.map((_, i) => create(MessageSchema, { hash: named(`in${i}`), createdLt: String(i * 10 - 1), source: i === 0 ? undefined : address(parents[i] as number) }));
  const lost = (i: number, k: number): Message => create(MessageSchema, { hash: named(`lost${i}.${k}`), source: address(i), destination: address(99), createdLt: String(i * 10 + 5 + k) });
  const transactions = parents.map((_, i) =>
    create(TransactionSchema, {
      hash: named(`tx${i}`),
      account: address(i),
      lt: String(i * 10),
      inMsg: inMsgs[i],
      outMsgs: [...parents.flatMap((parent, child) => (parent === i ? [inMsgs[child] as Message] : [])), ...Array.from({ length: undelivered[i] ?? 0 }, (_, k) => lost(i, k))],
    }),
  );
  return create(TraceSchema, {
    traceId: transactions[0]?.hash,
    nodes: transactions.map((tx, i) => create(TraceNodeSchema, { transactionHash: tx.hash, inMsgHash: tx.inMsg?.hash, parent: parents[i] === -1 ? undefined : parents[i] })),
    transactions,
  });
}

describe("the tree", () => {
  it("leads every message to its receiver or to an end, and lays the shown parts out without overlap", () => {
    // 0 → 1, 2; 1 → 3; 2 sent one message nothing received.
    const tree = buildTree(trace([-1, 0, 0, 1], { 2: 1 }));
    expect(tree.nodes.map((n) => n.depth)).toEqual([0, 1, 1, 2]);
    expect(tree.nodes.map((n) => n.subtreeSize)).toEqual([4, 2, 1, 1]);
    expect(tree.nodes[2]?.branches.map((b) => b.kind)).toEqual(["msg"]);
    const shown = initialShown(tree);
    const placed = layout(tree, shown);
    expect(placed.nodes).toHaveLength(4);
    expect(placed.ends).toHaveLength(1);
    expect(placed.more).toHaveLength(0);
    const cells = [...placed.nodes, ...placed.ends].map((p) => `${p.level}/${p.slot}`);
    expect(new Set(cells).size).toBe(cells.length);
    // Every parent sits over the middle of its shown children.
    const at = new Map(placed.nodes.map((p) => [p.node, p]));
    expect(at.get(0)?.slot).toBe(((at.get(1)?.slot ?? 0) + (at.get(2)?.slot ?? 0)) / 2);
    expect(placed.levels).toBe(3);
  });

  it("shows a large trace within its limits, opens more on demand, and reveals a deep transaction", () => {
    // A root with 50 children, the first of which starts a chain of 100.
    const parents = [-1, ...Array.from({ length: 50 }, () => 0)];
    for (let i = 0; i < 100; i++) parents.push(i === 0 ? 1 : parents.length - 1);
    const tree = buildTree(trace(parents));
    const limits = { budget: 30, perNode: 10 };
    const shown = initialShown(tree, limits);
    const first = layout(tree, shown);
    expect(first.nodes.length).toBeLessThanOrEqual(31);
    const rootMore = first.more.find((m) => m.node === 0);
    expect(rootMore).toMatchObject({ hiddenBranches: 40, hiddenTransactions: 40 });

    showMore(tree, shown, 0, limits);
    expect(layout(tree, shown).more.find((m) => m.node === 0)?.hiddenBranches).toBe(30);

    const deepest = tree.nodes.length - 1;
    expect(shownAncestor(tree, shown, deepest)).not.toBe(deepest);
    reveal(tree, shown, deepest);
    expect(shownAncestor(tree, shown, deepest)).toBe(deepest);
    expect(layout(tree, shown).nodes.some((p) => p.node === deepest)).toBe(true);

    collapse(tree, shown, 0);
    const closed = layout(tree, shown);
    expect(closed.nodes.map((p) => p.node)).toEqual([0]);
    expect(closed.more).toEqual([expect.objectContaining({ node: 0, hiddenBranches: 50, hiddenTransactions: 150 })]);
  });
});

describe("live arrivals", () => {
  it("go on top, newest first, and replace a trace already listed", () => {
    const listed = [3, 2, 1].map((n) => create(TraceSchema, { traceId: hash(n), endLt: String(n * 100), traceInfo: { traceState: n === 3 ? "pending" : "complete" } }));
    const arrived = [create(TraceSchema, { traceId: hash(3), endLt: "350", traceInfo: { traceState: "complete" } }), create(TraceSchema, { traceId: hash(4), endLt: "400" })];
    const merged = withArrivals(listed, arrived);
    expect(merged.map((t) => t.traceId)).toEqual([hash(4), hash(3), hash(2), hash(1)]);
    expect(merged[1]?.traceInfo?.traceState).toBe("complete");
  });
});

/**
 * A stand-in for StreamTraces: each call plays the next script (messages, then an error or the end) and records its
 * request; past the scripts a call waits until the page lets go of it.
 */
function scriptedStreams(scripts: Array<{ messages: StreamTracesResponse[]; error?: ConnectError }>) {
  const requests: Array<MessageInitShape<typeof StreamTracesRequestSchema>> = [];
  const open = async function* (request: MessageInitShape<typeof StreamTracesRequestSchema>, signal: AbortSignal): AsyncGenerator<StreamTracesResponse> {
    requests.push(request);
    const script = scripts[requests.length - 1];
    if (script === undefined) {
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      throw new ConnectError("the page left", Code.Canceled);
    }
    yield* script.messages;
    if (script.error !== undefined) throw script.error;
  };
  return { open, requests };
}

const heartbeat = (position: number) => create(StreamTracesResponseSchema, { position, heartbeat: true });
const block = (position: number, ...ids: number[]) =>
  create(StreamTracesResponseSchema, { position, traces: ids.map((n) => create(TraceSchema, { traceId: hash(n) })), addressBook: { [address(position)]: { userFriendly: `book ${position}` } } });

describe("the live source (StreamTraces)", () => {
  it("asks for the account with its transactions, actions and names, hands over blocks, skips heartbeats, and resumes after the last position on a transport error", async () => {
    const streams = scriptedStreams([
      { messages: [heartbeat(10), block(11, 1)], error: new ConnectError("the server is shutting down", Code.Unavailable) },
      { messages: [], error: new ConnectError("read too slowly", Code.ResourceExhausted) },
      { messages: [heartbeat(12), block(13, 2, 3)] },
    ]);
    const states: LiveState[] = [];
    const controller = new AbortController();
    const handed: string[][] = [];
    for await (const answer of streamedTraces(streams.open, [1, 1, 1])(address(9), controller.signal, (state) => states.push(state))) {
      handed.push(answer.traces.map((t) => t.traceId));
      expect(Object.keys(answer.addressBook)).toHaveLength(1);
      if (handed.length === 2) controller.abort();
    }
    expect(handed).toEqual([[hash(1)], [hash(2), hash(3)]]);
    expect(streams.requests.map((r) => r.resumeAfter)).toEqual([undefined, 11, 11]);
    expect(streams.requests[0]).toMatchObject({ accounts: [address(9)], includeTransactions: true, includeActions: true, includeAddressBook: true, includeMetadata: true });
    expect(states.map((s) => `${s.kind} ${s.position}`)).toEqual([
      "following undefined",
      "following 10",
      "following 11",
      "reconnecting 11",
      "reconnecting 11",
      "reconnecting 11",
      "reconnecting 11",
      "following 12",
      "following 13",
    ]);
  });

  it("gives up after its retries fail in a row, and at once on a refusal a retry cannot cure", async () => {
    const down = new ConnectError("connection refused", Code.Unavailable);
    const failing = scriptedStreams([{ messages: [], error: down }, { messages: [], error: down }, { messages: [], error: down }]);
    const consume = async (live: AsyncIterable<unknown>) => {
      for await (const _ of live);
    };
    await expect(consume(streamedTraces(failing.open, [1, 1])(address(9), new AbortController().signal))).rejects.toThrow("connection refused");
    expect(failing.requests).toHaveLength(3);

    const refused = scriptedStreams([{ messages: [], error: new ConnectError("position 5 is older than the resume window", Code.OutOfRange) }]);
    await expect(consume(streamedTraces(refused.open, [1, 1])(address(9), new AbortController().signal))).rejects.toThrow("resume window");
    expect(refused.requests).toHaveLength(1);
  });

  it("stops without an error when the view's signal aborts, waiting or reconnecting", async () => {
    const controller = new AbortController();
    const streams = scriptedStreams([{ messages: [heartbeat(4)], error: new ConnectError("reset", Code.Unavailable) }]);
    const states: LiveState[] = [];
    const live = streamedTraces(streams.open, [60_000])(address(9), controller.signal, (state) => {
      states.push(state);
      if (state.kind === "reconnecting") controller.abort();
    });
    const started = Date.now();
    for await (const _ of live) throw new Error("no traces were sent");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(streams.requests).toHaveLength(1);
  });
});
