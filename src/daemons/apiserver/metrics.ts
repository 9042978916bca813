/**
 * The API server's Prometheus metrics, in one registry per server instance (so several servers
 * can live in one test process). Other parts observe through the exported object: the REST
 * layer counts watchers, the storage layer times its requests with `timeStorage`.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestInfo } from './request-info.js';

export interface ApiserverMetrics {
  readonly registry: Registry;
  /** apiserver_storage_objects, filled from the object-count poller. */
  readonly storageObjects: Gauge<'resource'>;
  /** Where storageObjects reads its counts at scrape time. */
  setObjectCountSource(fn: () => ReadonlyMap<string, number>): void;
  readonly requestTotal: Counter<'verb' | 'group' | 'version' | 'resource' | 'subresource' | 'code'>;
  readonly requestDuration: Histogram<'verb' | 'group' | 'version' | 'resource' | 'subresource'>;
  readonly currentInflight: Gauge<'request_kind'>;
  readonly rejectedRequests: Counter<'request_kind' | 'reason'>;
  /** Open watches by group/version/kind-or-resource; the REST layer increments and decrements. */
  readonly registeredWatchers: Gauge<'group' | 'version' | 'resource'>;
  /** Storage request latency whatever the backend (Kubernetes keeps the etcd name). */
  readonly storageDuration: Histogram<'operation' | 'type'>;
}

const REQUEST_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
const STORAGE_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];

export function createApiserverMetrics(opts: { defaultMetrics?: boolean } = {}): ApiserverMetrics {
  const registry = new Registry();
  let countSource: (() => ReadonlyMap<string, number>) | undefined;
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return {
    registry,
    requestTotal: new Counter({
      name: 'apiserver_request_total', help: 'Counter of apiserver requests by verb, group, version, resource, subresource and HTTP code.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'code'], registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'apiserver_request_duration_seconds', help: 'Response latency distribution in seconds by verb, group, version, resource and subresource.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource'], buckets: REQUEST_BUCKETS, registers: [registry],
    }),
    currentInflight: new Gauge({
      name: 'apiserver_current_inflight_requests', help: 'Requests currently being served, by kind (readOnly or mutating).',
      labelNames: ['request_kind'], registers: [registry],
    }),
    rejectedRequests: new Counter({
      name: 'apiserver_dropped_requests_total', help: 'Requests rejected by the in-flight limit.',
      labelNames: ['request_kind', 'reason'], registers: [registry],
    }),
    registeredWatchers: new Gauge({
      name: 'apiserver_registered_watchers', help: 'Watches currently open, by group, version and resource.',
      labelNames: ['group', 'version', 'resource'], registers: [registry],
    }),
    storageObjects: new Gauge({
      name: 'apiserver_storage_objects', help: 'Number of stored objects at the last poll (--kvstore-count-metric-poll-period), by resource.',
      labelNames: ['resource'], registers: [registry],
      // Read at scrape time from the poller, so a scrape never counts the store itself.
      collect(this: Gauge<'resource'>) {
        this.reset();
        for (const [resource, n] of countSource?.() ?? []) this.set({ resource }, n);
      },
    }),
    setObjectCountSource(fn: () => ReadonlyMap<string, number>): void { countSource = fn; },
    storageDuration: new Histogram({
      name: 'etcd_request_duration_seconds', help: 'Storage request latency in seconds by operation and object type.',
      labelNames: ['operation', 'type'], buckets: STORAGE_BUCKETS, registers: [registry],
    }),
  };
}

/** Times `fn` into the storage latency histogram. */
export async function timeStorage<T>(m: ApiserverMetrics | undefined, operation: string, type: string, fn: () => Promise<T>): Promise<T> {
  if (!m) return fn();
  const end = m.storageDuration.startTimer({ operation, type });
  try {
    return await fn();
  } finally {
    end();
  }
}

/** The verb label Kubernetes reports: LIST, WATCH, CONNECT, else the HTTP method. */
export function reportedVerb(method: string, info: RequestInfo): string {
  if (info.verb === 'list') return 'LIST';
  if (info.verb === 'watch') return 'WATCH';
  if (info.verb === 'connect') return 'CONNECT';
  return method.toUpperCase();
}

/** Keeps label values bounded: a garbage path segment must not create a new series. */
function safeLabel(v: string): string {
  return /^[a-z0-9][a-z0-9.-]{0,62}$/i.test(v) || v === '' ? v : 'other';
}

export function observeRequest(m: ApiserverMetrics, method: string, info: RequestInfo, code: number, seconds: number): void {
  const labels = {
    verb: reportedVerb(method, info),
    group: safeLabel(info.apiGroup), version: safeLabel(info.apiVersion),
    resource: safeLabel(info.resource), subresource: safeLabel(info.subresource),
  };
  m.requestTotal.inc({ ...labels, code: String(code) });
  m.requestDuration.observe(labels, seconds);
}
