// Push delivery of object watches (ObjectWatch.push, the API server's fan-out path) on a real
// LevelDB with the watch cache: the same events as iteration (initial list, changes, resume,
// filters entering and leaving, bookmarks, 410), bounded memory for a consumer whose transport
// stays full, a throwing consumer, the asynchronous path of an encrypting store; and the list
// extensions the REST fast paths use (entries, name).
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore, type WatchCacheConfig } from '../../src/storage/object-store.js';
import type { ObjectEvent, ObjectRef, ObjectWatch, WatchQuery } from '../../src/storage/object-store-types.js';
import type { ValueTransformer } from '../../src/storage/encryption/transformer.js';

const pod = (name: string, labels: Record<string, string> = { app: 'a' }): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels }, spec: {} });
const ref = (name: string): ObjectRef => ({ group: '', resource: 'pods', namespace: 'default', name });
const q = (extra: Partial<WatchQuery> = {}): WatchQuery => ({ group: '', resource: 'pods', namespace: 'default', ...extra });
const summary = (evs: ObjectEvent[]): string[] => evs.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`);

/** Reverses the bytes: enough to force the asynchronous decode path. */
const reversing: ValueTransformer = {
  toStorage: async (b) => Buffer.from(b).reverse(),
  fromStorage: async (b) => Buffer.from(b).reverse(),
};

async function open(t: Test, wc: Partial<WatchCacheConfig> = {}, transformer?: ValueTransformer) {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-push-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({
    backendFor: () => backend, watchCache: { enabled: true, defaultSize: 100, sizes: {}, ...wc },
    ...(transformer ? { transformer } : {}),
  });
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  return store;
}

interface Pushed { events: ObjectEvent[]; ended: Promise<void>; resume(): void }

/** Consumes `w` by push; `accept` is what event() answers (true: room for more). */
function pushInto(w: ObjectWatch, accept: (e: ObjectEvent) => boolean = () => true): Pushed {
  const events: ObjectEvent[] = [];
  let done!: () => void;
  const ended = new Promise<void>((r) => { done = r; });
  const flow = w.push!({
    event: (e) => { events.push(e); return accept(e); },
    end: () => done(),
  });
  return { events, ended, resume: () => flow.resume() };
}

/** Push-consumes until `stop` holds (or the deadline), then closes the watch. */
async function takePush(w: ObjectWatch, stop: (all: ObjectEvent[]) => boolean, ms = 10_000): Promise<ObjectEvent[]> {
  const p = pushInto(w);
  const deadline = Date.now() + ms;
  while (!stop(p.events) && Date.now() < deadline) {
    const ended = await Promise.race([p.ended.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10))]);
    if (ended) break;
  }
  w.close();
  await p.ended;
  return p.events;
}

async function iterate(w: ObjectWatch, n: number): Promise<ObjectEvent[]> {
  const out: ObjectEvent[] = [];
  const timer = setTimeout(() => w.close(), 10_000);
  for await (const e of w) { out.push(e); if (out.length === n) break; }
  clearTimeout(timer);
  w.close();
  return out;
}

t.test('push delivers what iteration delivers', async (t) => {
  const store = await open(t);
  await store.create(ref('a'), pod('a'));
  const b = await store.create(ref('b'), pod('b'));
  const pushed = takePush(store.watch(q()), (all) => all.length === 4);
  const iterated = iterate(store.watch(q()), 4);
  await new Promise((r) => setTimeout(r, 30));
  await store.guaranteedUpdate(ref('b'), (o) => ({ ...o!, spec: { x: 1 } }));
  await store.delete(ref('a'));
  const [p, i] = await Promise.all([pushed, iterated]);
  t.same(summary(p), ['ADDED a', 'ADDED b', 'MODIFIED b', 'DELETED a']);
  t.same(p.map((e) => e.object.metadata?.resourceVersion), i.map((e) => e.object.metadata?.resourceVersion), 'same versions as iteration');
  t.equal(p[2], i[2], 'live events are the shared event objects');
  const resumed = await takePush(store.watch(q({ resourceVersion: b.metadata!.resourceVersion })), (all) => all.length === 2);
  t.same(summary(resumed), ['MODIFIED b', 'DELETED a'], 'resumed from a resourceVersion (replayed history)');
  const one = await takePush(store.watch(q({ name: 'b', resourceVersion: b.metadata!.resourceVersion })), (all) => all.length === 1);
  t.same(summary(one), ['MODIFIED b'], 'single-object watch');
  t.equal(store.watchCacheFor('', 'pods')!.watcherCount, 0, 'closed push watchers leave the cache');
});

t.test('push: filter enter and leave, bookmarks', async (t) => {
  const store = await open(t);
  const c = await store.create(ref('p'), pod('p', { app: 'a' }));
  const w = store.watch(q({ resourceVersion: c.metadata!.resourceVersion, allowBookmarks: true, filter: (o) => o.metadata?.labels?.['app'] === 'a' }));
  const seen = takePush(w, (all) => all.filter((e) => e.type !== 'BOOKMARK').length === 3);
  await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, metadata: { ...o!.metadata, labels: { app: 'b' } } }));
  await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, spec: { hidden: true } }));
  await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, metadata: { ...o!.metadata, labels: { app: 'a' } } }));
  await store.guaranteedUpdate(ref('p'), (o) => ({ ...o!, spec: { visible: true } }));
  const evs = (await seen).filter((e) => e.type !== 'BOOKMARK');
  t.same(summary(evs), ['DELETED p', 'ADDED p', 'MODIFIED p']);
  t.equal(evs[0]!.object.metadata?.labels?.['app'], 'a', 'DELETED carries the last state that matched');

  const quiet = store.watch(q({ resourceVersion: c.metadata!.resourceVersion, allowBookmarks: true, filter: () => false }));
  const later = await store.create(ref('hidden'), pod('hidden'));
  const marks = await takePush(quiet, (all) => all.some((e) => Number(e.object.metadata?.resourceVersion) >= Number(later.metadata!.resourceVersion)));
  t.ok(marks.length > 0 && marks.every((e) => e.type === 'BOOKMARK'), 'only bookmarks for filtered-out events');
  t.same(marks[marks.length - 1]!.object, { metadata: { resourceVersion: marks[marks.length - 1]!.object.metadata!.resourceVersion } });
});

t.test('push: 410 Expired, then the watch ends', async (t) => {
  const store = await open(t, { defaultSize: 5, historyWindowMs: 0 });
  const first = await store.create(ref('x'), pod('x'));
  for (let i = 0; i < 30; i++) await store.guaranteedUpdate(ref('x'), (o) => ({ ...o!, spec: { i } }));
  await iterate(store.watch(q({ resourceVersion: '0' })), 1); // the cache has caught up
  const p = pushInto(store.watch(q({ resourceVersion: first.metadata!.resourceVersion })));
  await p.ended;
  t.equal(p.events.length, 1);
  t.match(p.events[0]!.object, { kind: 'Status', code: 410, reason: 'Expired', message: /^too old resource version: / });
});

t.test('push: a consumer whose transport stays full is ended; one that drains is not', async (t) => {
  const store = await open(t, { maxPendingPerWatcher: 10 });
  const c = await store.create(ref('s'), pod('s'));
  const cache = store.watchCacheFor('', 'pods')!;
  const stuck = pushInto(store.watch(q({ resourceVersion: c.metadata!.resourceVersion })), () => false);
  let n = 0;
  const draining = pushInto(store.watch(q({ resourceVersion: c.metadata!.resourceVersion })), () => ++n % 3 !== 0);
  const resumer = setInterval(() => draining.resume(), 1);
  t.teardown(() => clearInterval(resumer));
  for (let i = 0; i < 40; i++) await store.create(ref(`s${i}`), pod(`s${i}`));
  await stuck.ended;
  t.ok(stuck.events.length < 40, `the stuck watcher ended early (${stuck.events.length} of 40 events)`);
  const deadline = Date.now() + 5000;
  while (draining.events.length < 40 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.equal(draining.events.length, 40, 'a consumer that gets room again receives everything');
  t.equal(cache.watcherCount, 1, 'only the draining watcher is left');
});

t.test('push: a throwing consumer ends its own watch only', async (t) => {
  const store = await open(t);
  const c = await store.create(ref('t'), pod('t'));
  const bad = pushInto(store.watch(q({ resourceVersion: c.metadata!.resourceVersion })), () => { throw new Error('boom'); });
  const good = takePush(store.watch(q({ resourceVersion: c.metadata!.resourceVersion })), (all) => all.length === 2);
  await store.create(ref('t1'), pod('t1'));
  await bad.ended;
  await store.create(ref('t2'), pod('t2'));
  t.same(summary(await good), ['ADDED t1', 'ADDED t2']);
});

t.test('push on a store with an at-rest transformer (asynchronous decode)', async (t) => {
  const store = await open(t, {}, reversing);
  await store.create(ref('e1'), pod('e1'));
  const w = store.watch(q());
  const seen = takePush(w, (all) => all.length === 3);
  await new Promise((r) => setTimeout(r, 30));
  await store.create(ref('e2'), pod('e2'));
  await store.delete(ref('e1'));
  t.same(summary(await seen), ['ADDED e1', 'ADDED e2', 'DELETED e1']);
});

t.test('lists: entries instead of items, and one name', async (t) => {
  const store = await open(t);
  for (const n of ['l1', 'l2', 'l3']) await store.create(ref(n), pod(n, { app: n === 'l2' ? 'b' : 'a' }));
  const plain = await store.list({ group: '', resource: 'pods', namespace: 'default' });
  const raw = await store.list({ group: '', resource: 'pods', namespace: 'default', entries: true });
  t.same(raw.items, [], 'no decoded items');
  t.equal(raw.entries!.length, 3);
  t.same(await Promise.all(raw.entries!.map((kv) => raw.decode!(kv))), plain.items, 'entries decode to the items');
  const again = await store.list({ group: '', resource: 'pods', namespace: 'default', entries: true });
  t.equal(again.entries![0], raw.entries![0], 'the watch cache hands out the same entry while the object is unchanged');
  const filtered = await store.list({ group: '', resource: 'pods', namespace: 'default', entries: true, filter: (o) => o.metadata?.labels?.['app'] === 'a' });
  t.equal(filtered.entries!.length, 2, 'the filter applies to entries');
  const paged = await store.list({ group: '', resource: 'pods', namespace: 'default', entries: true, limit: 2 });
  t.equal(paged.entries!.length, 2);
  t.equal(paged.remainingItemCount, 1);
  t.ok(paged.continue);

  const one = await store.list({ group: '', resource: 'pods', namespace: 'default', name: 'l2' });
  t.same(one.items.map((o) => o.metadata?.name), ['l2'], 'one name: one key');
  t.equal(one.resourceVersion, plain.resourceVersion);
  t.same((await store.list({ group: '', resource: 'pods', namespace: 'default', name: 'l', limit: 1 })).items, [], 'no prefix match');
  t.same((await store.list({ group: '', resource: 'pods', namespace: 'default', name: 'nope' })).items, []);
  const rv0 = await store.list({ group: '', resource: 'pods', namespace: 'default', name: 'l3', resourceVersion: '0', entries: true });
  t.equal(rv0.entries!.length, 1, "resourceVersion '0' from the cache");
  await t.rejects(store.list({ group: '', resource: 'pods', namespace: 'default', name: 'l1', resourceVersion: '99999999' }), { code: 'FutureRevision' });
});
