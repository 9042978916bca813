/**
 * The autoscaler's metrics, through the API server's aggregation layer (the REST clients of
 * --horizontal-pod-autoscaler-use-rest-clients): resource metrics from metrics.k8s.io/v1beta1
 * PodMetrics, custom metrics of pods and objects from custom.metrics.k8s.io/v1beta1, external
 * ones from external.metrics.k8s.io/v1beta1. Values are milli-units, as Kubernetes compares them.
 */
import { parseQuantity } from '../../../../util/quantity.js';
import type { RestClient } from '../../deps.js';
import type { PodMetric } from './replica-calculator.js';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null ? v as Obj : {});
const milli = (q: unknown): number => Math.round(parseQuantity(String(q)) * 1000);
const durationMs = (d: unknown): number => {
  const m = /^(\d+(?:\.\d+)?)s$/.exec(String(d ?? ''));
  return m ? Number(m[1]) * 1000 : 0;
};

export class MetricsError extends Error {}

async function getJson(client: RestClient, path: string): Promise<Obj> {
  const r = await client.getPath(path, { accept: 'application/json' });
  if (r.status < 200 || r.status >= 300) {
    let message = r.body.toString('utf8').slice(0, 300);
    try { message = String(obj(JSON.parse(message)).message ?? message); } catch { /* not JSON */ }
    throw new MetricsError(`the server could not find the requested resource (get ${path}): ${r.status} ${message}`.replace(/: \d+ $/, ''));
  }
  return obj(JSON.parse(r.body.toString('utf8')));
}

const q = (params: Record<string, string>): string => {
  const s = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '')).toString();
  return s ? `?${s}` : '';
};

export class HpaMetricsClient {
  constructor(private readonly client: RestClient) {}

  /**
   * Pod → its usage of `resource` (the sum over containers, or one container's). A pod whose
   * containers lack the resource is left out, as Kubernetes' metrics client does.
   */
  async resourceMetrics(namespace: string, selector: string, resource: string, container?: string): Promise<Map<string, PodMetric>> {
    const list = await getJson(this.client, `/apis/metrics.k8s.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/pods${q({ labelSelector: selector })}`);
    const out = new Map<string, PodMetric>();
    for (const item of Array.isArray(list.items) ? list.items.map(obj) : []) {
      const containers = Array.isArray(item.containers) ? item.containers.map(obj) : [];
      let sum = 0, missing = false, found = false;
      for (const c of containers) {
        if (container && c.name !== container) continue;
        const u = obj(c.usage)[resource];
        if (u === undefined) { missing = true; break; }
        sum += milli(u);
        found = true;
      }
      if (missing || !found) continue;
      out.set(String(obj(item.metadata).name), { value: sum, timestamp: Date.parse(String(item.timestamp)) || Date.now(), windowMs: durationMs(item.window) });
    }
    return out;
  }

  /** A custom metric of every selected pod. */
  async podsMetric(namespace: string, metric: string, selector: string, metricSelector: string): Promise<Map<string, PodMetric>> {
    const list = await getJson(this.client, `/apis/custom.metrics.k8s.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/pods/*/${encodeURIComponent(metric)}${q({ labelSelector: selector, metricLabelSelector: metricSelector })}`);
    const out = new Map<string, PodMetric>();
    for (const item of Array.isArray(list.items) ? list.items.map(obj) : []) {
      out.set(String(obj(item.describedObject).name), { value: milli(item.value), timestamp: Date.parse(String(item.timestamp)) || Date.now(), windowMs: Number(item.windowSeconds ?? 0) * 1000 });
    }
    return out;
  }

  /** A custom metric of one object (its resource's plural given). */
  async objectMetric(namespace: string, plural: string, group: string, name: string, metric: string, metricSelector: string): Promise<{ value: number; timestamp: number }> {
    const res = group ? `${plural}.${group}` : plural;
    const list = await getJson(this.client, `/apis/custom.metrics.k8s.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/${res}/${encodeURIComponent(name)}/${encodeURIComponent(metric)}${q({ metricLabelSelector: metricSelector })}`);
    const item = obj(Array.isArray(list.items) ? list.items[0] : undefined);
    if (item.value === undefined) throw new MetricsError(`no metric ${metric} for ${res}/${name}`);
    return { value: milli(item.value), timestamp: Date.parse(String(item.timestamp)) || Date.now() };
  }

  /** The sum of an external metric's series. */
  async externalMetric(namespace: string, metric: string, metricSelector: string): Promise<{ value: number; timestamp: number }> {
    const list = await getJson(this.client, `/apis/external.metrics.k8s.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/${encodeURIComponent(metric)}${q({ labelSelector: metricSelector })}`);
    const items = Array.isArray(list.items) ? list.items.map(obj) : [];
    if (!items.length) throw new MetricsError(`no external metric ${metric}`);
    let sum = 0, ts = Number.MAX_SAFE_INTEGER;
    for (const i of items) { sum += milli(i.value); ts = Math.min(ts, Date.parse(String(i.timestamp)) || Date.now()); }
    return { value: sum, timestamp: ts };
  }
}
