/**
 * The API server's Prometheus metrics, in one registry per server instance (so several servers
 * can live in one test process). Other parts observe through the exported object: the REST
 * layer counts watchers, the storage layer times its requests with `timeStorage`.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RequestInfo } from './request-info.js';
import { RequestHistogram } from './request-histogram.js';

export interface ApiserverMetrics {
  readonly registry: Registry;
  /** apiserver_storage_objects, filled from the object-count poller. */
  readonly storageObjects: Gauge<'resource'>;
  /** Where storageObjects reads its counts at scrape time. */
  setObjectCountSource(fn: () => ReadonlyMap<string, number>): void;
  readonly requestTotal: Counter<'verb' | 'group' | 'version' | 'resource' | 'subresource' | 'code'>;
  /** apiserver_request_duration_seconds (a lean histogram: see request-histogram.ts). */
  readonly requestDuration: RequestHistogram<'verb' | 'group' | 'version' | 'resource' | 'subresource'>;
  readonly currentInflight: Gauge<'request_kind'>;
  /** Where currentInflight reads the seats in use at scrape time (the in-flight filter). */
  setInflightSource(fn: () => Readonly<Record<'readOnly' | 'mutating', number>>): void;
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
  let inflightSource: (() => Readonly<Record<'readOnly' | 'mutating', number>>) | undefined;
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return {
    registry,
    requestTotal: new Counter({
      name: 'apiserver_request_total', help: 'Counter of apiserver requests by verb, group, version, resource, subresource and HTTP code.',
      labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'code'], registers: [registry],
      // Requests are tallied per label set without prom-client (see observeRequest) and added
      // here at scrape time, so a request costs an increment instead of a label hash.
      collect(this: Counter<RequestLabelName>) {
        const pending = pendingCounts.get(this);
        if (!pending) return;
        for (const [labels, tally] of pending) if (tally.n > 0) this.inc(labels, tally.n);
        // Emptied, so label sets built per request (past the caches' bounds) do not pile up.
        pending.clear();
      },
    }),
    requestDuration: new RequestHistogram('apiserver_request_duration_seconds',
      'Response latency distribution in seconds by verb, group, version, resource and subresource.', REQUEST_BUCKETS, registry),
    currentInflight: new Gauge({
      name: 'apiserver_current_inflight_requests', help: 'Requests currently being served, by kind (readOnly or mutating).',
      labelNames: ['request_kind'], registers: [registry],
      // Read at scrape time: setting a gauge twice per request costs more than a scrape.
      collect(this: Gauge<'request_kind'>) {
        const seats = inflightSource?.();
        if (!seats) return;
        this.set({ request_kind: 'readOnly' }, seats.readOnly);
        this.set({ request_kind: 'mutating' }, seats.mutating);
      },
    }),
    setInflightSource(fn: () => Readonly<Record<'readOnly' | 'mutating', number>>): void { inflightSource = fn; },
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

type RequestLabelName = 'verb' | 'group' | 'version' | 'resource' | 'subresource' | 'code';
type RequestLabels = Record<Exclude<RequestLabelName, 'code'>, string>;

const LABEL_CACHE_MAX = 4096;
/** HTTP codes remembered per request shape (a handful in practice). */
const CODES_PER_SHAPE_MAX = 64;

interface LabelEntry { labels: RequestLabels; series: string; withCode: Map<number, RequestLabels & { code: string }> }

/**
 * Label sets by request shape, so a request costs one Map lookup instead of four label checks
 * and two fresh objects. Bounded: past the cap (garbage paths) labels are built per request.
 */
const labelCache = new Map<string, LabelEntry>();
/**
 * The shape of the last request whose entry was looked up: the next request of the same shape
 * (the common case) compares five strings instead of building and hashing a key.
 */
let lastShape: { verb: string; group: string; version: string; resource: string; subresource: string; entry: LabelEntry } | undefined;

/** The label entry of a request shape (cached up to LABEL_CACHE_MAX shapes). */
function labelEntry(verb: string, info: RequestInfo): LabelEntry {
  const key = `${verb} ${info.apiGroup} ${info.apiVersion} ${info.resource} ${info.subresource}`;
  let entry = labelCache.get(key);
  if (!entry) {
    const labels: RequestLabels = {
      verb, group: safeLabel(info.apiGroup), version: safeLabel(info.apiVersion),
      resource: safeLabel(info.resource), subresource: safeLabel(info.subresource),
    };
    // The histogram series is named by the label values (garbage paths share 'other').
    const series = `${labels.verb}\u0000${labels.group}\u0000${labels.version}\u0000${labels.resource}\u0000${labels.subresource}`;
    entry = { labels, series, withCode: new Map() };
    if (labelCache.size < LABEL_CACHE_MAX) labelCache.set(key, entry);
  }
  return entry;
}

export function observeRequest(m: ApiserverMetrics, method: string, info: RequestInfo, code: number, seconds: number): void {
  const verb = reportedVerb(method, info);
  const last = lastShape;
  let entry = last !== undefined && last.verb === verb && last.group === info.apiGroup && last.version === info.apiVersion
    && last.resource === info.resource && last.subresource === info.subresource ? last.entry : undefined;
  if (entry === undefined) {
    entry = labelEntry(verb, info);
    lastShape = { verb, group: info.apiGroup, version: info.apiVersion, resource: info.resource, subresource: info.subresource, entry };
  }
  let withCode = entry.withCode.get(code);
  if (!withCode) {
    withCode = { ...entry.labels, code: String(code) };
    if (entry.withCode.size < CODES_PER_SHAPE_MAX) entry.withCode.set(code, withCode);
  }
  tally(m.requestTotal, withCode);
  m.requestDuration.observe(entry.series, entry.labels, seconds);
}

/**
 * Tallies of apiserver_request_total not yet handed to prom-client (at the next scrape), per
 * counter (one per server instance) and per label-set object. At most LABEL_CACHE_MAX label sets
 * wait between scrapes; past that, a request goes to the counter directly.
 */
const pendingCounts = new WeakMap<object, Map<RequestLabels & { code: string }, { n: number }>>();

function tally(counter: ApiserverMetrics['requestTotal'], labels: RequestLabels & { code: string }): void {
  let pending = pendingCounts.get(counter);
  if (!pending) { pending = new Map(); pendingCounts.set(counter, pending); }
  let t = pending.get(labels);
  if (!t) {
    if (pending.size >= LABEL_CACHE_MAX) { counter.inc(labels); return; }
    t = { n: 0 };
    pending.set(labels, t);
  }
  t.n++;
}
