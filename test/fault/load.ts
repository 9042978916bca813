/**
 * Load and bookkeeping for the HA fault suite: a writer that remembers every acknowledged
 * create, a watcher (a Reflector, as the components use) that counts gaps and duplicates, and
 * the counts the suite prints.
 */
import { isApiError } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { Reflector, listerWatcherFor } from '../../src/client/reflector.js';
import type { RestClient } from '../../src/client/rest-client.js';

export const CONFIGMAPS = { group: '', version: 'v1', resource: 'configmaps' };

/** Creates ConfigMaps <prefix>-<n> with `concurrency` workers until stopped; records acknowledgements. */
export class Writer {
  readonly acked = new Set<string>();
  /** Acknowledgements: when the create was sent and when it was answered (ms since epoch). */
  readonly acks: Array<{ sent: number; at: number }> = [];
  failures = 0;
  private n = 0;
  private stopped = false;
  private done: Promise<void> | undefined;

  constructor(private readonly client: RestClient, private readonly namespace: string, private readonly prefix: string) {}

  start(concurrency: number, limit = Infinity): void {
    this.done = Promise.all(Array.from({ length: concurrency }, () => this.worker(limit))).then(() => undefined);
  }

  private async worker(limit: number): Promise<void> {
    while (!this.stopped && this.n < limit) {
      const name = `${this.prefix}-${this.n++}`;
      // A create whose answer was lost may have been applied: ask again until we know.
      for (let tries = 0; tries < 20 && !this.stopped; tries++) {
        const sent = Date.now();
        try {
          await this.client.create({ ...CONFIGMAPS, namespace: this.namespace }, { metadata: { name }, data: { n: name } });
          this.ack(name, sent);
          break;
        } catch (e) {
          if (isApiError(e, 'AlreadyExists')) { this.ack(name, sent); break; }
          this.failures++;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }
  }

  private ack(name: string, sent: number): void { this.acked.add(name); this.acks.push({ sent, at: Date.now() }); }

  /** When the first create sent after `t` was acknowledged. */
  firstAckSentAfter(t: number): number | undefined { return this.acks.find((a) => a.sent > t)?.at; }

  acksSentAfter(t: number): number { return this.acks.filter((a) => a.sent > t).length; }

  /** Waits for the workers to reach their limit. */
  async finished(): Promise<void> { await this.done; }

  async stop(): Promise<void> { this.stopped = true; await this.done; }
}

/** Watches a namespace's ConfigMaps through a Reflector and counts what it was told. */
export class WatchRecorder {
  readonly seen = new Map<string, number>();
  duplicates = 0;
  relists = 0;
  /** Events whose resourceVersion was not above the previous one's (etcd revisions order every change). */
  outOfOrder = 0;
  private lastRv = 0;
  private readonly ac = new AbortController();
  private readonly running: Promise<void>;

  constructor(client: RestClient, namespace: string) {
    const reflector = new Reflector({
      lw: listerWatcherFor(client, { ...CONFIGMAPS, namespace }),
      ref: { ...CONFIGMAPS, namespace },
      backoffInitialMs: 200,
      sink: {
        replace: (items: KubeObject[], rv: string) => {
          this.relists++;
          this.lastRv = Number(rv);
          for (const o of items) this.seen.set(o.metadata!.name!, (this.seen.get(o.metadata!.name!) ?? 0));
        },
        apply: (type, o) => {
          const rv = Number(o.metadata?.resourceVersion);
          if (!(rv > this.lastRv)) this.outOfOrder++;
          this.lastRv = rv;
          if (type !== 'ADDED') return;
          const name = o.metadata!.name!;
          const k = this.seen.get(name);
          if (k !== undefined && k > 0) this.duplicates++;
          this.seen.set(name, (k ?? 0) + 1);
        },
      },
    });
    this.running = reflector.run(this.ac.signal);
  }

  /** Acknowledged names the watch never told of (so far). */
  gaps(acked: Iterable<string>): string[] { return [...acked].filter((n) => !this.seen.has(n)); }

  async waitFor(acked: Iterable<string>, timeoutMs: number): Promise<string[]> {
    const end = Date.now() + timeoutMs;
    let missing = this.gaps(acked);
    while (missing.length && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 200));
      missing = this.gaps(missing);
    }
    return missing;
  }

  async stop(): Promise<void> { this.ac.abort(); await this.running; }
}

/** Objects of `acked` missing from a consistent list (acknowledged writes lost). */
export async function lostWrites(client: RestClient, namespace: string, acked: Set<string>): Promise<string[]> {
  const list = await client.list({ ...CONFIGMAPS, namespace });
  const have = new Set(list.items.map((o) => o.metadata?.name));
  return [...acked].filter((n) => !have.has(n));
}

export async function waitUntil(what: string, fn: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const start = Date.now();
  for (;;) {
    try { if (await fn()) return (Date.now() - start) / 1000; } catch { /* not yet */ }
    if (Date.now() - start > timeoutMs) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
