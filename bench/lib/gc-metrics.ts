/**
 * The server's own GC pauses during a bench row, from prom-client's default
 * `nodejs_gc_duration_seconds` histogram on /metrics (labels kind="minor" | "major" |
 * "incremental" | "weakcb"). A row's p99 is often a GC pause that stopped every request in
 * flight; printing the pauses next to it says so.
 */
import type * as http2 from 'node:http2';
import { PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { send } from './h2-load.js';

/** Per GC kind: pauses, their total seconds, and pauses of 10 ms or more. */
export type GcTally = Map<string, { count: number; sum: number; over10ms: number }>;

/** Reads the histogram from /metrics; an empty tally when the server does not export it. */
export async function scrapeGc(session: http2.ClientHttp2Session): Promise<GcTally> {
  let text: string;
  try {
    text = (await send(session, { path: '/metrics' })).body.toString();
  } catch {
    return new Map();
  }
  return parseGcTally(text);
}

/** The GC histogram's series in Prometheus text (what /metrics serves). */
export function parseGcTally(text: string): GcTally {
  const out: GcTally = new Map();
  const entry = (kind: string) => {
    let e = out.get(kind);
    if (!e) out.set(kind, e = { count: 0, sum: 0, over10ms: 0 });
    return e;
  };
  const le10 = new Map<string, number>();
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(bucket|sum|count)\{([^}]*)\} ([0-9.e+-]+)$/gm)) {
    const kind = /kind="([^"]*)"/.exec(m[2]!)?.[1];
    if (!kind) continue;
    const v = Number(m[3]);
    if (m[1] === 'sum') entry(kind).sum = v;
    else if (m[1] === 'count') entry(kind).count = v;
    else if (/le="0\.01"/.test(m[2]!)) le10.set(kind, v);
  }
  for (const [kind, e] of out) e.over10ms = e.count - (le10.get(kind) ?? e.count);
  return out;
}

/**
 * "GC minor 61×/212 ms, major 1×/23 ms (1 ≥ 10 ms)": the pauses between two scrapes. With
 * `countsOnly` (durations that mean nothing, e.g. under valgrind): "GC minor 61, major 1".
 */
export function gcNote(before: GcTally, after: GcTally, countsOnly = false): string {
  const parts: string[] = [];
  for (const kind of ['minor', 'major', 'incremental']) {
    const a = after.get(kind);
    if (!a) continue;
    const b = before.get(kind) ?? { count: 0, sum: 0, over10ms: 0 };
    const n = a.count - b.count;
    if (n <= 0) continue;
    if (countsOnly) { parts.push(`${kind} ${n}`); continue; }
    const long = a.over10ms - b.over10ms;
    parts.push(`${kind} ${n}×/${((a.sum - b.sum) * 1000).toFixed(0)} ms${long > 0 ? ` (${long} ≥ 10 ms)` : ''}`);
  }
  return parts.length ? `GC ${parts.join(', ')}` : '';
}

/** `sum` plus what happened between `before` and `after` (per kind), as a tally that starts from nothing. */
export function addGcDelta(sum: GcTally, before: GcTally, after: GcTally): GcTally {
  const out: GcTally = new Map([...sum].map(([k, v]) => [k, { ...v }]));
  for (const [kind, a] of after) {
    const b = before.get(kind) ?? { count: 0, sum: 0, over10ms: 0 };
    const t = out.get(kind) ?? { count: 0, sum: 0, over10ms: 0 };
    out.set(kind, { count: t.count + a.count - b.count, sum: t.sum + a.sum - b.sum, over10ms: t.over10ms + a.over10ms - b.over10ms });
  }
  return out;
}

/**
 * This process's own GC pauses so far, as a GcTally (the load client's: a pause of the client
 * delays every response it is waiting for, so it is part of the latencies it measures). The
 * first call starts watching; pauses before it are not counted.
 */
export function clientGc(): GcTally {
  if (!clientTally) {
    clientTally = new Map();
    const tally = clientTally;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = GC_KINDS.get(((e as { detail?: { kind?: number } }).detail)?.kind ?? 0) ?? 'other';
        let t = tally.get(kind);
        if (!t) tally.set(kind, t = { count: 0, sum: 0, over10ms: 0 });
        t.count++;
        t.sum += e.duration / 1000;
        if (e.duration >= 10) t.over10ms++;
      }
    }).observe({ entryTypes: ['gc'] });
  }
  return new Map([...clientTally].map(([k, v]) => [k, { ...v }]));
}

let clientTally: GcTally | undefined;
/** perf_hooks' GC kinds, named as prom-client names them. */
const GC_KINDS = new Map([
  [perf.NODE_PERFORMANCE_GC_MAJOR, 'major'], [perf.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [perf.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'], [perf.NODE_PERFORMANCE_GC_WEAKCB, 'weakcb'],
]);
