/**
 * The metrics.k8s.io/v1beta1 API as metrics-server serves it: discovery (/apis/metrics.k8s.io,
 * /apis/metrics.k8s.io/v1beta1), NodeMetrics (`nodes`, cluster-scoped) and PodMetrics (`pods`,
 * namespaced), get and list with labelSelector, read from the metrics store; only objects that
 * still exist and have usage are listed. CPU is written in nanocores ("12345n"), memory in
 * KiB ("2048Ki"), window as a duration ("15.02s"). Every request passes MetricsAccess first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { labelSelectorMatcher } from '../../api/meta/label-selector.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { MetricsAccess, Attributes } from './access.js';
import type { MetricsStore, Usage } from './metrics-store.js';
import type { Scraper } from './scraper.js';

export const GROUP = 'metrics.k8s.io';
export const VERSION = 'v1beta1';
const GV = `${GROUP}/${VERSION}`;

const RESOURCE_LIST = {
  kind: 'APIResourceList', apiVersion: 'v1', groupVersion: GV,
  resources: [
    { name: 'nodes', singularName: '', namespaced: false, kind: 'NodeMetrics', verbs: ['get', 'list'] },
    { name: 'pods', singularName: '', namespaced: true, kind: 'PodMetrics', verbs: ['get', 'list'] },
  ],
};

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function status(res: ServerResponse, code: number, reason: string, message: string, details?: Record<string, unknown>): void {
  send(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code });
}

const cpu = (cores: number): string => `${Math.max(0, Math.round(cores * 1e9))}n`;
const memory = (bytes: number): string => `${Math.max(0, Math.round(bytes / 1024))}Ki`;
const usageOf = (u: Usage): { cpu: string; memory: string } => ({ cpu: cpu(u.cpuCores), memory: memory(u.memoryBytes) });
const iso = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
const duration = (ms: number): string => `${ms / 1000}s`;

export interface MetricsApiDeps { store: MetricsStore; scraper: Scraper; access: MetricsAccess }

export function createMetricsHandler(d: MetricsApiDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const nodeMetrics = (name: string): KubeObject | undefined => {
    const node = d.scraper.nodes.get(name);
    const u = d.store.nodeUsage(name);
    if (!node || !u) return undefined;
    return {
      kind: 'NodeMetrics', apiVersion: GV,
      metadata: { name, creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), ...(node.metadata?.labels ? { labels: node.metadata.labels } : {}) },
      timestamp: iso(u.timeMs), window: duration(u.windowMs), usage: usageOf(u),
    };
  };
  const podMetrics = (): KubeObject[] => d.store.podUsages().flatMap((p) => {
    const pod = d.scraper.pods.get(`${p.namespace}/${p.name}`);
    if (!pod) return [];
    return [{
      kind: 'PodMetrics', apiVersion: GV,
      metadata: { name: p.name, namespace: p.namespace, creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), ...(pod.metadata?.labels ? { labels: pod.metadata.labels } : {}) },
      timestamp: iso(p.timeMs), window: duration(p.windowMs), containers: p.containers.map((c) => ({ name: c.name, usage: usageOf(c.usage) })),
    }];
  });

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'https://metrics-server');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = (req.method ?? 'GET').toUpperCase();
    if (path === '/healthz' || path === '/readyz' || path === '/livez') {
      res.writeHead(path === '/readyz' && !d.scraper.scraped ? 500 : 200, { 'content-type': 'text/plain' }).end(path === '/readyz' && !d.scraper.scraped ? 'not scraped yet' : 'ok');
      return;
    }
    const parts = path.split('/').filter(Boolean);
    let attrs: Attributes;
    let namespace = '', name = '', resource: 'nodes' | 'pods' | undefined;
    if (parts[0] === 'apis' && parts[1] === GROUP && parts[2] === VERSION && parts.length > 3) {
      let rest = parts.slice(3);
      if (rest[0] === 'namespaces' && rest.length >= 3) { namespace = rest[1]!; rest = rest.slice(2); }
      if ((rest[0] !== 'nodes' && rest[0] !== 'pods') || rest.length > 2 || (rest[0] === 'nodes' && namespace)) { status(res, 404, 'NotFound', 'the server could not find the requested resource'); return; }
      resource = rest[0];
      name = rest[1] ?? '';
      attrs = { kind: 'resource', verb: name ? 'get' : 'list', resource, namespace, name };
    } else {
      attrs = { kind: 'path', verb: method.toLowerCase(), path };
    }
    const access = await d.access.check(req, attrs);
    if (!access.ok) { status(res, access.code, access.code === 401 ? 'Unauthorized' : access.code === 403 ? 'Forbidden' : 'InternalError', access.message); return; }
    if (method !== 'GET') { status(res, 405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`); return; }
    if (!resource) {
      if (path === `/apis/${GROUP}/${VERSION}`) { send(res, 200, RESOURCE_LIST); return; }
      if (path === `/apis/${GROUP}`) {
        const v = { groupVersion: GV, version: VERSION };
        send(res, 200, { kind: 'APIGroup', apiVersion: 'v1', name: GROUP, versions: [v], preferredVersion: v });
        return;
      }
      if (path === '/apis') {
        const v = { groupVersion: GV, version: VERSION };
        send(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [{ name: GROUP, versions: [v], preferredVersion: v }] });
        return;
      }
      status(res, 404, 'NotFound', 'the server could not find the requested resource');
      return;
    }
    let matches: (labels: Record<string, string> | undefined) => boolean;
    try {
      matches = labelSelectorMatcher(url.searchParams.get('labelSelector') ?? '');
    } catch (e) {
      status(res, 400, 'BadRequest', `unable to parse requirement: ${(e as Error).message}`);
      return;
    }
    if (resource === 'nodes') {
      if (name) {
        const m = nodeMetrics(name);
        if (!m) { status(res, 404, 'NotFound', `nodemetrics.metrics.k8s.io "${name}" not found`, { name, group: GROUP, kind: 'nodes' }); return; }
        send(res, 200, m);
        return;
      }
      const items = [...d.scraper.nodes.keys()].sort().map(nodeMetrics).filter((m): m is KubeObject => !!m && matches(m.metadata?.labels));
      send(res, 200, { kind: 'NodeMetricsList', apiVersion: GV, metadata: {}, items });
      return;
    }
    const pods = podMetrics().filter((p) => !namespace || p.metadata?.namespace === namespace);
    if (name) {
      const m = pods.find((p) => p.metadata?.name === name);
      if (!m) { status(res, 404, 'NotFound', `podmetrics.metrics.k8s.io "${namespace}/${name}" not found`, { name, group: GROUP, kind: 'pods' }); return; }
      send(res, 200, m);
      return;
    }
    const items = pods.filter((p) => matches(p.metadata?.labels))
      .sort((a, b) => `${a.metadata?.namespace}/${a.metadata?.name}`.localeCompare(`${b.metadata?.namespace}/${b.metadata?.name}`));
    send(res, 200, { kind: 'PodMetricsList', apiVersion: GV, metadata: {}, items });
  };

  return (req, res) => {
    serve(req, res).catch((e: unknown) => { if (!res.headersSent) status(res, 500, 'InternalError', (e as Error).message); else res.end(); });
  };
}
