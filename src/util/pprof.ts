/**
 * /debug/pprof/ for every daemon that serves it (the API server behind its filter chain, the
 * controller manager on its own listeners): one implementation, written to either kind of
 * response (node:http's or the API server's HTTP/2 one).
 *
 * Go's pprof formats have no Node equivalent, so the profiles are V8's, in the formats Chrome
 * DevTools loads (and `speedscope`, `pprof-it` and VS Code read .cpuprofile too):
 *  - `profile?seconds=N`: a CPU profile (node:inspector Profiler) over N seconds (default 30),
 *    as .cpuprofile JSON — DevTools: Performance panel, "Load profile";
 *  - `heap`: a V8 heap snapshot (.heapsnapshot JSON) — DevTools: Memory panel, "Load". Unlike
 *    Go's heap profile (allocation stacks only) it holds the process's memory contents, keys
 *    and tokens included, so a caller turns it on only behind authentication. Taking it stops
 *    the process for as long as V8 needs to walk the heap (about a second per few hundred MB).
 * The other Go profile names answer 501 saying so.
 */
import { Session } from 'node:inspector';
import { getHeapSnapshot } from 'node:v8';
import type { StreamingResponse } from './http-serving.js';

/** The response a profile streams into. */
export type PprofResponse = StreamingResponse;

export interface PprofOptions {
  /** Ends a CPU profile early (client gone, server stopping). */
  signal: AbortSignal;
  /** Longest CPU profile; a longer ?seconds is a 400 (as Go's when it exceeds the write timeout). */
  maxSeconds: number;
  /** Whether `heap` returns a heap snapshot (memory contents): only behind authentication. */
  heapSnapshot: boolean;
}

export const PPROF_NAMES = ['allocs', 'block', 'cmdline', 'goroutine', 'heap', 'mutex', 'profile', 'threadcreate', 'trace'] as const;

function plain(res: PprofResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.statusCode = code;
  res.setHeader('content-type', type);
  res.setHeader('x-content-type-options', 'nosniff');
  res.end(body);
}

/** The index page (`/debug/pprof/`): links relative to it. */
export function pprofIndex(heapSnapshot: boolean): string {
  const what = (n: string): string => {
    if (n === 'profile') return 'V8 CPU profile over ?seconds=N (default 30), .cpuprofile JSON for Chrome DevTools';
    if (n === 'heap' && heapSnapshot) return 'V8 heap snapshot, .heapsnapshot JSON for Chrome DevTools (holds memory contents)';
    return 'not available: 501';
  };
  const rows = PPROF_NAMES.map((n) => `<li><a href="${n}">${n}</a>: ${what(n)}</li>`).join('\n');
  return `<html><head><title>/debug/pprof/</title></head><body>\n<p>profiles:</p><ul>\n${rows}\n</ul></body></html>\n`;
}

/**
 * Answers `/debug/pprof/<name>` (name '' is the index). Resolves once the response ended;
 * never rejects (failures become 500 replies while nothing was sent yet).
 */
export async function servePprof(name: string, query: URLSearchParams, res: PprofResponse, o: PprofOptions): Promise<void> {
  if (name === '') { plain(res, 200, pprofIndex(o.heapSnapshot), 'text/html; charset=utf-8'); return; }
  if (name === 'profile') {
    const s = Number(query.get('seconds') ?? '30');
    if (!Number.isFinite(s) || s <= 0) { plain(res, 400, 'seconds must be a positive number\n'); return; }
    if (s > o.maxSeconds) { plain(res, 400, `profile duration exceeds the server's limit of ${Math.floor(o.maxSeconds)} seconds\n`); return; }
    let body: string;
    try {
      body = await cpuProfile(s, o.signal);
    } catch (e) {
      if (!res.writableEnded) plain(res, 500, `profiling failed: ${(e as Error).message}\n`);
      return;
    }
    if (o.signal.aborted || res.writableEnded) return;
    res.setHeader('content-disposition', 'attachment; filename="profile.cpuprofile"');
    plain(res, 200, body, 'application/json');
    return;
  }
  if (name === 'heap' && o.heapSnapshot) { await heapSnapshot(res, o.signal); return; }
  plain(res, 501, `profile "${name}" is not available in this implementation; use /debug/pprof/profile for a CPU profile\n`);
}

/**
 * Records a V8 CPU profile of this process for `seconds` (ended early by the signal) and returns
 * it as .cpuprofile JSON.
 */
export async function cpuProfile(seconds: number, signal: AbortSignal): Promise<string> {
  const session = new Session();
  session.connect();
  const post = <T>(method: string): Promise<T> => new Promise((resolve, reject) => {
    session.post(method, {}, (err, r) => (err ? reject(err) : resolve(r as T)));
  });
  try {
    await post('Profiler.enable');
    await post('Profiler.start');
    await new Promise<void>((resolve) => {
      if (signal.aborted) { resolve(); return; }
      const done = (): void => { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); };
      const t = setTimeout(done, seconds * 1000);
      signal.addEventListener('abort', done, { once: true });
    });
    return JSON.stringify((await post<{ profile: unknown }>('Profiler.stop')).profile);
  } finally {
    session.disconnect();
  }
}

/** Streams a heap snapshot into the response, waiting for each chunk to be taken (no buffering of the whole). */
async function heapSnapshot(res: PprofResponse, signal: AbortSignal): Promise<void> {
  const snapshot = getHeapSnapshot();
  res.statusCode = 200;
  res.setHeader('content-type', 'application/json');
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('content-disposition', 'attachment; filename="heap.heapsnapshot"');
  try {
    for await (const chunk of snapshot) {
      if (signal.aborted || res.writableEnded) break;
      await new Promise<void>((resolve, reject) => { res.write(chunk as Buffer, (err) => (err ? reject(err) : resolve())); });
    }
  } catch {
    // The client went away mid-snapshot: nothing to tell it.
  } finally {
    snapshot.destroy();
    if (!res.writableEnded) res.end();
  }
}

/**
 * `/debug/pprof` and below on a component's own listener: the bare path redirects to the index
 * (as Go's mux), the rest is servePprof, ended early when the client goes or `stopping` fires.
 * A heap snapshot only with `heapSnapshot` (an authorized caller on the secure port).
 */
export function servePprofPath(pathname: string, query: URLSearchParams, res: PprofResponse & { writeHead(code: number, headers: Record<string, string>): unknown; on(ev: 'close', fn: () => void): unknown },
  stopping: AbortSignal, heapSnapshot: boolean): void {
  if (pathname === '/debug/pprof') { res.writeHead(301, { location: '/debug/pprof/' }); res.end(); return; }
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  const stop = (): void => ac.abort();
  stopping.addEventListener('abort', stop, { once: true });
  void servePprof(pathname.slice('/debug/pprof/'.length), query, res, { signal: ac.signal, maxSeconds: 300, heapSnapshot })
    .finally(() => stopping.removeEventListener('abort', stop));
}
