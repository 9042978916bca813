/**
 * h2load (nghttp2's C load generator, Debian package nghttp2-client) as a second client for the
 * GET rows and the create rows (one body with generateName): it drives a server several times
 * harder than a Node client can, so the server, not the client, is what the row measures (as in
 * shared/research/perf-anchors.md §2a). h2load has no client certificates, so the API server is
 * asked with a bearer token.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { joinSamples } from './h2-load.js';

export interface H2loadResult {
  /** Requests per second h2load reports. */
  rps: number;
  /** Requests answered 2xx. */
  ok: number;
  /** Requests sent (all statuses). */
  total: number;
  /** Mean and max time per request, as h2load prints them (e.g. "4.21ms"). */
  mean: string;
  max: string;
  /** Per-request latencies in ms (from h2load's --log-file), for percentiles. */
  lat: Float64Array;
}

let available: boolean | undefined;
export function h2loadAvailable(): boolean {
  available ??= spawnSync('h2load', ['--version']).status === 0;
  return available;
}

/**
 * Runs h2load with one connection and up to `streams` concurrent streams for `seconds` (pinned to
 * `cpu` when given): as fast as the server answers, or `rps` requests per second (an offered
 * rate, as load generators that quote "p99 at N QPS" use). With `data` (a file) every request
 * POSTs that file. The first `warmUpSeconds` (default 1) are not measured. With `requests`
 * instead of `seconds`, exactly that many requests, all measured. Several URLs are requested in
 * turn (h2load's round robin), e.g. the pages of a paginated list.
 */
export async function runH2load(url: string | readonly string[], o: ({ seconds: number; warmUpSeconds?: number } | { requests: number }) & { streams: number; headers?: Record<string, string>; cpu?: number; rps?: number; data?: string }): Promise<H2loadResult> {
  const logDir = mkdtempSync(join(tmpdir(), 'h2load-'));
  const log = join(logDir, 'requests.tsv');
  // Durations in ms: h2load reads "1.5" as an error but "1500ms" as meant.
  const ms = (sec: number): string => `${Math.round(sec * 1000)}ms`;
  const length = 'requests' in o ? ['-n', String(o.requests)] : ['-D', ms(o.seconds), `--warm-up-time=${ms(o.warmUpSeconds ?? 1)}`];
  const args = ['-c', '1', '-m', String(o.streams), ...length, `--log-file=${log}`];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.rps !== undefined) args.push(`--rps=${o.rps}`);
  if (o.data !== undefined) args.push(`--data=${o.data}`);
  args.push(...(typeof url === 'string' ? [url] : url));
  const cmd = o.cpu === undefined ? 'h2load' : 'taskset';
  const argv = o.cpu === undefined ? args : ['-c', String(o.cpu), 'h2load', ...args];
  // Spawned, not spawnSync: the caller's own sessions keep being served while h2load runs.
  const text = await new Promise<string>((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), (('seconds' in o ? o.seconds : 0) + 30) * 1000);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', () => { clearTimeout(timer); resolve(out); });
  });
  let lat = new Float64Array(0);
  try {
    // Columns: start (µs since the epoch), status, µs until the response ended.
    const rows = readFileSync(log, 'utf8').split('\n').filter((l) => l !== '');
    lat = Float64Array.from(rows, (l) => Number(l.split('\t')[2]) / 1000);
  } catch { /* no log: percentiles unknown */ } finally {
    rmSync(logDir, { recursive: true, force: true });
  }
  const rps = /finished in [^,]*, ([\d.]+) req\/s/.exec(text);
  const codes = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(text);
  const t = /time for request:\s+(\S+)\s+(\S+)\s+(\S+)/.exec(text);
  if (!rps || !codes) throw new Error(`h2load gave no figures: ${text.slice(-500)}`);
  const ok = Number(codes[1]);
  return { rps: Number(rps[1]), ok, total: ok + Number(codes[2]) + Number(codes[3]) + Number(codes[4]), mean: t?.[3] ?? '?', max: t?.[2] ?? '?', lat };
}

/** Requests answered 2xx per second. */
export function okRate(r: H2loadResult): number {
  return r.total > 0 ? r.rps * (r.ok / r.total) : 0;
}

/**
 * One result of several h2load runs of equal length: counts summed, latencies joined, the rate
 * over their measured time together (the mean of their rates).
 */
export function mergeH2load(parts: readonly H2loadResult[]): H2loadResult {
  let ok = 0;
  let total = 0;
  for (const p of parts) { ok += p.ok; total += p.total; }
  const lat = joinSamples(parts);
  let max = 0;
  let sum = 0;
  for (const v of lat) { sum += v; if (v > max) max = v; }
  const rps = parts.length > 0 ? parts.reduce((a, p) => a + p.rps, 0) / parts.length : 0;
  return { rps, ok, total, lat, mean: lat.length ? `${(sum / lat.length).toFixed(2)}ms` : '?', max: lat.length ? `${max.toFixed(2)}ms` : '?' };
}
