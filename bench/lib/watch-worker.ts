/**
 * The watch fleet of bench/lib/watch-load.ts in a worker thread of its own, so the receiving
 * client's GC runs on a small heap of its own instead of the bench process's, which by the watch
 * rows holds everything the earlier rows left (10 000 pod bodies, latency arrays). Its pauses
 * delay every receipt timestamp, so they showed up as delivery lag of the server's.
 *
 * Contract: receipts live in shared memory, with times on the caller's performance.now()
 * scale (both threads read the same clock; the worker shifts by the difference of the two
 * timeOrigins), so the caller reads `receipts` exactly as openWatchers' own. `close` ends the
 * streams and the worker.
 */
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { TlsClient } from './h2-load.js';
import { receiptCapacity, type WatchReceipts } from './watch-load.js';

interface Setup {
  url: string;
  tls: TlsClient;
  path: string;
  watchers: number;
  expectedEvents: number;
  sessions: number;
  seq: SharedArrayBuffer;
  at: SharedArrayBuffer;
  count: SharedArrayBuffer;
  callerTimeOrigin: number;
}

/** Receipts over shared memory; `count` is read and written atomically. */
function sharedReceipts(seq: SharedArrayBuffer, at: SharedArrayBuffer, count: SharedArrayBuffer): WatchReceipts {
  const n = new Int32Array(count);
  return {
    seq: new Int32Array(seq),
    at: new Float64Array(at),
    get count() { return Atomics.load(n, 0); },
    set count(v: number) { Atomics.store(n, 0, v); },
  };
}

export interface RemoteWatchFleet {
  receipts: WatchReceipts;
  close(): Promise<void>;
}

/** Starts the worker and resolves once every watch stream has its response headers. */
export async function openWatchersInWorker(url: string, tls: TlsClient, path: string, watchers: number, expectedEvents: number, sessions: number): Promise<RemoteWatchFleet> {
  const cap = receiptCapacity(watchers, expectedEvents);
  const setup: Setup = {
    url, tls, path, watchers, expectedEvents, sessions,
    seq: new SharedArrayBuffer(cap * 4), at: new SharedArrayBuffer(cap * 8), count: new SharedArrayBuffer(4),
    callerTimeOrigin: performance.timeOrigin,
  };
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: setup });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', (m: { ready?: boolean; error?: string }) => (m.ready ? resolve() : reject(new Error(m.error ?? 'watch worker failed'))));
    worker.once('error', reject);
  });
  return {
    receipts: sharedReceipts(setup.seq, setup.at, setup.count),
    async close() {
      worker.postMessage('close');
      await worker.terminate();
    },
  };
}

if (!isMainThread && parentPort && (workerData as Setup | undefined)?.path) {
  const s = workerData as Setup;
  const port = parentPort;
  const { openSessions, closeSessions } = await import('./h2-load.js');
  const { openWatchers } = await import('./watch-load.js');
  const shift = performance.timeOrigin - s.callerTimeOrigin;
  try {
    const sessions = await openSessions(s.url, s.tls, s.sessions);
    const fleet = await openWatchers(sessions, s.path, s.watchers, s.expectedEvents, {
      receipts: sharedReceipts(s.seq, s.at, s.count),
      now: () => performance.now() + shift,
    });
    port.on('message', () => { fleet.close(); closeSessions(sessions); });
    port.postMessage({ ready: true });
  } catch (e) {
    port.postMessage({ error: (e as Error).message });
  }
}
