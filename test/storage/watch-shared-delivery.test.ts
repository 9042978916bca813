// Shared delivery in the watch cache's push fan-out (ObjectEventConsumer.shared, the API
// server's path for watchers that encode alike) on a real LevelDB: one prepare per event for
// watchers of one range with equal keys, each its own deliver in order; other keys, other ranges
// and filtered watchers apart; a throwing prepare falls back to event(); a deliver that stays
// full ends its watcher under the usual bound; a throwing deliver ends only its own watch.
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore, type WatchCacheConfig } from '../../src/storage/object-store.js';
import type { ObjectEvent, ObjectRef, ObjectWatch, WatchQuery } from '../../src/storage/object-store-types.js';

const pod = (name: string, ns = 'default', labels: Record<string, string> = { app: 'a' }): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels }, spec: {} });
const ref = (name: string, ns = 'default'): ObjectRef => ({ group: '', resource: 'pods', namespace: ns, name });
const q = (extra: Partial<WatchQuery> = {}): WatchQuery => ({ group: '', resource: 'pods', namespace: 'default', ...extra });

async function open(t: Test, wc: Partial<WatchCacheConfig> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-shared-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, watchCache: { enabled: true, defaultSize: 100, sizes: {}, ...wc } });
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  return store;
}

/** Counts prepare() calls per key, across watchers. */
class Prepares {
  readonly calls = new Map<string, number>();
  count(key: string): number { return this.calls.get(key) ?? 0; }
  add(key: string): void { this.calls.set(key, this.count(key) + 1); }
}

interface Sharer {
  /** What arrived, as "<via> <type> <name>" (via: shared or event). */
  seen: string[];
  ended: Promise<void>;
  resume(): void;
}

/**
 * A push consumer with a shared part keyed `key`: prepare() turns an event into a string
 * (counted in `prepares`), deliver() records it. `accept` answers deliver and event.
 */
function share(w: ObjectWatch, key: string, prepares: Prepares, o: { accept?: () => boolean; prepareThrows?: boolean; deliverThrows?: boolean } = {}): Sharer {
  const seen: string[] = [];
  let done!: () => void;
  const ended = new Promise<void>((r) => { done = r; });
  const accept = o.accept ?? (() => true);
  const flow = w.push!({
    event: (e) => { seen.push(`event ${e.type} ${e.object.metadata?.name ?? ''}`); return accept(); },
    end: () => done(),
    shared: {
      key,
      prepare: (e) => {
        prepares.add(key);
        if (o.prepareThrows) throw new Error('cannot prepare');
        return `${e.type} ${e.object.metadata?.name ?? ''}`;
      },
      join: (ps) => ps.join(', '),
      deliver: (p) => {
        if (o.deliverThrows) throw new Error('cannot deliver');
        seen.push(`shared ${p as string}`);
        return accept();
      },
    },
  });
  return { seen, ended, resume: () => flow.resume() };
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

t.test('watchers of one range with equal keys share one prepare per event', async (t) => {
  const store = await open(t);
  const start = (await store.create(ref('s'), pod('s'))).metadata!.resourceVersion!;
  const prepares = new Prepares();
  const rv = { resourceVersion: start };
  const a = share(store.watch(q(rv)), 'json', prepares);
  const b = share(store.watch(q(rv)), 'json', prepares);
  const c = share(store.watch(q(rv)), 'json', prepares);
  const other = share(store.watch(q(rv)), 'protobuf', prepares);
  const elsewhere = share(store.watch(q({ ...rv, namespace: 'other' })), 'json', prepares);
  const filtered = share(store.watch(q({ ...rv, filter: (o) => o.metadata?.labels?.['app'] === 'a' })), 'json', prepares);
  await store.create(ref('p1'), pod('p1'));
  await store.create(ref('p2'), pod('p2', 'default', { app: 'b' }));
  await store.guaranteedUpdate(ref('p1'), (o) => ({ ...o!, spec: { x: 1 } }));
  await store.delete(ref('p1'));
  const want = ['ADDED p1', 'ADDED p2', 'MODIFIED p1', 'DELETED p1'];
  await until(() => [a, b, c, other].every((s) => s.seen.length === 4) && filtered.seen.length === 3);
  for (const s of [a, b, c, other]) t.same(s.seen, want.map((w) => `shared ${w}`), 'each sharer gets every event, in order, from the shared part');
  t.equal(prepares.count('json'), 4, 'one json prepare per event for the three json watchers');
  t.equal(prepares.count('protobuf'), 4, 'the other key prepares apart');
  t.same(filtered.seen, ['event ADDED p1', 'event MODIFIED p1', 'event DELETED p1'], 'a filtered watcher is not shared (its event types are its own)');
  t.same(elsewhere.seen, [], 'another namespace sees none of it');
  await store.create(ref('o1', 'other'), pod('o1', 'other'));
  await until(() => elsewhere.seen.length === 1);
  t.same(elsewhere.seen, ['shared ADDED o1']);
  t.equal(prepares.count('json'), 5, 'the other range prepares its own event');
  t.same(a.seen.length, 4, 'and the default namespace watchers do not get it');
});

t.test('a prepare that throws: those watchers get event() instead', async (t) => {
  const store = await open(t);
  const start = (await store.create(ref('s'), pod('s'))).metadata!.resourceVersion!;
  const prepares = new Prepares();
  const a = share(store.watch(q({ resourceVersion: start })), 'bad', prepares, { prepareThrows: true });
  const b = share(store.watch(q({ resourceVersion: start })), 'bad', prepares, { prepareThrows: true });
  await store.create(ref('x'), pod('x'));
  await until(() => a.seen.length === 1 && b.seen.length === 1);
  t.same(a.seen, ['event ADDED x']);
  t.same(b.seen, ['event ADDED x']);
  t.equal(prepares.count('bad'), 1, 'tried once for the group');
});

t.test('backpressure on the shared path: a watcher whose transport stays full is ended, one that drains gets all', async (t) => {
  const store = await open(t, { maxPendingPerWatcher: 10 });
  const start = (await store.create(ref('s'), pod('s'))).metadata!.resourceVersion!;
  const cache = store.watchCacheFor('', 'pods')!;
  const prepares = new Prepares();
  const stuck = share(store.watch(q({ resourceVersion: start })), 'json', prepares, { accept: () => false });
  let n = 0;
  const draining = share(store.watch(q({ resourceVersion: start })), 'json', prepares, { accept: () => ++n % 3 !== 0 });
  const resumer = setInterval(() => draining.resume(), 1);
  t.teardown(() => clearInterval(resumer));
  for (let i = 0; i < 40; i++) await store.create(ref(`s${i}`), pod(`s${i}`));
  await stuck.ended;
  t.ok(stuck.seen.length < 40, `the stuck watcher ended early (${stuck.seen.length} of 40 events)`);
  await until(() => draining.seen.length === 40);
  t.equal(draining.seen.length, 40);
  t.ok(draining.seen.every((s) => s.startsWith('shared ')));
  t.equal(cache.watcherCount, 1, 'only the draining watcher is left');
});

t.test('a deliver that throws ends its own watch only', async (t) => {
  const store = await open(t);
  const start = (await store.create(ref('s'), pod('s'))).metadata!.resourceVersion!;
  const prepares = new Prepares();
  const bad = share(store.watch(q({ resourceVersion: start })), 'json', prepares, { deliverThrows: true });
  const good = share(store.watch(q({ resourceVersion: start })), 'json', prepares);
  await store.create(ref('t1'), pod('t1'));
  await bad.ended;
  await store.create(ref('t2'), pod('t2'));
  await until(() => good.seen.length === 2);
  t.same(good.seen, ['shared ADDED t1', 'shared ADDED t2']);
  t.same(bad.seen, [], 'the failing watcher got no ERROR event either (as a throwing event() ends it)');
});

t.test('replayed history goes through event(); the live changes after it through the shared part', async (t) => {
  const store = await open(t);
  const start = (await store.create(ref('h0'), pod('h0'))).metadata!.resourceVersion!;
  await store.create(ref('h1'), pod('h1'));
  const prepares = new Prepares();
  const w = share(store.watch(q({ resourceVersion: start })), 'json', prepares);
  await until(() => w.seen.length === 1);
  await store.create(ref('h2'), pod('h2'));
  await until(() => w.seen.length === 2);
  t.same(w.seen, ['event ADDED h1', 'shared ADDED h2']);
});
