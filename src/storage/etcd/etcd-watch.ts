/**
 * One Backend watch on one etcd gRPC watch stream.
 *
 * Contract (what it guarantees):
 * - Batches come out in revision order, one batch per revision: etcd sends every event of a
 *   revision in one response (we never ask for fragments) and a response may carry several
 *   revisions, so responses are split at revision boundaries.
 * - With progressNotify, the watch asks etcd for a progress notification every
 *   `progressIntervalMs`; etcd answers only for a watcher that has caught up, so an empty
 *   batch at revision R means every event up to R was delivered before it.
 * - A start revision below the compaction point ends the iteration with 'Compacted'
 *   (details.compactRevision is etcd's compaction point).
 * - A lost stream, or a consumer that lets more than `maxBufferedEvents` events pile up,
 *   ends the iteration with 'Unavailable' after the batches already buffered; the caller
 *   resumes from the last revision it saw.
 * What it never does: reconnect on its own (a silent resume could hide a compaction), or
 * deliver anything after close() or abort.
 */
import type { Logger } from 'pino';
import type { IDuplexStream, IWatchRequest, IWatchResponse, IEvent } from 'etcd3';
import type { Watch, WatchBatch, WatchEvent, WatchOptions } from '../interface.js';
import { StorageError } from '../errors.js';
import { rev, toKeyValue } from './etcd-kv.js';
import { toStorageError } from './etcd-errors.js';

/**
 * etcd before 3.4.31 / 3.5.13 can answer a progress request ahead of events still queued for
 * the watcher (etcd-io/etcd#15220), which would break "progress R means all events up to R
 * were delivered"; Kubernetes draws the line at the same versions.
 */
export function answersProgressRequestsInOrder(version: string): boolean {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m) return false;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (major !== 3) return major > 3;
  if (minor === 4) return patch >= 31;
  if (minor === 5) return patch >= 13;
  return minor > 5;
}

export type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;

export interface EtcdWatchDeps {
  readonly openStream: () => Promise<WatchStream>;
  /** Told about every compaction point etcd reveals. */
  readonly onCompactRevision: (revision: number) => void;
  /** Told once when the watch is closed or has failed: it holds no stream any more. */
  readonly onEnded: (w: EtcdWatch) => void;
  readonly log: Logger;
  readonly maxBufferedEvents: number;
  /** How often to ask etcd for progress (progressNotify watches only); 0: rely on etcd's own interval. */
  readonly progressIntervalMs: number;
}

export class EtcdWatch implements Watch {
  private readonly queue: WatchBatch[] = [];
  private bufferedEvents = 0;
  private failure: StorageError | undefined;
  private closed = false;
  private iterating = false;
  private wake: (() => void) | undefined;
  private stream: WatchStream | undefined;
  private progressTimer: NodeJS.Timeout | undefined;
  /** The revision delivered batches have brought the watcher up to. */
  private lastRevision: number;
  private readonly onAbort = () => this.close();

  constructor(
    private readonly deps: EtcdWatchDeps,
    private readonly key: Buffer,
    private readonly rangeEnd: Buffer | undefined,
    private readonly opts: WatchOptions,
  ) {
    this.lastRevision = opts.fromRevision && opts.fromRevision > 0 ? opts.fromRevision - 1 : 0;
    if (opts.signal?.aborted) {
      this.closed = true;
      return;
    }
    opts.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.start().catch((e: unknown) => this.fail(toStorageError(e, `watch ${this.keyText()}`)));
  }

  /** True once closed or failed. */
  get ended(): boolean {
    return this.closed || this.failure !== undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.stopStream();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    this.deps.onEnded(this);
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchBatch> {
    if (this.iterating) throw new StorageError('InvalidArgument', 'a watch can be iterated only once');
    this.iterating = true;
    try {
      for (;;) {
        const batch = this.queue.shift();
        if (batch) {
          this.bufferedEvents -= batch.events.length;
          yield batch;
          continue;
        }
        if (this.closed) return;
        if (this.failure) throw this.failure;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      this.close();
    }
  }

  private keyText(): string {
    return this.key.toString('utf8') + (this.rangeEnd ? '*' : '');
  }

  private async start(): Promise<void> {
    const stream = await this.deps.openStream();
    if (this.closed) {
      stream.on('error', () => undefined);
      stream.end();
      stream.cancel();
      return;
    }
    this.stream = stream;
    stream.on('data', (res) => this.onResponse(res));
    stream.on('error', (err) => {
      if (!this.closed) this.fail(toStorageError(err, `watch ${this.keyText()}`));
    });
    stream.on('end', () => {
      if (!this.closed) this.fail(new StorageError('Unavailable', `etcd watch ${this.keyText()}: the stream ended`));
    });
    stream.write({
      create_request: {
        key: this.key,
        range_end: this.rangeEnd,
        start_revision: this.opts.fromRevision && this.opts.fromRevision > 0 ? this.opts.fromRevision : 0,
        prev_kv: true,
        progress_notify: this.opts.progressNotify === true,
      },
    });
  }

  private onResponse(res: IWatchResponse): void {
    if (this.closed || this.failure) return;
    if (res.canceled) {
      const compactRevision = rev(res.compact_revision);
      if (compactRevision > 0) {
        this.deps.onCompactRevision(compactRevision);
        this.fail(
          new StorageError(
            'Compacted',
            `etcd watch ${this.keyText()}: revision ${this.opts.fromRevision ?? 0} has been compacted (compaction point ${compactRevision})`,
            rev(res.header?.revision) > 0 ? { compactRevision, currentRevision: rev(res.header?.revision) } : { compactRevision },
          ),
        );
      } else {
        this.fail(new StorageError('Unavailable', `etcd watch ${this.keyText()} canceled by etcd: ${res.cancel_reason || 'no reason given'}`));
      }
      return;
    }
    if (res.created) {
      if (this.opts.progressNotify && this.deps.progressIntervalMs > 0) {
        this.progressTimer = setInterval(() => this.requestProgress(), this.deps.progressIntervalMs);
        this.progressTimer.unref();
      }
      if (!res.events?.length) return;
    }
    const events = res.events ?? [];
    if (events.length === 0) {
      const revision = rev(res.header?.revision);
      // A progress at the revision already reached still tells the consumer it is current.
      if (this.opts.progressNotify && revision >= this.lastRevision && revision > 0) {
        this.lastRevision = revision;
        this.push({ events: [], revision });
      }
      return;
    }
    let batch: WatchEvent[] = [];
    let batchRevision = rev(events[0]!.kv.mod_revision);
    for (const e of events) {
      const r = rev(e.kv.mod_revision);
      if (r !== batchRevision) {
        if (!this.push({ events: batch, revision: batchRevision })) return;
        batch = [];
        batchRevision = r;
      }
      batch.push(toEvent(e));
    }
    this.push({ events: batch, revision: batchRevision });
  }

  /** Queues a batch; false when the buffer overflowed and the watch ended. */
  private push(batch: WatchBatch): boolean {
    if (batch.events.length > 0 && this.bufferedEvents + batch.events.length > this.deps.maxBufferedEvents && this.queue.length > 0) {
      const resumeFrom = this.queue[0]!.revision;
      this.fail(
        new StorageError(
          'Unavailable',
          `etcd watch ${this.keyText()}: the consumer fell behind (more than ${this.deps.maxBufferedEvents} events buffered); resume from revision ${resumeFrom}`,
          { currentRevision: batch.revision },
        ),
      );
      return false;
    }
    if (batch.events.length > 0) this.lastRevision = batch.revision;
    this.bufferedEvents += batch.events.length;
    this.queue.push(batch);
    this.notify();
    return true;
  }

  private requestProgress(): void {
    if (this.closed || this.failure || !this.stream) return;
    try {
      this.stream.write({ progress_request: {} });
    } catch (e) {
      this.fail(toStorageError(e, `watch ${this.keyText()}`));
    }
  }

  private fail(err: StorageError): void {
    if (this.closed || this.failure) return;
    this.failure = err;
    this.deps.log.debug({ key: this.keyText(), code: err.code, err: err.message }, 'etcd watch ended');
    this.stopStream();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    this.deps.onEnded(this);
    this.notify();
  }

  private stopStream(): void {
    if (this.progressTimer) clearInterval(this.progressTimer);
    this.progressTimer = undefined;
    const s = this.stream;
    this.stream = undefined;
    if (s) {
      try {
        // Half-close first: the client treats an error on a still-writable stream as a host
        // failure and would reset every connection to that endpoint for our own cancel.
        s.end();
        s.cancel();
      } catch {
        // Already closed: nothing to release.
      }
    }
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
}

function toEvent(e: IEvent): WatchEvent {
  const prevKv = e.prev_kv && e.prev_kv.key && e.prev_kv.key.length > 0 ? toKeyValue(e.prev_kv) : undefined;
  const type = e.type === 'Delete' ? 'DELETE' : 'PUT';
  return prevKv ? { type, kv: toKeyValue(e.kv), prevKv } : { type, kv: toKeyValue(e.kv) };
}
