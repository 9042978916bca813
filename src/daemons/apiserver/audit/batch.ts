/**
 * Batch mode (`--audit-{log,webhook}-mode=batch`), as Kubernetes' buffered backend: events go
 * into a bounded buffer and return at once; one loop takes batches of up to `max-size` events
 * (or fewer once `max-wait` has passed since the first waiting event), waits for the throttle
 * (`throttle-qps` batches a second, `throttle-burst` at once) and hands each batch to the
 * backend, one at a time, so a backend that retries (the webhook) lets events gather in the
 * buffer rather than being lost. A full buffer drops the new events: counted in
 * apiserver_audit_error_total{plugin="buffered"} and logged, never blocking the request.
 */
import type { Logger } from 'pino';
import type { AuditEvent } from './event.js';
import type { AuditBackend } from './format.js';

export interface BatchOptions {
  bufferSize: number;
  maxBatchSize: number;
  maxWaitMs: number;
  /** Absent: no throttle. */
  throttle?: { qps: number; burst: number };
}

/** A token bucket: `burst` batches at once, refilled at `qps`. */
class Throttle {
  private tokens: number;
  private last = Date.now();
  constructor(private readonly qps: number, private readonly burst: number) { this.tokens = burst; }

  /** Milliseconds to wait before the next batch may go (0 = now); takes the token. */
  take(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 || this.qps <= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }
}

const DROP_LOG_INTERVAL_MS = 1000;
const SHUTDOWN_GRACE_MS = 10_000;

export class BufferedBackend implements AuditBackend {
  readonly name = 'buffered';
  /** Events, or what the backend keeps of them (prepare). */
  private buffer: unknown[] = [];
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly done: Promise<void>;
  private readonly throttle: Throttle | undefined;
  private dropped = 0;
  private lastDropLog = 0;
  /** A delegate that takes json lines and keeps prepared lines (the log) takes them buffered too. */
  readonly processLine: ((line: string, ascii: boolean) => void) | undefined;

  constructor(
    private readonly delegate: AuditBackend,
    private readonly opts: BatchOptions,
    private readonly log: Logger,
    private readonly onDrop: (n: number) => void,
  ) {
    if (opts.throttle) this.throttle = new Throttle(opts.throttle.qps, opts.throttle.burst);
    const prepareLine = delegate.prepareLine?.bind(delegate);
    this.processLine = delegate.processLine && prepareLine && delegate.processPrepared ? (line, ascii) => this.addLine(line, ascii, prepareLine) : undefined;
    this.done = this.loop();
  }

  process(events: AuditEvent[]): void {
    let dropped = 0;
    const prepare = this.delegate.prepare?.bind(this.delegate);
    for (const ev of events) {
      if (this.stopping || this.buffer.length >= this.opts.bufferSize) dropped++;
      else this.buffer.push(prepare ? prepare(ev) : ev);
    }
    if (dropped) this.drop(dropped);
    this.kick();
  }

  /** One json line, prepared by the backend (the log encodes it now) unless the buffer is full. */
  private addLine(line: string, ascii: boolean, prepareLine: (line: string, ascii: boolean) => unknown): void {
    if (this.stopping || this.buffer.length >= this.opts.bufferSize) { this.drop(1); return; }
    this.buffer.push(prepareLine(line, ascii));
    this.kick();
  }

  private kick(): void {
    if (this.buffer.length >= this.opts.maxBatchSize) this.release();
    else if (this.buffer.length && !this.timer && this.wake) this.timer = setTimeout(() => this.release(), this.opts.maxWaitMs);
  }

  /** Writes out the buffer; a backend still stuck after the grace period is closed under it. */
  async shutdown(graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
    this.stopping = true;
    this.release();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.done, new Promise<void>((r) => { timer = setTimeout(r, graceMs); })]);
    clearTimeout(timer);
    await this.delegate.shutdown();
    await this.done;
  }

  private drop(n: number): void {
    this.onDrop(n);
    this.dropped += n;
    const now = Date.now();
    if (now - this.lastDropLog >= DROP_LOG_INTERVAL_MS) {
      this.log.error({ dropped: this.dropped, backend: this.delegate.name }, "Error in audit plugin 'buffered': audit buffer queue blocked, events dropped");
      this.lastDropLog = now;
      this.dropped = 0;
    }
  }

  private release(): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Resolves when a batch is ready: full, its wait over, or shutting down. */
  private collect(): Promise<void> {
    if (this.stopping || this.buffer.length >= this.opts.maxBatchSize) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
      if (this.buffer.length) this.timer = setTimeout(() => this.release(), this.opts.maxWaitMs);
    });
  }

  private async loop(): Promise<void> {
    for (;;) {
      await this.collect();
      const batch = this.buffer.splice(0, this.opts.maxBatchSize);
      if (!batch.length) {
        if (this.stopping) return;
        continue;
      }
      if (this.throttle && !this.stopping) {
        const wait = this.throttle.take();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      try {
        const d = this.delegate;
        await (d.processPrepared ? d.processPrepared(batch) : d.process(batch as AuditEvent[]));
      } catch (e) {
        this.log.error({ err: (e as Error).message, backend: this.delegate.name }, 'audit batch failed');
      }
    }
  }
}
