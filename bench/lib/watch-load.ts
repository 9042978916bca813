/**
 * Watch fan-out measurement: W watch streams on one collection, receipt times of every event
 * line recorded by a sequence number embedded in the object (`"seq":"<n>"` in its data), so the
 * caller can compute delivery lag against the time each write was sent or acknowledged.
 * Lines are scanned for the marker, not JSON-parsed, to keep the client's CPU cost low.
 */
import type * as http2 from 'node:http2';

const MARKER = Buffer.from('"seq":"');
const NL = 0x0a;

export interface WatchReceipts {
  /** Parallel arrays: event sequence number and receipt time (performance.now()). */
  seq: Int32Array;
  at: Float64Array;
  count: number;
}

export interface WatchFleet {
  receipts: WatchReceipts;
  /** Events received per watcher. */
  perWatcher: Int32Array;
  close(): void;
}

export interface WatchFleetOptions {
  /** Where receipts go (e.g. shared memory a worker thread fills); fresh arrays when absent. */
  receipts?: WatchReceipts;
  /** The receipt clock; performance.now() when absent. */
  now?: () => number;
}

/** Receipt storage for `watchers` × `expectedEvents` deliveries (with room to spare). */
export function receiptCapacity(watchers: number, expectedEvents: number): number {
  return Math.max(1024, watchers * expectedEvents + 1024);
}

/** Opens `watchers` watch streams on `path` spread round-robin over `sessions`; resolves once every stream has its response headers. */
export async function openWatchers(sessions: http2.ClientHttp2Session[], path: string, watchers: number, expectedEvents: number, o: WatchFleetOptions = {}): Promise<WatchFleet> {
  const receipts: WatchReceipts = o.receipts ?? { seq: new Int32Array(receiptCapacity(watchers, expectedEvents)), at: new Float64Array(receiptCapacity(watchers, expectedEvents)), count: 0 };
  const cap = receipts.seq.length;
  const now = o.now ?? (() => performance.now());
  const perWatcher = new Int32Array(watchers);
  const streams: http2.ClientHttp2Stream[] = [];
  const record = (w: number, seq: number, at: number): void => {
    perWatcher[w]!++;
    if (receipts.count < cap) {
      receipts.seq[receipts.count] = seq;
      receipts.at[receipts.count] = at;
      receipts.count++;
    }
  };
  await Promise.all(Array.from({ length: watchers }, (_, w) => new Promise<void>((resolve, reject) => {
    const s = sessions[w % sessions.length]!;
    const req = s.request({ ':path': path, ':method': 'GET', accept: 'application/json' });
    streams.push(req);
    let rest: Buffer | undefined;
    req.on('response', (h) => {
      const status = Number(h[':status']);
      if (status === 200) resolve(); else reject(new Error(`watch answered HTTP ${status}`));
    });
    req.on('error', (e) => reject(e));
    req.on('data', (chunk: Buffer) => {
      const at = now();
      const buf = rest ? Buffer.concat([rest, chunk]) : chunk;
      let start = 0;
      for (let nl = buf.indexOf(NL, start); nl >= 0; nl = buf.indexOf(NL, start)) {
        const m = buf.indexOf(MARKER, start);
        if (m >= 0 && m < nl) {
          let n = 0;
          for (let i = m + MARKER.length; i < nl; i++) {
            const c = buf[i]!;
            if (c < 0x30 || c > 0x39) break;
            n = n * 10 + (c - 0x30);
          }
          record(w, n, at);
        }
        start = nl + 1;
      }
      rest = start < buf.length ? buf.subarray(start) : undefined;
    });
  })));
  return {
    receipts,
    perWatcher,
    close(): void {
      for (const r of streams) if (!r.destroyed) r.close();
    },
  };
}
