/**
 * Reads a child Node process's memory after a full garbage collection, through the inspector:
 * the child is started with `--inspect-port=<port>` (inspector not active), SIGUSR1 activates it,
 * then `HeapProfiler.collectGarbage` and `process.memoryUsage()` run over the DevTools protocol.
 * Heap figures without a forced GC swing by tens of MiB with whatever garbage is pending.
 */
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import WebSocket from 'ws';

export interface GcMemory {
  heapUsed: number;
  rss: number;
  external: number;
}

function getJson(url: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      let s = '';
      res.on('data', (d: Buffer) => { s += d.toString(); });
      res.on('end', () => { try { resolve(JSON.parse(s)); } catch (e) { reject(e as Error); } });
    });
    req.setTimeout(2000, () => req.destroy(new Error('inspector list timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** Activates the inspector (idempotent) and returns its WebSocket URL, polling for up to ~5 s. */
async function inspectorUrl(proc: ChildProcess, port: number): Promise<string> {
  proc.kill('SIGUSR1');
  let wait = 50;
  for (let i = 0; i < 12; i++) {
    try {
      const list = await getJson(`http://127.0.0.1:${port}/json/list`) as Array<{ webSocketDebuggerUrl?: string }>;
      const u = list[0]?.webSocketDebuggerUrl;
      if (u) return u;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 800);
  }
  throw new Error('inspector did not come up');
}

/** Forces a full GC in the child (twice, so weak references are cleared too) and reads process.memoryUsage(). */
export async function memoryAfterGc(proc: ChildProcess, port: number): Promise<GcMemory> {
  const ws = new WebSocket(await inspectorUrl(proc, port));
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject); });
  let id = 0;
  const call = (method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> => new Promise((resolve, reject) => {
    const my = ++id;
    const timer = setTimeout(() => reject(new Error(`${method} timed out`)), 15_000);
    const onMsg = (data: WebSocket.RawData): void => {
      const m = JSON.parse(data.toString()) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
      if (m.id !== my) return;
      clearTimeout(timer);
      ws.off('message', onMsg);
      if (m.error) reject(new Error(m.error.message)); else resolve(m.result ?? {});
    };
    ws.on('message', onMsg);
    ws.send(JSON.stringify({ id: my, method, params }));
  });
  try {
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const r = await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
    const value = (r['result'] as { value?: string } | undefined)?.value;
    if (!value) throw new Error('memoryUsage evaluation failed');
    const m = JSON.parse(value) as { heapUsed: number; rss: number; external: number };
    return { heapUsed: m.heapUsed, rss: m.rss, external: m.external };
  } finally {
    ws.close();
  }
}
