/**
 * Small pieces the daemons' health/metrics/profiling listeners share: plain replies, listening
 * on a port, and a V8 CPU profile for /debug/pprof/profile.
 */
import type { Server, ServerResponse } from 'node:http';
import { Session } from 'node:inspector';

/** Answers with a plain body (text by default) and no content sniffing. */
export function send(res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': type, 'x-content-type-options': 'nosniff' });
  res.end(body);
}

/** Listens and resolves with the bound port (useful with port 0); rejects on a bind error. */
export function listen(srv: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => { srv.off('error', reject); resolve((srv.address() as { port: number }).port); });
  });
}

/** Stops listening and drops open connections of every server; resolves when all are closed. */
export function closeServers(servers: readonly Server[]): Promise<void> {
  return Promise.all(servers.map((s) => new Promise<void>((resolve) => { s.close(() => resolve()); s.closeAllConnections(); }))).then(() => undefined);
}

/**
 * Records a V8 CPU profile of this process for `seconds` (ended early by the signal) and returns
 * it as .cpuprofile JSON (Chrome DevTools' format; Go's pprof format has no Node equivalent).
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
      const t = setTimeout(resolve, seconds * 1000);
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    return JSON.stringify((await post<{ profile: unknown }>('Profiler.stop')).profile);
  } finally {
    session.disconnect();
  }
}
