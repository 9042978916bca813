/**
 * Reads the API server's `apiserver_request_total` counter from /metrics (Prometheus text) and
 * diffs two snapshots, keyed by "verb resource[/subresource] code".
 */
import { Http2Transport, readBody } from '../../src/client/transport.js';

export type RequestCounts = Map<string, number>;

function labels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) out[m[1] ?? ''] = m[2] ?? '';
  return out;
}

export function parseRequestTotals(body: string): RequestCounts {
  const counts: RequestCounts = new Map();
  for (const line of body.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const close = line.lastIndexOf('}');
    const l = labels(line.slice('apiserver_request_total{'.length, close));
    const value = Number(line.slice(close + 1).trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    const resource = l['resource'] ? `${l['resource']}${l['subresource'] ? '/' + l['subresource'] : ''}` : '(non-resource)';
    const key = `${l['verb'] ?? '?'} ${resource} ${l['code'] ?? '?'}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

export async function scrapeRequestTotals(transport: Http2Transport): Promise<RequestCounts> {
  const res = await transport.request({ method: 'GET', path: '/metrics', signal: AbortSignal.timeout(10_000) });
  const body = (await readBody(res.body)).toString();
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parseRequestTotals(body);
}

/** after − before, largest first, zero rows dropped. */
export function diffCounts(before: RequestCounts, after: RequestCounts): Array<[string, number]> {
  const rows: Array<[string, number]> = [];
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d > 0) rows.push([k, d]);
  }
  return rows.sort((a, b) => b[1] - a[1]);
}

/** Sums rows whose key (verb resource code) maps to the same `group(key)`, largest first. */
export function groupCounts(rows: Array<[string, number]>, group: (verb: string, resource: string, code: string) => string): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const [k, n] of rows) {
    const [verb = '', resource = '', code = ''] = k.split(' ');
    const g = group(verb, resource, code);
    m.set(g, (m.get(g) ?? 0) + n);
  }
  return [...m].sort((a, b) => b[1] - a[1]);
}
