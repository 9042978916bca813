/**
 * apiserver_request_duration_seconds as a lean histogram registered in a prom-client Registry.
 * prom-client's Histogram validates and hashes the label object on every observation (about a
 * microsecond, on every request); here the caller names the series with a key it already has,
 * and an observation is a map lookup and three additions. What a scrape shows is exactly what
 * prom-client's Histogram shows for the same observations (same series, lines and label order):
 * the values are handed to the Registry in prom-client's own shape.
 *
 * Contract: single-threaded; label objects passed in are kept and must not change afterwards.
 */
import type { Metric, Registry } from 'prom-client';

interface Series<L extends string> {
  readonly labels: Readonly<Record<L, string>>;
  /** Observations per bucket (not cumulative); index i counts values in (bounds[i-1], bounds[i]]. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** One exported line, as prom-client's Histogram produces it for the Registry. */
interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
  exemplar?: null;
}

export class RequestHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series<L>>();

  constructor(readonly name: string, readonly help: string, private readonly bounds: readonly number[], registry?: Registry) {
    // The Registry asks only for name, type, get/getForPromString and reset (duck-typed).
    registry?.registerMetric(this as unknown as Metric);
  }

  /** Records `value` (seconds) in the series `key` names; `labels` are that series' labels. */
  observe(key: string, labels: Readonly<Record<L, string>>, value: number): void {
    if (!Number.isFinite(value)) return; // prom-client refuses these too (it throws)
    let s = this.series.get(key);
    if (!s) {
      s = { labels, counts: new Float64Array(this.bounds.length), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]!) { s.counts[i]!++; break; }
    }
    s.sum += value;
    s.count++;
  }

  reset(): void { this.series.clear(); }

  /** The observations of one series (tests, diagnostics). */
  seriesOf(key: string): { count: number; sum: number } | undefined {
    const s = this.series.get(key);
    return s && { count: s.count, sum: s.sum };
  }

  /** What the Registry formats: bucket lines carry `le` with the series labels shared. */
  async getForPromString(): Promise<{ name: string; help: string; type: string; values: ExportedValue[]; aggregator: string }> {
    const values: ExportedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ labels: { le: this.bounds[i]! }, sharedLabels: s.labels, value: acc, metricName: bucketName, exemplar: null });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucketName, exemplar: null });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The JSON form (Registry.getMetricsAsJSON): each line's labels with the series labels merged in. */
  async get(): Promise<{ name: string; help: string; type: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[]; aggregator: string }> {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map((v) => ({ labels: { ...v.labels, ...v.sharedLabels }, value: v.value, metricName: v.metricName })),
    };
  }
}
