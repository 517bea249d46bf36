import parsePrometheusTextFormat, { type PrometheusFamily, type PrometheusSample } from "parse-prometheus-text-format";

/** GET /metrics, parsed by a Prometheus text-format parser (which throws on a line Prometheus would refuse). */
export async function scrapeMetrics(baseUrl: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return new Scrape(await response.text(), response.headers.get("content-type") ?? "");
}

/**
 * One scrape. parse-prometheus-text-format folds every series of a labelled histogram into one set of buckets
 * (its issue #13, open upstream), so histograms are read a second time with their TYPE lines left out: their
 * `_bucket`, `_sum` and `_count` samples then come back one by one, each with its own labels.
 */
export class Scrape {
  readonly contentType: string;
  readonly #types = new Map<string, PrometheusFamily["type"]>();
  readonly #samples = new Map<string, PrometheusSample[]>();

  constructor(text: string, contentType: string) {
    this.contentType = contentType;
    for (const family of parsePrometheusTextFormat(text)) this.#types.set(family.name, family.type);
    for (const family of parsePrometheusTextFormat(text.replace(/^# TYPE \S+ histogram$/gm, ""))) {
      const samples = this.#samples.get(family.name) ?? [];
      samples.push(...family.metrics);
      this.#samples.set(family.name, samples);
    }
    // The parser takes any word for a value; Prometheus takes only a float (Go's ParseFloat: Inf and NaN in any case).
    for (const [name, samples] of this.#samples) {
      for (const sample of samples) {
        if (!/^([+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?|[+-]?inf(inity)?|nan)$/i.test(sample.value ?? "")) throw new Error(`${name}: not a number: ${sample.value}`);
      }
    }
  }

  type(name: string): PrometheusFamily["type"] | undefined {
    return this.#types.get(name);
  }

  /** The samples of `name` whose labels include `labels`. */
  samples(name: string, labels: Record<string, string> = {}): PrometheusSample[] {
    return (this.#samples.get(name) ?? []).filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  }

  /** A counter's or gauge's value; 0 for a series not exported (a labelled counter appears with its first increment). */
  value(name: string, labels: Record<string, string> = {}): number {
    return Number(this.samples(name, labels)[0]?.value ?? 0);
  }

  /** A histogram's observation count. */
  count(name: string, labels: Record<string, string> = {}): number {
    return this.value(`${name}_count`, labels);
  }

  /** A histogram's sum of observations. */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.value(`${name}_sum`, labels);
  }

  /** A histogram's cumulative bucket counts by upper bound, in exposition order. */
  buckets(name: string, labels: Record<string, string> = {}): [string, number][] {
    return this.samples(`${name}_bucket`, labels).map((m) => [m.labels?.le ?? "", Number(m.value)]);
  }
}
