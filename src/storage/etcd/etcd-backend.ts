/**
 * The Backend contract on etcd v3, through the etcd3 client.
 *
 * etcd's revision is the store revision, so revisions, compaction and watch semantics are
 * etcd's own (see interface.ts: the contract is the etcd model). Each verb maps to the one
 * request shape kube-apiserver uses for it:
 *   create  txn(create_revision(key) == 0 → put)
 *   update  txn(mod_revision(key) == expected → put | else range(key)), the range telling
 *           Conflict (with the actual modRevision) from KeyNotFound in the same round trip
 *   delete  deleteRange(prev_kv), or txn(mod_revision == expected → deleteRange | else range)
 *   range   range(key, end, limit, revision); with `after`, a read-only txn of a count over
 *           the whole range plus the page, both at one revision
 * Reads are retried on transient failures (bounded, with backoff); writes never are, since a
 * re-sent conditional write could fail on its own first attempt.
 */
import pino, { type Logger } from 'pino';
import type { Etcd3, ICompare, IRangeRequest, IRangeResponse, ITxnResponse } from 'etcd3';
import type {
  Backend,
  DeleteResult,
  KeyValue,
  RangeOptions,
  RangeResult,
  ReadOptions,
  Watch,
  WatchOptions,
  WriteOptions,
  WriteResult,
} from '../interface.js';
import { MAX_VALUE_BYTES, StorageError } from '../errors.js';
import { createEtcdClient, type EtcdTlsOptions } from './etcd-client.js';
import { isLeaseNotFound, toStorageError } from './etcd-errors.js';
import { keyBytes, keySuccessor, prefixEndBytes, rev, toKeyValue } from './etcd-kv.js';
import { LeaseManager } from './etcd-leases.js';
import { answersProgressRequestsInOrder, EtcdWatch, type EtcdWatchDeps } from './etcd-watch.js';

export interface EtcdBackendOptions {
  /** Client URLs, all http:// or all https://. */
  readonly endpoints: readonly string[];
  readonly tls?: EtcdTlsOptions;
  readonly log?: Logger;
  /** How long open waits for etcd to answer; default 20 s. */
  readonly dialTimeoutMs?: number;
  /** Deadline of each request; default 30 s. */
  readonly requestTimeoutMs?: number;
  /** A watch whose consumer lets more events than this pile up ends with Unavailable; default 10 000. */
  readonly watchBufferEvents?: number;
  /** How often a watch with progressNotify asks etcd for progress; default 1 s. */
  readonly progressIntervalMs?: number;
}

const READ_RETRIES = 3;
/**
 * Attempts of a write that failed with Unavailable (a member died, a leader election): a
 * create or compare-and-swap that may have been applied is sent again and, should the retry
 * meet KeyExists/Conflict, the stored value is compared with ours (every write's value is
 * unique: uid, timestamps, managed fields), so our own earlier success is recognised.
 */
const WRITE_RETRIES = 4;

/** Failures where the request never reached etcd (gRPC found no connection, the breaker was open). */
function neverSent(e: unknown): boolean {
  const m = e instanceof Error ? e.message : String(e);
  return m.includes('No connection established') || m.includes('circuit breaker is open');
}
const PROBE_KEY = Buffer.from('\0corectl/probe');

export async function openEtcdBackend(opts: EtcdBackendOptions): Promise<Backend> {
  const log = (opts.log ?? pino({ level: 'silent' })).child({ component: 'etcd-backend' });
  const client = await createEtcdClient(opts.endpoints, opts.tls);
  const backend = new EtcdBackend(client, opts, log);
  try {
    await backend.waitReady(opts.dialTimeoutMs ?? 20_000);
  } catch (e) {
    client.close();
    throw e;
  }
  log.info({ endpoints: opts.endpoints }, 'connected to etcd');
  return backend;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resolves with the promise, or rejects when the signal aborts first (the request itself runs on). */
function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new StorageError('Unavailable', `${what}: aborted`, {}, { cause: signal.reason }));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new StorageError('Unavailable', `${what}: aborted`, {}, { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

class EtcdBackend implements Backend {
  readonly name = 'etcd';
  private closed = false;
  private knownCompactRevision = 0;
  private readonly leases: LeaseManager;
  private readonly requestTimeoutMs: number;
  private readonly openWatches = new Set<EtcdWatch>();
  /** etcd's version, from the status call at open. */
  serverVersion = '';
  /** Whether watches may ask etcd for progress notifications on demand. */
  private progressRequests = false;

  constructor(
    private readonly client: Etcd3,
    private readonly opts: EtcdBackendOptions,
    private readonly log: Logger,
  ) {
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.leases = new LeaseManager(client.leaseClient, () => this.callOptions());
  }

  private callOptions(): { deadline: number } {
    return { deadline: Date.now() + this.requestTimeoutMs };
  }

  private checkOpen(): void {
    if (this.closed) throw new StorageError('Unavailable', 'etcd backend is closed');
  }

  /** Waits until a read succeeds, retrying with backoff until the deadline. */
  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let delay = 50;
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        const status = await this.client.maintenance.status({ deadline: Math.min(deadline, Date.now() + 5000) });
        this.serverVersion = status.version;
        this.progressRequests = answersProgressRequestsInOrder(status.version);
        if (!this.progressRequests) {
          this.log.info(
            { version: status.version },
            'this etcd answers watch progress requests out of order; watch progress comes only at etcd\'s --experimental-watch-progress-notify-interval',
          );
        }
        return;
      } catch (e) {
        // Keep the transport's own reason (a TLS failure, a refused connection) rather than
        // the client's circuit breaker that trips after a few of them.
        if (last === undefined || !/circuit breaker/.test((e as Error).message)) last = e;
        await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
        delay = Math.min(delay * 2, 1000);
      }
    }
    const cause = last instanceof Error ? last.message : String(last);
    throw new StorageError('Unavailable', `cannot reach etcd at ${this.opts.endpoints.join(', ')} within ${timeoutMs} ms: ${cause}`, {}, { cause: last });
  }

  /** Runs an idempotent read, retrying transient failures a bounded number of times. */
  private async read<T>(what: string, key: string | undefined, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    this.checkOpen();
    for (let attempt = 0; ; attempt++) {
      try {
        return await abortable(fn(), signal, `etcd ${what}`);
      } catch (e) {
        const err = toStorageError(e, what, key);
        if (err.code !== 'Unavailable' || attempt >= READ_RETRIES - 1 || this.closed || signal?.aborted) throw err;
        await sleep(100 * 2 ** attempt);
      }
    }
  }

  /**
   * Runs a write. Unavailable failures are retried (bounded, with backoff): always when the
   * request never reached etcd, and when `onAmbiguousRetry` is given also when it may have been
   * applied — the caller is told, and checks a KeyExists/Conflict against its own value.
   */
  private async write<T>(what: string, key: string, signal: AbortSignal | undefined, fn: () => Promise<T>, onAmbiguousRetry?: () => void): Promise<T> {
    this.checkOpen();
    for (let attempt = 0; ; attempt++) {
      try {
        return await abortable(fn(), signal, `etcd ${what}`);
      } catch (e) {
        const err = toStorageError(e, what, key);
        if (err.code !== 'Unavailable' || attempt >= WRITE_RETRIES - 1 || this.closed || signal?.aborted) throw err;
        if (!neverSent(e)) {
          if (!onAmbiguousRetry) throw err;
          onAmbiguousRetry();
        }
        await sleep(150 * 2 ** attempt * (0.5 + Math.random()));
      }
    }
  }

  /** The key's mod revision when its stored value is exactly `value` (our own write landed). */
  private async ownWrite(k: Buffer, value: Buffer): Promise<number | undefined> {
    const res = await this.read('get', undefined, undefined, () => this.client.kv.range({ key: k }, this.callOptions()));
    const kv = res.kvs[0];
    return kv && Buffer.from(kv.value).equals(value) ? rev(kv.mod_revision) : undefined;
  }

  async get(key: string, opts: ReadOptions = {}): Promise<{ kv: KeyValue | undefined; revision: number }> {
    const k = keyBytes(key);
    const revision = opts.revision ?? 0;
    const res = await this.read('get', key, opts.signal, () => this.client.kv.range({ key: k, revision }, this.callOptions()));
    const kv = res.kvs[0];
    return { kv: kv ? toKeyValue(kv) : undefined, revision: revision || rev(res.header.revision) };
  }

  async range(key: string, opts: RangeOptions = {}): Promise<RangeResult> {
    const k = keyBytes(key);
    const end = opts.prefix ? prefixEndBytes(k) : opts.end !== undefined ? Buffer.from(opts.end, 'utf8') : undefined;
    const revision = opts.revision ?? 0;
    let start = k;
    if (opts.after !== undefined && !opts.countOnly) {
      const next = keySuccessor(Buffer.from(opts.after, 'utf8'));
      if (Buffer.compare(next, start) > 0) start = next;
    }
    const page: IRangeRequest = { key: start, range_end: end, revision, limit: opts.limit ?? 0, count_only: opts.countOnly === true };
    if (start === k) {
      const res = await this.read('range', key, opts.signal, () => this.client.kv.range(page, this.callOptions()));
      return this.rangeResult(res, rev(res.count), revision);
    }
    // A page after a continuation key: count the whole range at the same revision, in one round trip.
    const res = await this.read('range', key, opts.signal, () =>
      this.client.kv.txn(
        { success: [{ request_range: { key: k, range_end: end, revision, count_only: true } }, { request_range: page }] },
        this.callOptions(),
      ),
    );
    const [countRes, pageRes] = res.responses.map((r) => r.response_range);
    return this.rangeResult(pageRes!, rev(countRes!.count), revision);
  }

  private rangeResult(res: IRangeResponse, count: number, revision: number): RangeResult {
    return {
      kvs: res.kvs.map(toKeyValue),
      more: res.more,
      count,
      revision: revision || rev(res.header.revision),
    };
  }

  private checkValue(key: string, value: Buffer): void {
    if (value.length > MAX_VALUE_BYTES) {
      throw new StorageError('ValueTooLarge', `value of ${key} is ${value.length} bytes, above the limit of ${MAX_VALUE_BYTES}`, { key });
    }
  }

  /** Runs a put-shaped txn, attaching a shared lease for a TTL; retries once if etcd lost the lease. */
  private async withLease<T>(ttlSeconds: number | undefined, run: (lease: string | undefined) => Promise<T>): Promise<T> {
    if (ttlSeconds === undefined || ttlSeconds <= 0) return run(undefined);
    const lease = await this.leases.leaseFor(ttlSeconds);
    try {
      return await run(lease);
    } catch (e) {
      if (!isLeaseNotFound(e)) throw e;
      this.leases.forget(lease);
      return run(await this.leases.leaseFor(ttlSeconds));
    }
  }

  async create(key: string, value: Buffer, opts: WriteOptions = {}): Promise<WriteResult> {
    const k = keyBytes(key);
    this.checkValue(key, value);
    let resent = false;
    const res = await this.write('create', key, opts.signal, () =>
      this.withLease(opts.ttlSeconds, (lease) =>
        this.client.kv.txn(
          {
            compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
            success: [{ request_put: lease ? { key: k, value, lease } : { key: k, value } }],
          },
          this.callOptions(),
        ),
      ),
      () => { resent = true; },
    );
    const revision = rev(res.header.revision);
    if (!res.succeeded) {
      const mine = resent ? await this.ownWrite(k, value) : undefined;
      if (mine !== undefined) return { revision: mine };
      throw new StorageError('KeyExists', `key ${key} already exists`, { key, currentRevision: revision });
    }
    return { revision };
  }

  async update(key: string, value: Buffer, expectedModRevision: number, opts: WriteOptions = {}): Promise<WriteResult> {
    const k = keyBytes(key);
    this.checkValue(key, value);
    const compare: ICompare[] = [{ key: k, target: 'Mod', result: 'Equal', mod_revision: expectedModRevision }];
    // An absent key has mod_revision 0: without this, update(key, _, 0) would create it.
    if (expectedModRevision <= 0) compare.push({ key: k, target: 'Create', result: 'Greater', create_revision: 0 });
    let resent = false;
    const res = await this.write('update', key, opts.signal, () =>
      this.withLease(opts.ttlSeconds, (lease) =>
        this.client.kv.txn(
          {
            compare,
            success: [{ request_put: lease ? { key: k, value, lease } : { key: k, value } }],
            failure: [{ request_range: { key: k, keys_only: true } }],
          },
          this.callOptions(),
        ),
      ),
      () => { resent = true; },
    );
    const revision = rev(res.header.revision);
    if (!res.succeeded) {
      const mine = resent ? await this.ownWrite(k, value) : undefined;
      if (mine !== undefined) return { revision: mine };
      throw this.casFailure(key, res, revision);
    }
    return { revision };
  }

  async delete(key: string, expectedModRevision?: number, opts: { signal?: AbortSignal } = {}): Promise<DeleteResult> {
    const k = keyBytes(key);
    if (expectedModRevision === undefined) {
      const res = await this.write('delete', key, opts.signal, () =>
        this.client.kv.deleteRange({ key: k, prev_kv: true }, this.callOptions()),
      );
      const prev = res.prev_kvs[0];
      if (!prev) throw new StorageError('KeyNotFound', `key ${key} not found`, { key, currentRevision: rev(res.header.revision) });
      return { revision: rev(res.header.revision), prevKv: toKeyValue(prev) };
    }
    const res = await this.write('delete', key, opts.signal, () =>
      this.client.kv.txn(
        {
          compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: expectedModRevision }],
          success: [{ request_delete_range: { key: k, prev_kv: true } }],
          failure: [{ request_range: { key: k, keys_only: true } }],
        },
        this.callOptions(),
      ),
    );
    const revision = rev(res.header.revision);
    if (!res.succeeded) throw this.casFailure(key, res, revision);
    const prev = res.responses[0]?.response_delete_range?.prev_kvs[0];
    if (!prev) throw new StorageError('KeyNotFound', `key ${key} not found`, { key, currentRevision: revision });
    return { revision, prevKv: toKeyValue(prev) };
  }

  /** Conflict or KeyNotFound, from the range in a failed compare-and-swap's failure branch. */
  private casFailure(key: string, res: ITxnResponse, currentRevision: number): StorageError {
    const current = res.responses[0]?.response_range?.kvs[0];
    if (!current) return new StorageError('KeyNotFound', `key ${key} not found`, { key, currentRevision });
    const actualModRevision = rev(current.mod_revision);
    return new StorageError('Conflict', `key ${key} was modified (modRevision ${actualModRevision})`, { key, currentRevision, actualModRevision });
  }

  watch(key: string, opts: WatchOptions = {}): Watch {
    const k = keyBytes(key);
    if (this.closed) return new EtcdWatch(this.watchDeps(), k, undefined, { ...opts, signal: AbortSignal.abort() });
    const w = new EtcdWatch(this.watchDeps(), k, opts.prefix ? prefixEndBytes(k) : undefined, opts);
    if (!w.ended) this.openWatches.add(w);
    return w;
  }

  private watchDeps(): EtcdWatchDeps {
    return {
      openStream: () => this.client.watchClient.watch(),
      onCompactRevision: (r: number) => this.noteCompactRevision(r),
      onEnded: (w: EtcdWatch) => this.openWatches.delete(w),
      log: this.log,
      maxBufferedEvents: this.opts.watchBufferEvents ?? 10_000,
      progressIntervalMs: this.progressRequests ? (this.opts.progressIntervalMs ?? 1000) : 0,
    };
  }

  private noteCompactRevision(r: number): void {
    if (r > this.knownCompactRevision) this.knownCompactRevision = r;
  }

  async compact(revision: number): Promise<void> {
    this.checkOpen();
    if (!Number.isInteger(revision) || revision < 1) throw new StorageError('InvalidArgument', `cannot compact at revision ${revision}`);
    try {
      await this.client.kv.compact({ revision }, this.callOptions());
      this.noteCompactRevision(revision);
    } catch (e) {
      const err = toStorageError(e, `compact ${revision}`);
      // Compacting at or below the current point is a no-op, as in the other backends.
      if (err.code === 'Compacted') return;
      throw err;
    }
  }

  /**
   * etcd reports its compaction point only on a cancelled watch, so it is found by reading:
   * a read at revision r fails with Compacted exactly when r is below the point. The search
   * starts at the last known point (compaction only moves forward), so the usual answer
   * costs one read, and a compaction by another client costs a binary search (~log2 revisions).
   */
  async compactedRevision(): Promise<number> {
    const current = await this.currentRevision();
    const readableAt = async (r: number): Promise<boolean> => {
      try {
        await this.read('compaction probe', undefined, undefined, () =>
          this.client.kv.range({ key: PROBE_KEY, count_only: true, revision: r }, this.callOptions()),
        );
        return true;
      } catch (e) {
        if (e instanceof StorageError && e.code === 'Compacted') return false;
        throw e;
      }
    };
    let low = Math.max(1, this.knownCompactRevision);
    if (await readableAt(low)) return this.knownCompactRevision;
    // Invariant: low is compacted away, high is readable.
    let high = current;
    while (high - low > 1) {
      const mid = Math.floor((low + high) / 2);
      if (await readableAt(mid)) high = mid;
      else low = mid;
    }
    this.noteCompactRevision(high);
    return this.knownCompactRevision;
  }

  async currentRevision(): Promise<number> {
    const res = await this.read('current revision', undefined, undefined, () =>
      this.client.kv.range({ key: PROBE_KEY, count_only: true }, this.callOptions()),
    );
    return rev(res.header.revision);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.openWatches) w.close();
    this.openWatches.clear();
    this.client.close();
  }
}
