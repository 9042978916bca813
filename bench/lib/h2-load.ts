/**
 * A small closed-loop HTTP/2 load generator for benchmarks: N concurrent streams spread over a
 * few TLS sessions, each loop issuing its next request as soon as the previous one completes.
 * Latency is measured per request (send to last byte) in milliseconds.
 */
import * as http2 from 'node:http2';
import { installLeanAsyncResourceBind } from '../../src/util/async-resource-bind.js';
import { adoptStreamTable } from '../../src/util/h2-stream-table.js';
import { cpuTicks, stealPercent } from './steal.js';
import { probeNow, type Slice } from './disk-probe.js';
import { pct } from './closed-loop.js';

export interface TlsClient {
  ca: string;
  cert?: string;
  key?: string;
}

export interface BenchRequest {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface BenchResponse {
  status: number;
  body: Buffer;
  /**
   * Milliseconds from sending the request to its response headers: for a response the server
   * builds whole before answering (a LIST), the server's time without the body's transfer.
   */
  headersMs: number;
}

/** Opens `count` HTTP/2 sessions to `url` and waits until each is connected. */
export async function openSessions(url: string, tls: TlsClient, count: number): Promise<http2.ClientHttp2Session[]> {
  // The load client's own GC pauses are part of every latency it measures: the same two fixes
  // as the daemons' clients (util/async-resource-bind.ts, util/h2-stream-table.ts).
  installLeanAsyncResourceBind();
  return Promise.all(Array.from({ length: count }, () => new Promise<http2.ClientHttp2Session>((resolve, reject) => {
    const s = http2.connect(url, { ...tls, settings: { initialWindowSize: 4 * 1024 * 1024 } });
    adoptStreamTable(s);
    s.once('error', reject);
    s.once('connect', () => {
      s.off('error', reject);
      s.on('error', () => { /* surfaced through the streams */ });
      s.setLocalWindowSize(16 * 1024 * 1024);
      resolve(s);
    });
  })));
}

export function closeSessions(sessions: http2.ClientHttp2Session[]): void {
  for (const s of sessions) s.destroy();
}

/** One request on an open session; resolves with the status and the whole body. */
export function send(session: http2.ClientHttp2Session, r: BenchRequest, timeoutMs = 30_000): Promise<BenchResponse> {
  return new Promise((resolve, reject) => {
    const headers: http2.OutgoingHttpHeaders = { ':path': r.path, ':method': r.method ?? 'GET', ...(r.headers ?? {}) };
    const t0 = performance.now();
    const req = session.request(headers, { endStream: r.body === undefined });
    let status = 0;
    let headersMs = Number.NaN;
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => { req.close(http2.constants.NGHTTP2_CANCEL); reject(new Error(`${r.method ?? 'GET'} ${r.path} timed out`)); }, timeoutMs);
    req.on('response', (h) => { status = Number(h[':status']); headersMs = performance.now() - t0; });
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => { clearTimeout(timer); resolve({ status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), headersMs }); });
    req.on('error', (e) => { clearTimeout(timer); reject(e); });
    if (r.body !== undefined) req.end(r.body);
  });
}

export interface LoadResult {
  ops: number;
  errors: number;
  seconds: number;
  /** Latencies of successful requests, ms. */
  lat: Float64Array;
  firstError?: string;
  /** Percent of the machine's CPU time stolen by the hypervisor during the run (see steal.ts). */
  stealPct?: number;
}

export interface LoadOptions {
  sessions: http2.ClientHttp2Session[];
  /** Concurrent streams (closed loops); loop i uses session i % sessions.length. */
  concurrency: number;
  durationMs: number;
  /** Builds request number `i` (0-based, global across loops). */
  request: (i: number) => BenchRequest;
  /** Status codes counted as success (default 2xx). */
  ok?: (status: number) => boolean;
  /** Called with each successful response (e.g. to record a resourceVersion). */
  onResponse?: (i: number, res: BenchResponse) => void;
  /** Stop after this many requests (default unbounded). */
  maxOps?: number;
}

/** Runs closed loops for `durationMs` (or `maxOps` requests) and collects latencies. */
export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const ok = o.ok ?? ((s: number) => s >= 200 && s < 300);
  const lat = new Histogram();
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const max = o.maxOps ?? Number.POSITIVE_INFINITY;
  const start = performance.now();
  const deadline = start + o.durationMs;
  const ticks0 = cpuTicks();
  await Promise.all(Array.from({ length: o.concurrency }, async (_, loop) => {
    const session = o.sessions[loop % o.sessions.length]!;
    while (performance.now() < deadline && next < max) {
      const i = next++;
      const t0 = performance.now();
      try {
        const res = await send(session, o.request(i));
        if (ok(res.status)) {
          lat.add(performance.now() - t0);
          o.onResponse?.(i, res);
        } else {
          errors++;
          firstError ??= `HTTP ${res.status}: ${res.body.toString().slice(0, 200)}`;
        }
      } catch (e) {
        errors++;
        firstError ??= (e as Error).message;
        if (session.destroyed) return;
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const stealPct = stealPercent(ticks0, cpuTicks());
  return { ops: lat.count, errors, seconds, lat: lat.values(), ...(firstError ? { firstError } : {}), ...(stealPct === undefined ? {} : { stealPct }) };
}

/**
 * Runs `loads` one after another, `rounds` times over, and merges each load's slices into one
 * result with `merge`. Rows compared with each other (a server and its baseline) then share the
 * machine's fast and slow seconds alike, which one row after the other does not: this VM's
 * speed changes within seconds. With `slices`, each load's time slices are added to
 * `slices[i]` (on bench/lib/disk-probe.ts' clock).
 */
export async function interleave<T>(rounds: number, loads: readonly (() => Promise<T>)[], merge: (parts: readonly T[]) => T,
  slices?: Slice[][]): Promise<T[]> {
  const parts: T[][] = loads.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < loads.length; i++) {
      const from = probeNow();
      parts[i]!.push(await loads[i]!());
      if (slices) (slices[i] ??= []).push([from, probeNow()]);
    }
  }
  return parts.map(merge);
}

/** The latency samples of several runs, joined in order. */
export function joinSamples(parts: readonly { readonly lat: Float64Array }[]): Float64Array {
  const lat = new Float64Array(parts.reduce((n, p) => n + p.lat.length, 0));
  let at = 0;
  for (const p of parts) { lat.set(p.lat, at); at += p.lat.length; }
  return lat;
}

/** One result of several runs of the same load: counts and seconds summed, latencies joined. */
export function mergeLoads(parts: readonly LoadResult[]): LoadResult {
  let ops = 0;
  let errors = 0;
  let seconds = 0;
  let stealSeconds = 0;
  let stealWeighted = 0;
  let firstError: string | undefined;
  for (const p of parts) {
    ops += p.ops;
    errors += p.errors;
    seconds += p.seconds;
    firstError ??= p.firstError;
    if (p.stealPct !== undefined) { stealWeighted += p.stealPct * p.seconds; stealSeconds += p.seconds; }
  }
  return {
    ops, errors, seconds, lat: joinSamples(parts),
    ...(firstError ? { firstError } : {}),
    ...(stealSeconds > 0 ? { stealPct: stealWeighted / stealSeconds } : {}),
  };
}

/** Growable store of samples (ms) with exact percentiles over the sorted copy. */
export class Histogram {
  private buf = new Float64Array(1024);
  count = 0;
  add(v: number): void {
    if (this.count === this.buf.length) {
      const b = new Float64Array(this.buf.length * 2);
      b.set(this.buf);
      this.buf = b;
    }
    this.buf[this.count++] = v;
  }
  values(): Float64Array {
    return this.buf.slice(0, this.count);
  }
}

/** The p-th percentile (0–100) of the samples; NaN when empty. */
export function percentile(samples: Float64Array, p: number): number {
  if (samples.length === 0) return Number.NaN;
  return pct(Float64Array.from(samples).sort(), p);
}
