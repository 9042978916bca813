/**
 * --max-connection-bytes-per-sec: long-running responses (watches, followed logs) on one
 * connection share a token bucket of that many bytes per second (burst: one second's worth).
 * Writes are queued in order and released as tokens accrue; `write` returns false while the
 * queue is non-empty and 'drain' is emitted when it empties, so writers that honour back-pressure
 * slow down instead of buffering; and the queue itself waits for the connection to drain, so a
 * reader slower than the rate holds back the queue instead of growing the socket's buffer.
 */
import type { ApiRequest, ApiResponse } from '../context.js';
import { tlsSocketOf } from './authentication.js';
import type { Exchange, Filter } from './filter.js';

export class TokenBucket {
  private tokens: number;
  private last = Date.now();
  constructor(readonly rate: number) { this.tokens = rate; }

  /** Milliseconds to wait before `n` tokens are available (0 = take them now). */
  reserve(n: number): number {
    const now = Date.now();
    this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    this.tokens -= n; // may go negative: the debt is the wait
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.rate) * 1000);
  }
}

const buckets = new WeakMap<object, TokenBucket>();

function connectionKey(req: ApiRequest): object {
  return tlsSocketOf(req) ?? req.socket;
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) { resolve(); return; }
    const t = setTimeout(done, ms);
    function done(): void { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); }
    signal.addEventListener('abort', done, { once: true });
  });
}

type WriteCb = (err?: Error | null) => void;
type Encoding = BufferEncoding;

/** Wraps res.write/res.end so bytes leave no faster than the connection's bucket allows. */
export function throttleResponse(res: ApiResponse, bucket: TokenBucket, signal: AbortSignal): void {
  const target = res as unknown as {
    write(chunk: unknown, enc?: unknown, cb?: unknown): boolean;
    end(chunk?: unknown, enc?: unknown, cb?: unknown): unknown;
    emit(event: string): boolean;
    on(event: 'drain', fn: () => void): unknown;
    off(event: 'drain', fn: () => void): unknown;
  };
  const origWrite = target.write.bind(res);
  const origEnd = target.end.bind(res);
  let queue: Promise<void> = Promise.resolve();
  let pending = 0;

  const toBuffer = (chunk: unknown, enc: unknown): Buffer =>
    Buffer.isBuffer(chunk) ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk)
      : Buffer.from(String(chunk), typeof enc === 'string' ? enc as Encoding : 'utf8');
  const enqueue = (job: () => Promise<void>): void => {
    pending++;
    queue = queue.then(job).catch(() => undefined).finally(() => {
      pending--;
      if (pending === 0) target.emit('drain');
    });
  };
  // While a job runs the wrapper emits no 'drain' of its own (pending > 0): one seen then is the
  // connection's.
  const drained = (): Promise<void> => new Promise((resolve) => {
    const done = (): void => { target.off('drain', done); signal.removeEventListener('abort', done); resolve(); };
    target.on('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
  const paced = async (buf: Buffer): Promise<void> => {
    // Pieces of at most a second's worth keep the flow steady.
    for (let off = 0; off < buf.length && !signal.aborted; off += bucket.rate) {
      const piece = buf.subarray(off, Math.min(buf.length, off + bucket.rate));
      await delay(bucket.reserve(piece.length), signal);
      if (signal.aborted) return;
      // A reader slower than the rate: wait for the connection, or its buffer grows without bound.
      if (!origWrite(piece) && !signal.aborted) await drained();
    }
  };

  target.write = (chunk: unknown, enc?: unknown, cb?: unknown): boolean => {
    const callback = (typeof enc === 'function' ? enc : cb) as WriteCb | undefined;
    const buf = toBuffer(chunk, enc);
    enqueue(async () => { await paced(buf); callback?.(); });
    return false;
  };
  target.end = (chunk?: unknown, enc?: unknown, cb?: unknown): unknown => {
    const callback = (typeof chunk === 'function' ? chunk : typeof enc === 'function' ? enc : cb) as WriteCb | undefined;
    const hasChunk = chunk !== undefined && chunk !== null && typeof chunk !== 'function';
    const buf = hasChunk ? toBuffer(chunk, enc) : undefined;
    enqueue(async () => {
      if (buf) await paced(buf);
      origEnd(callback);
    });
    return res;
  };
}

export function connectionThrottle(opts: { maxConnectionBytesPerSec: number }): Filter {
  return {
    name: 'connection-throttle',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      const rate = opts.maxConnectionBytesPerSec;
      if (rate > 0 && x.ctx.isLongRunning && x.res) {
        const key = connectionKey(x.req);
        let bucket = buckets.get(key);
        if (!bucket) { bucket = new TokenBucket(rate); buckets.set(key, bucket); }
        throttleResponse(x.res, bucket, x.ctx.signal);
      }
      return next();
    },
  };
}
