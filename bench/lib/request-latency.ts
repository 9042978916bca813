/**
 * The server's own view of a bench row's latency: apiserver_request_duration_seconds on
 * /metrics counts each request from the moment the apiserver takes it (the request filter
 * chain starts) to the close of its response stream, the last byte sent, which is how
 * Kubernetes defines API call latency. A load client's own pauses (its GC, its scheduling on the
 * other core) are part of the latency it measures but not of this one. The histogram has
 * buckets, not samples, so the figure is the share of requests within a bucket bound (5 ms,
 * 25 ms, ...): "99.2 % ≤ 25 ms" says whether a p99 aim of 25 ms was met.
 */
import type * as http2 from 'node:http2';
import { gcNote, parseGcTally, type GcTally } from './gc-metrics.js';
import { send } from './h2-load.js';

/** Cumulative counts per bucket bound (seconds), the total and the summed seconds, for one verb and resource. */
export interface LatencyTally {
  readonly count: number;
  readonly sum: number;
  readonly within: ReadonlyMap<number, number>;
}

const EMPTY: LatencyTally = { count: 0, sum: 0, within: new Map() };

/** The histogram series of `verb` (POST, GET, PUT, LIST, ...) on core or grouped `resource`, summed over codes and subresource "". */
export function parseLatency(text: string, verb: string, resource: string): LatencyTally {
  let count = 0;
  let sum = 0;
  const within = new Map<number, number>();
  for (const m of text.matchAll(/^apiserver_request_duration_seconds_(bucket|count|sum)\{([^}]*)\} ([0-9.e+-]+)$/gm)) {
    const labels = m[2]!;
    if (!labels.includes(`verb="${verb}"`) || !labels.includes(`resource="${resource}"`) || !labels.includes('subresource=""')) continue;
    const v = Number(m[3]);
    if (m[1] === 'count') { count += v; continue; }
    if (m[1] === 'sum') { sum += v; continue; }
    const le = /le="([^"]+)"/.exec(labels)?.[1];
    if (!le || le === '+Inf') continue;
    within.set(Number(le), (within.get(Number(le)) ?? 0) + v);
  }
  return { count, sum, within };
}

export async function scrapeLatency(session: http2.ClientHttp2Session, verb: string, resource: string): Promise<LatencyTally> {
  return (await scrapeServer(session, verb, resource)).latency;
}

/** The server's request latencies of `verb` on `resource` and its GC pauses, from one /metrics scrape. */
export interface ServerTally { readonly latency: LatencyTally; readonly gc: GcTally }

export async function scrapeServer(session: http2.ClientHttp2Session, verb: string, resource: string): Promise<ServerTally> {
  let text: string;
  try {
    text = (await send(session, { path: '/metrics' })).body.toString();
  } catch {
    return { latency: EMPTY, gc: new Map() };
  }
  return { latency: parseLatency(text, verb, resource), gc: parseGcTally(text) };
}

/** "server-side 99.4% ≤ 25 ms of 15012; GC minor 31×/101 ms" between two scrapes. */
export function serverNote(before: ServerTally, after: ServerTally, boundMs: number): string {
  return [latencyNote(before.latency, after.latency, boundMs), gcNote(before.gc, after.gc)].filter(Boolean).join('; ');
}

/** "server-side 99.4% ≤ 25 ms of 15012": the requests between two scrapes that finished within `boundMs`. */
export function latencyNote(before: LatencyTally, after: LatencyTally, boundMs: number): string {
  const n = after.count - before.count;
  const bound = boundMs / 1000;
  const a = after.within.get(bound);
  if (n <= 0 || a === undefined) return '';
  const k = a - (before.within.get(bound) ?? 0);
  return `server-side ${((100 * k) / n).toFixed(1)}% ≤ ${boundMs} ms of ${n}`;
}
