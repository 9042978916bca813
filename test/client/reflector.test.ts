import t from 'tap';
import { errors } from '../../src/api/meta/status.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { ManualClock, flushMicrotasks } from '../../src/client/clock.js';
import { isTombstone, SharedIndexInformer } from '../../src/client/informer.js';
import { SharedInformerFactory } from '../../src/client/informer-factory.js';
import type { ListerWatcher } from '../../src/client/reflector.js';
import type { KubeList, ListOptions, RestClient } from '../../src/client/rest-client.js';
import type { WatchEvent } from '../../src/client/watch-stream.js';

const cm = (name: string, rv: string, v = ''): KubeObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', resourceVersion: rv }, data: { v } });

/** A scripted server: lists from `objects` in pages, watches from queued event batches. */
class FakeLW implements ListerWatcher {
  objects: KubeObject[] = [];
  rv = '10';
  lists: ListOptions[] = [];
  watches: ListOptions[] = [];
  failLists = 0;
  private feeds: Array<(ev: WatchEvent | null) => void> = [];
  private queued: Array<WatchEvent | null> = [];
  async list(o: ListOptions): Promise<KubeList> {
    this.lists.push(o);
    if (this.failLists > 0) { this.failLists--; throw errors.internal('boom'); }
    const start = o.continue ? Number(o.continue) : 0;
    const limit = o.limit ?? 500;
    const items = this.objects.slice(start, start + limit);
    const next = start + limit < this.objects.length ? String(start + limit) : undefined;
    return { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: this.rv, ...(next ? { continue: next } : {}) }, items: items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest) };
  }
  async watch(o: ListOptions): Promise<AsyncIterable<WatchEvent>> {
    this.watches.push(o);
    const self = this;
    return {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const ev = self.queued.length ? self.queued.shift() : await new Promise<WatchEvent | null>((r) => { self.feeds.push(r); o.signal?.addEventListener('abort', () => r(null), { once: true }); });
          if (ev === null || ev === undefined) return;
          yield ev;
        }
      },
    };
  }
  /** Sends an event to the open watch (null ends it). */
  send(ev: WatchEvent | null): void {
    const f = this.feeds.shift();
    if (f) f(ev); else this.queued.push(ev);
  }
}

async function settle(): Promise<void> { for (let i = 0; i < 5; i++) { await flushMicrotasks(); await new Promise((r) => setImmediate(r)); } }

t.test('pagination, typed items, watch from the list version with bookmarks', async (t) => {
  const lw = new FakeLW();
  lw.objects = Array.from({ length: 7 }, (_, i) => cm(`o${i}`, String(i + 1)));
  const clock = new ManualClock();
  const inf = new SharedIndexInformer({ lw, clock, ref: { group: '', version: 'v1', resource: 'configmaps' }, reflector: { pageSize: 3 } });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  t.ok(await inf.waitForSync(ac.signal));
  t.same(lw.lists.map((l) => [l.resourceVersion, l.continue]), [['0', undefined], [undefined, '3'], [undefined, '6']], 'first page at rv=0, then continue');
  t.equal(inf.indexer.size, 7);
  t.equal(inf.indexer.getByKey('ns/o0')?.kind, 'ConfigMap');
  await settle();
  t.equal(lw.watches[0]?.resourceVersion, '10');
  t.equal(lw.watches[0]?.allowWatchBookmarks, true);
  lw.send({ type: 'BOOKMARK', object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '15' } } });
  lw.send(null); // the server closed the watch
  await settle();
  t.equal(lw.watches[1]?.resourceVersion, '15', 'rewatch from the bookmark, no relist');
  t.equal(lw.lists.length, 3);
  ac.abort();
  lw.send(null);
  await run;
});

t.test('ERROR 410 relists at once; deletes found by the relist are tombstones', async (t) => {
  const lw = new FakeLW();
  lw.objects = [cm('a', '1'), cm('b', '2')];
  const clock = new ManualClock();
  const inf = new SharedIndexInformer({ lw, clock });
  const seen: string[] = [];
  inf.addEventHandler({
    onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
    onUpdate: (_, n) => seen.push(`update ${n.metadata?.name}`),
    onDelete: (o) => seen.push(`delete ${isTombstone(o) ? 'tombstone ' + o.obj.metadata?.name : o.metadata?.name}`),
  });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  await inf.waitForSync();
  await settle();
  lw.objects = [cm('b', '5', 'x'), cm('c', '6')];
  lw.rv = '20';
  lw.send({ type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', code: 410, reason: 'Expired', message: 'too old resource version' } as unknown as KubeObject });
  await settle();
  t.equal(lw.lists.length, 2, 'relisted without waiting for a backoff');
  t.equal(lw.lists[1]?.resourceVersion, '10', 'the relist asks for a state not older than the last seen');
  t.same(seen, ['add a', 'add b', 'delete tombstone a', 'update b', 'add c']);
  t.equal(lw.watches.at(-1)?.resourceVersion, '20');
  ac.abort();
  lw.send(null);
  await run;
});

t.test('list failures back off (800 ms doubling) on the clock', async (t) => {
  const lw = new FakeLW();
  lw.failLists = 3;
  const clock = new ManualClock();
  const inf = new SharedIndexInformer({ lw, clock });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  await settle();
  t.equal(lw.lists.length, 1);
  await clock.advance(790);
  t.equal(lw.lists.length, 1, 'no retry before the first backoff');
  await clock.advance(1700); // first wait is in [800, 1600)
  t.equal(lw.lists.length, 2);
  t.notOk(inf.hasSynced());
  await clock.advance(10_000);
  await settle();
  t.ok(inf.hasSynced(), 'synced after the failures');
  ac.abort();
  lw.send(null);
  await run;
});

t.test('resync: onUpdate(obj, obj) for every cached object at the period; factory picks [min, 2 x min)', async (t) => {
  const lw = new FakeLW();
  lw.objects = [cm('a', '1'), cm('b', '2')];
  const clock = new ManualClock();
  const inf = new SharedIndexInformer({ lw, clock, resyncPeriodMs: 60_000 });
  let resyncs = 0;
  inf.addEventHandler({ onUpdate: (o, n) => { if (o === n) resyncs++; } });
  const ac = new AbortController();
  const run = inf.run(ac.signal);
  await inf.waitForSync();
  await clock.advance(59_000);
  t.equal(resyncs, 0);
  await clock.advance(2_000);
  t.equal(resyncs, 2, 'both objects resynced');
  ac.abort();
  lw.send(null);
  await run;

  const periods = [0, 0.5, 0.999].map((r) => {
    const f = new SharedInformerFactory({ client: {} as RestClient, minResyncPeriodMs: 1000, random: () => r, clock });
    return (f.informerFor({ group: '', version: 'v1', resource: 'pods' }) as unknown as { o: { resyncPeriodMs: number } }).o.resyncPeriodMs;
  });
  t.same(periods, [1000, 1500, 1999]);
});
