import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GetTracesRequest } from "../gen/tonquery/v1/service_pb.ts";
import { TracesJsonEncoder, writeTrace } from "../src/encode/v3-json/traces.ts";
import { JsonPieces, printJson, quote } from "../src/encode/json-pieces.ts";
import { type LoadedTrace, streamTraces, type TracePageEnd, type TraceSink, traceOf, typedTraceSink } from "../src/handlers/traces.ts";
import { jsonBytes } from "../src/present/json-text.ts";
import { presentTrace, TracesJsonWriter } from "../src/present/v3/trace.ts";
import { type TestDatabase, testEngine } from "./support/database.ts";
import { generatedIndex, recordedIndex } from "./support/encoder-indexes.ts";
import { forEveryTracePage, getTracesContext, traceVariants } from "./support/trace-pages.ts";

// The REST v3 traces encoder (src/encode/v3-json/), which writes from the rows the data layer read, against the
// presenters (src/present/v3/), which print the typed API's Traces scanned from the same rows: byte for byte, on
// every trace of the recordings and of a generated chain, with and without actions, decoded bodies, and with traces
// over MAX_TRACE_TRANSACTIONS (a header only).

/**
 * Feeds one page to both writers and checks each trace as it comes, then the page: the encoder against
 * presentTrace of traceOf, and the encoder's page against TracesJsonWriter's.
 */
class ComparingSink implements TraceSink<{ ours: Buffer; reference: Buffer; traces: number }> {
  readonly #encoder: TracesJsonEncoder;
  readonly #reference: TraceSink<Buffer[]>;
  readonly #includeActions: boolean;
  readonly #pieces = new JsonPieces();
  #traces = 0;

  constructor(request: GetTracesRequest) {
    this.#encoder = new TracesJsonEncoder(request);
    this.#reference = typedTraceSink(new TracesJsonWriter(request));
    this.#includeActions = request.includeActions;
  }

  trace(loaded: LoadedTrace): void {
    writeTrace(this.#pieces, loaded, this.#includeActions);
    const ours = this.#pieces.take().toString();
    const reference = jsonBytes(presentTrace(traceOf(loaded), this.#includeActions)).toString();
    expect(ours, loaded.row.trace_id).toBe(reference);
    this.#traces++;
    this.#encoder.trace(loaded);
    this.#reference.trace(loaded);
  }

  end(end: TracePageEnd) {
    return { ours: Buffer.concat(this.#encoder.end(end)), reference: Buffer.concat(this.#reference.end(end)), traces: this.#traces };
  }
}

/** Every trace of the index, a page of ids at a time, in every variant: how many traces were compared. */
function compareEveryTrace(index: TestDatabase): Promise<number> {
  return forEveryTracePage(index, async (request, deps) => {
    const { ours, reference, traces } = await streamTraces(deps, request, getTracesContext(), new ComparingSink(request));
    expect(traces).toBe(request.traceId.length);
    expect(ours.equals(reference)).toBe(true);
    return traces;
  });
}

/** What the writer prints for one call, as text. */
const printed = (write: (out: JsonPieces) => void) => printJson(write).toString("utf8");

describe("the encoder's quoting", () => {
  it("prints strings and scalars as JSON.stringify does, escaping what it escapes", () => {
    const strings = ["", "0:ABCDEF", "say \"hi\"", "back\\slash", "tab\tnew\nline\u0000\u001f\u007f", "héllo ✓", "😀", "\ud83d", "x\udc00y", "\u2028"];
    for (const text of strings) {
      expect(quote(text), text).toBe(JSON.stringify(text));
      expect(printed((out) => out.string(text)), text).toBe(JSON.stringify(text));
    }
    for (const scalar of [0, -1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, true, false, "12345"]) {
      expect(printed((out) => out.value(scalar)), String(scalar)).toBe(JSON.stringify(scalar));
    }
    expect(printed((out) => out.value(null))).toBe("null");
    expect(printed((out) => out.value(undefined))).toBe("null");
  });

  it("quotes any string, lone surrogates and long ones included, as JSON.stringify does", () => {
    const anyText = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: fc.constantFrom("A", "/", "=", '"', "\\", "\u0001", "\ud800") }), fc.base64String({ maxLength: 3000 }));
    fc.assert(
      fc.property(anyText, (text) => {
        expect(quote(text)).toBe(JSON.stringify(text));
        expect(printed((out) => out.string(text))).toBe(JSON.stringify(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("writes objects of optional members, and text of any length across its chunks, as the strings it stands for", () => {
    const member = fc.tuple(fc.constantFrom("a", "b", "c", "é", "ключ"), fc.option(fc.oneof(fc.string({ unit: "binary" }), fc.integer(), fc.boolean()), { nil: null }));
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.array(member, { maxLength: 4 }), fc.string({ unit: "binary", maxLength: 40 }))), fc.integer({ min: 1, max: 64 }), (parts, chunkSize) => {
        const out = new JsonPieces(chunkSize);
        let expected = "";
        for (const part of parts) {
          if (typeof part === "string") {
            out.text(part);
            expected += part;
            continue;
          }
          out.objectStart();
          const present = part.filter(([, v]) => v !== null);
          for (const [key, v] of part) out.member(`,"${key}":`, v);
          out.objectEnd();
          expected += `{${present.map(([key, v]) => `"${key}":${JSON.stringify(v)}`).join(",")}}`;
        }
        expect(out.take().toString("utf8")).toBe(Buffer.from(expected).toString("utf8"));
      }),
      { numRuns: 500 },
    );
  });
});

describe("the v3 traces JSON encoder, on the recordings", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await recordedIndex();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("prints every trace byte for byte as the presenters do", async () => {
    const compared = await compareEveryTrace(db);
    expect(compared).toBeGreaterThan(30 * traceVariants.length);
  });
});

const engine = await testEngine();

// The generator loads with COPY FROM STDIN, which PGlite's socket server does not support.
describe.runIf(engine === "postgresql")("the v3 traces JSON encoder, on a generated chain", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await generatedIndex(4000, 25);
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
  });

  it("prints every trace byte for byte as the presenters do", async () => {
    const compared = await compareEveryTrace(db);
    expect(compared).toBeGreaterThan(800 * traceVariants.length);
  }, 120_000);
});
