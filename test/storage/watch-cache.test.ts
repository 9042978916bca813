// Watch cache behaviour through the object store on a real LevelDB and a real etcd: resume, 410 after the
// history passes, bookmarks, filter enter/leave, slow watchers, shared serialization.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore, type WatchCacheConfig } from '../../src/storage/object-store.js';
import type { ObjectEvent, ObjectRef, ObjectWatch, WatchQuery } from '../../src/storage/object-store-types.js';
import type { Backend } from '../../src/storage/interface.js';
import { openEtcdBackend } from '../../src/storage/etcd/etcd-backend.js';
import { skipWithoutEtcd, startEtcd } from '../helpers/etcd.js';

const pod = (name: string, labels: Record<string, string> = { app: 'a' }): KubeObject =>
  // A kind without a schema declaration: stored as given (built-in kinds are put in Go's form).
  ({ apiVersion: 'test.corectl.io/v1', kind: 'Widget', metadata: { name, namespace: 'default', labels }, spec: {} });
const ref = (name: string): ObjectRef => ({ group: '', resource: 'pods', namespace: 'default', name });
const q = (extra: Partial<WatchQuery> = {}): WatchQuery => ({ group: '', resource: 'pods', namespace: 'default', ...extra });

type Store = ReturnType<typeof createObjectStore>;
type Opener = (t: Test, wc?: Partial<WatchCacheConfig>) => Promise<{ store: Store; backend: Backend }>;

const openLevel: Opener = async (t, wc = {}) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-wc-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, watchCache: { enabled: true, defaultSize: 100, sizes: {}, ...wc } });
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  return { store, backend };
};

/** Takes events until `stop` is true (or the deadline closes the watch). */
async function take(w: ObjectWatch, stop: (e: ObjectEvent, all: ObjectEvent[]) => boolean, ms = 10_000): Promise<ObjectEvent[]> {
  const out: ObjectEvent[] = [];
  const timer = setTimeout(() => w.close(), ms);
  try {
    for await (const e of w) {
      out.push(e);
      if (stop(e, out)) break;
    }
  } finally {
    clearTimeout(timer);
    w.close();
  }
  return out;
}
const summary = (evs: ObjectEvent[]): string[] => evs.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`);

async function suite(t: Test, open: Opener): Promise<void> {
  await t.test('initial ADDED events, then changes; resume from a resourceVersion', async (t) => {
    const { store } = await open(t);
    await store.create(ref('a'), pod('a'));
    const b = await store.create(ref('b'), pod('b'));
    const w = store.watch(q());
    const seen = take(w, (_e, all) => all.length === 4);
    await new Promise((r) => setTimeout(r, 20));
    const b2 = await store.guaranteedUpdate(ref('b'), (o) => ({ ...o!, spec: { x: 1 } }));
    await store.delete(ref('a'));
    const evs = await seen;
    t.same(summary(evs), ['ADDED a', 'ADDED b', 'MODIFIED b', 'DELETED a']);
    t.equal(evs[2]!.object.metadata?.resourceVersion, b2.metadata?.resourceVersion);
    t.ok(Number(evs[3]!.object.metadata?.resourceVersion) > Number(b2.metadata?.resourceVersion), 'DELETED carries the delete revision');
    // Resume from b's creation: exactly the changes after it.
    const resumed = await take(store.watch(q({ resourceVersion: b.metadata!.resourceVersion })), (_e, all) => all.length === 2);
    t.same(summary(resumed), ['MODIFIED b', 'DELETED a']);
    // A single-object watch (metadata.name field selector).
    const one = store.watch(q({ name: 'b', resourceVersion: b.metadata!.resourceVersion }));
    t.same(summary(await take(one, () => true)), ['MODIFIED b']);
    t.equal(store.watchCacheFor('', 'pods')!.watcherCount, 0, 'ended watchers are dropped');
  });

  await t.test('410 Expired once the history no longer reaches back', async (t) => {
    const { store } = await open(t, { defaultSize: 5, historyWindowMs: 0 });
    const first = await store.create(ref('x'), pod('x'));
    for (let i = 0; i < 30; i++) await store.guaranteedUpdate(ref('x'), (o) => ({ ...o!, spec: { i } }));
    const cache = store.watchCacheFor('', 'pods')!;
    await take(store.watch(q({ resourceVersion: '0' })), (e) => e.type === 'ADDED'); // cache caught up
    t.ok(cache.historyLength <= 6, `ring bounded (${cache.historyLength})`);
    const evs = await take(store.watch(q({ resourceVersion: first.metadata!.resourceVersion })), () => false);
    t.equal(evs.length, 1, 'one event, then the watch ends');
    t.equal(evs[0]!.type, 'ERROR');
    t.match(evs[0]!.object, { kind: 'Status', code: 410, reason: 'Expired', message: new RegExp(`^too old resource version: ${first.metadata!.resourceVersion} \\(\\d+\\)$`) });
    const recent = String(cache.historyStart - 1);
    const ok = await take(store.watch(q({ resourceVersion: recent })), () => true, 3000);
    t.equal(ok[0]?.type, 'MODIFIED', 'a watch from the oldest kept revision works');
  });

  await t.test('bookmarks carry only the resourceVersion and cover filtered-out events', async (t) => {
    const { store } = await open(t);
    const start = await store.create(ref('seed'), pod('seed'));
    const w = store.watch(q({ resourceVersion: start.metadata!.resourceVersion, allowBookmarks: true, filter: () => false }));
    const later = await store.create(ref('hidden'), pod('hidden'));
    const evs = await take(w, (e) => e.type === 'BOOKMARK' && Number(e.object.metadata?.resourceVersion) >= Number(later.metadata!.resourceVersion));
    const last = evs[evs.length - 1]!;
    t.equal(last.type, 'BOOKMARK');
    t.same(last.object, { metadata: { resourceVersion: last.object.metadata!.resourceVersion } });
    t.ok(evs.every((e) => e.type === 'BOOKMARK'), 'filtered events are not sent');
    const none = store.watch(q({ resourceVersion: later.metadata!.resourceVersion }));
    const quiet = await take(none, () => true, 1500);
    t.same(quiet, [], 'no bookmarks without allowBookmarks');
  });

  await t.test('filter enter and leave: MODIFIED becomes ADDED / DELETED', async (t) => {
    const { store } = await open(t);
    const c = await store.create(ref('p'), pod('p', { app: 'a' }));
    const w = store.watch(q({ resourceVersion: c.metadata!.resourceVersion, filter: (o) => o.metadata?.labels?.['app'] === 'a' }));
    const seen = take(w, (_e, all) => all.length === 3);
    const left = await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, metadata: { ...o!.metadata, labels: { app: 'b' } } }));
    await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, spec: { hidden: true } }));
    await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, metadata: { ...o!.metadata, labels: { app: 'a' } } }));
    await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, spec: { visible: true } }));
    const evs = await seen;
    t.same(summary(evs), ['DELETED p', 'ADDED p', 'MODIFIED p']);
    t.equal(evs[0]!.object.metadata?.labels?.['app'], 'a', 'DELETED carries the last state that matched');
    t.equal(evs[0]!.object.metadata?.resourceVersion, left.metadata?.resourceVersion, '... stamped with the event revision');
  });

  await t.test('a slow watcher is closed; memory stays bounded', async (t) => {
    const { store } = await open(t, { maxPendingPerWatcher: 10 });
    const c = await store.create(ref('s'), pod('s'));
    const cache = store.watchCacheFor('', 'pods')!;
    const slow = store.watch(q({ resourceVersion: c.metadata!.resourceVersion }));
    const it = slow[Symbol.asyncIterator]();
    const firstP = it.next(); // registers the watcher, consumes one event
    for (let i = 0; i < 40; i++) await store.create(ref(`s${i}`), pod(`s${i}`));
    t.equal((await firstP).value?.type, 'ADDED');
    let rest = 0;
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      rest++;
    }
    t.ok(rest < 39, `the watcher ended early (${rest + 1} of 40 events)`);
    t.equal(cache.watcherCount, 0, 'the watcher is gone from the cache');
  });

  await t.test('one event, one shared serialization cache for every watcher', async (t) => {
    const { store } = await open(t);
    const c = await store.create(ref('seed'), pod('seed'));
    const watches = Array.from({ length: 3 }, () => take(store.watch(q({ resourceVersion: c.metadata!.resourceVersion })), () => true));
    await new Promise((r) => setTimeout(r, 50));
    await store.create(ref('n'), pod('n'));
    const [a, b, d] = await Promise.all(watches);
    t.equal(a![0]!.type, 'ADDED');
    t.equal(a![0], b![0], 'the same event object');
    t.equal(a![0], d![0]);
    t.ok(a![0]!.cache instanceof Map);
    a![0]!.cache!.set('json', Buffer.from('x'));
    t.equal(b![0]!.cache!.get('json')?.toString(), 'x', 'serialization filled once is seen by all');
  });

  await t.test("RV '0' and NotOlderThan reads are served by the cache; consistent reads see every write", async (t) => {
    const { store } = await open(t);
    for (let i = 0; i < 20; i++) {
      const o = await store.create(ref(`c${i}`), pod(`c${i}`));
      const got = await store.get(ref(`c${i}`));
      t.equal(got.metadata?.resourceVersion, o.metadata?.resourceVersion, 'read your write');
      const l = await store.list({ group: '', resource: 'pods', namespace: 'default', resourceVersion: o.metadata!.resourceVersion });
      t.equal(l.items.length, i + 1, 'not older than the write');
    }
    t.ok(store.watchCacheFor('', 'pods')!.ready);
    await t.rejects(store.get(ref('c1'), { resourceVersion: '99999999' }), { code: 'FutureRevision' });
  });

  await t.test('a continued list is read from memory while nothing in its range changed, else from the backend', async (t) => {
    const { store, backend } = await open(t);
    const cache = store.watchCacheFor('', 'pods')!;
    let innerRanges = 0;
    const innerRange = backend.range.bind(backend);
    backend.range = (...a: Parameters<Backend['range']>) => { innerRanges++; return innerRange(...a); };
    t.teardown(() => { backend.range = innerRange; });
    for (const n of ['a', 'b', 'c']) await store.create(ref(n), pod(n));
    const list = (cont?: string) => store.list({ group: '', resource: 'pods', namespace: 'default', limit: 1, ...(cont ? { continue: cont } : {}) });
    const first = await list();
    t.same(first.items.map((o) => o.metadata?.name), ['a']);
    // A write elsewhere (another namespace): the revision moves on, this range does not change.
    const other = await store.create({ ...ref('x'), namespace: 'other' }, { ...pod('x'), metadata: { name: 'x', namespace: 'other' } });
    await store.get(ref('a'), { resourceVersion: other.metadata!.resourceVersion }); // the cache has seen it
    innerRanges = 0;
    const second = await list(first.continue);
    t.same(second.items.map((o) => o.metadata?.name), ['b']);
    t.equal(second.resourceVersion, first.resourceVersion, 'the page is at the first page\'s revision');
    t.equal(second.remainingItemCount, 1);
    t.equal(innerRanges, 0, 'served from memory');
    // A change inside the range (after the continue key): the page is a history read again.
    await store.guaranteedUpdate(ref('c'), (o) => ({ ...o!, spec: { changed: true } }));
    const d = await store.create(ref('d'), pod('d'));
    await store.get(ref('a'), { resourceVersion: d.metadata!.resourceVersion });
    const again = await list(first.continue);
    t.same(again.items.map((o) => o.metadata?.name), ['b'], 'd did not exist at that revision');
    t.equal(again.remainingItemCount, 1, 'nor is it counted');
    t.ok(innerRanges > 0, 'read from the backend');
    const third = await list(again.continue);
    t.same(third.items.map((o) => o.metadata?.name), ['c']);
    t.same(third.items[0]!.spec, {}, 'c as it was at that revision');
    // Compacted past the page's revision: expired, whatever the cache still holds.
    const e = await store.create({ ...ref('y'), namespace: 'other' }, { ...pod('y'), metadata: { name: 'y', namespace: 'other' } });
    await backend.compact(Number(e.metadata!.resourceVersion));
    await t.rejects(list(first.continue), { code: 'Compacted' });
    t.equal(cache.ready, true);
  });

  await t.test('peekCount: how many objects a list at resourceVersion 0 holds, without a promise', async (t) => {
    const { store } = await open(t);
    const q = (namespace: string) => ({ group: '', resource: 'pods', namespace });
    const cache = store.watchCacheFor('', 'pods')!;
    if (!cache.ready) t.equal(store.peekCount(q('default')), null, 'null while the cache loads');
    await store.list({ group: '', resource: 'pods', namespace: 'default', resourceVersion: '0' }); // waits for ready
    t.equal(store.peekCount(q('default')), 0, 'an empty namespace');
    await store.create(ref('a'), pod('a'));
    const b = await store.create(ref('b'), pod('b'));
    await store.create({ ...ref('c'), namespace: 'other' }, { ...pod('c'), metadata: { name: 'c', namespace: 'other' } });
    await store.get(ref('b'), { resourceVersion: b.metadata!.resourceVersion }); // the cache has caught up
    const listed = async (namespace: string) => (await store.list({ ...q(namespace), resourceVersion: '0' })).items.length;
    t.equal(store.peekCount(q('default')), 2);
    t.equal(store.peekCount(q('default')), await listed('default'), 'what the list holds');
    t.equal(store.peekCount(q('')), await listed(''), 'all namespaces');
    t.equal(store.peekCount(q('defaul')), 0, 'a namespace name that is a prefix of another counts only its own');
    t.equal(cache.peekCount('/elsewhere/'), null, 'a prefix outside the cache: null');
  });

  await t.test('peekEntry: the cached entry without a promise, once the cache is ready', async (t) => {
    const { store, backend } = await open(t);
    const cache = store.watchCacheFor('', 'pods')!;
    if (!cache.ready) t.equal(store.peekEntry(ref('p')), null, 'null while the cache loads');
    await store.list({ group: '', resource: 'pods', namespace: 'default', resourceVersion: '0' }); // waits for ready
    t.equal(store.peekEntry(ref('p')), undefined, 'no such object');
    const o = await store.create(ref('p'), pod('p'));
    await store.get(ref('p'), { resourceVersion: o.metadata!.resourceVersion }); // the cache has seen it
    const e = store.peekEntry(ref('p'));
    t.ok(e, 'found');
    const viaGet = await store.getEntry(ref('p'), { resourceVersion: '0' });
    t.equal(e!.kv, viaGet!.kv, 'the very entry getEntry gives');
    t.equal((await e!.decode(e!.kv)).metadata?.resourceVersion, o.metadata?.resourceVersion);
    const consistent = store.peekEntry(ref('p'), true);
    if (backend.currentRevisionNow) {
      t.equal(consistent?.kv, e!.kv, 'consistent: the cache holds every acknowledged write');
      // A backend ahead of the cache (a write the cache has not applied yet): the cache cannot vouch.
      const own = backend.currentRevisionNow;
      backend.currentRevisionNow = () => cache.revision + 1;
      try {
        t.equal(store.peekEntry(ref('p'), true), null, 'consistent, the cache behind: null');
        t.equal(store.peekEntry(ref('p'))?.kv, e!.kv, 'as the cache stands: still the entry');
      } finally {
        backend.currentRevisionNow = own;
      }
    } else {
      t.equal(consistent, null, 'consistent, and the backend cannot tell its revision at once: null');
    }
    t.equal(cache.peek('/elsewhere/x'), null, 'a key outside the cached prefix: null');
    const off = createObjectStore({ backendFor: () => backend, watchCache: { enabled: false, defaultSize: 100, sizes: {} } });
    t.equal(off.peekEntry(ref('p')), null, 'no watch cache: null');
    await off.close();
    if (backend.currentRevisionNow) {
      await backend.close();
      t.equal(store.peekEntry(ref('p'), true), null, 'consistent, and the backend is closed: null (the awaited read says why)');
    }
  });
}

await t.test('leveldb', (t) => suite(t, openLevel));

await t.test('etcd', { skip: skipWithoutEtcd() }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  let n = 0;
  const openEtcd: Opener = async (t, wc = {}) => {
    const backend = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    const store = createObjectStore({ backendFor: () => backend, prefix: `/case${n++}/registry`, watchCache: { enabled: true, defaultSize: 100, sizes: {}, ...wc } });
    t.teardown(async () => { await store.close(); await backend.close(); });
    return { store, backend };
  };
  await suite(t, openEtcd);
});
