// Watch triggers (WatchQuery.trigger): the watch cache offers a watch pinned to a value of an
// indexed field (a node agent's pods by spec.nodeName) only the events whose object has or had
// that value. The events each watch sees are exactly those its filter alone gives (moves between
// values become DELETED and ADDED, deletes arrive), and its filter is never asked about the
// objects of other values. Real LevelDB under the watch cache.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import type { ObjectEvent, ObjectRef, ObjectStore, WatchQuery } from '../../src/storage/object-store-types.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-trigger-'));
const backend = await openLevelBackend({ dir });
const store: ObjectStore = createObjectStore({ backendFor: () => backend, prefix: '/registry', watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });

const ref = (name: string): ObjectRef => ({ group: '', resource: 'pods', namespace: 'default', name });
const pod = (name: string, node: string, n = 0): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { nodeName: node, n } });
const nodeOf = (o: KubeObject): string => String((o.spec as { nodeName?: string } | undefined)?.nodeName ?? '');

/** A watch of the pods on `node`, filtered as a field selector would, counting its filter's calls. */
function watchNode(node: string, triggered: boolean, rv: string): { events: string[]; calls: string[]; stop(): void; settled(n: number): Promise<void> } {
  const events: string[] = [];
  const calls: string[] = [];
  const ac = new AbortController();
  const q: WatchQuery = {
    group: '', resource: 'pods', namespace: 'default', resourceVersion: rv, signal: ac.signal,
    filter: (o) => { calls.push(String(o.metadata?.name)); return nodeOf(o) === node; },
    ...(triggered ? { trigger: { field: 'spec.nodeName', value: node, valueOf: nodeOf } } : {}),
  };
  const w = store.watch(q);
  void (async () => {
    for await (const ev of w as AsyncIterable<ObjectEvent>) events.push(`${ev.type} ${String(ev.object.metadata?.name)} ${nodeOf(ev.object)}`);
  })();
  const settled = async (n: number): Promise<void> => {
    for (let i = 0; i < 200 && events.length < n; i++) await new Promise((r) => setTimeout(r, 10));
  };
  return { events, calls, stop: () => ac.abort(), settled };
}

/** The same watch through the push path (what the API server's HTTP watches use). */
function pushNode(node: string, rv: string): { events: string[]; calls: string[]; stop(): void } {
  const events: string[] = [];
  const calls: string[] = [];
  const ac = new AbortController();
  const w = store.watch({
    group: '', resource: 'pods', namespace: 'default', resourceVersion: rv, signal: ac.signal,
    filter: (o) => { calls.push(String(o.metadata?.name)); return nodeOf(o) === node; },
    trigger: { field: 'spec.nodeName', value: node, valueOf: nodeOf },
  });
  w.push!({ event: (ev) => { events.push(`${ev.type} ${String(ev.object.metadata?.name)} ${nodeOf(ev.object)}`); return true; }, end: () => undefined });
  return { events, calls, stop: () => ac.abort() };
}

t.test('a triggered watch sees what its filter gives, and is not asked about other values', async (t) => {
  const start = String(await store.currentRevision());
  const a = watchNode('node-a', true, start);
  const b = watchNode('node-b', true, start);
  const plainA = watchNode('node-a', false, start);
  const pushA = pushNode('node-a', start);
  // Let the watches register before the writes.
  await new Promise((r) => setTimeout(r, 100));

  await store.create(ref('p1'), pod('p1', 'node-a'));
  await store.create(ref('p2'), pod('p2', 'node-b'));
  await store.create(ref('p3'), pod('p3', ''));
  for (let i = 0; i < 20; i++) await store.create(ref(`other-${i}`), pod(`other-${i}`, 'node-z'));
  await store.guaranteedUpdate(ref('p3'), (cur) => ({ ...cur!, spec: { nodeName: 'node-a', n: 1 } })); // scheduled onto a
  await store.guaranteedUpdate(ref('p1'), (cur) => ({ ...cur!, spec: { nodeName: 'node-b', n: 1 } })); // moved a → b
  await store.guaranteedUpdate(ref('p3'), (cur) => ({ ...cur!, spec: { nodeName: 'node-a', n: 2 } })); // changed on a
  await store.delete(ref('p3'));
  await store.delete(ref('p2'));

  const wantA = ['ADDED p1 node-a', 'ADDED p3 node-a', 'DELETED p1 node-a', 'MODIFIED p3 node-a', 'DELETED p3 node-a'];
  const wantB = ['ADDED p2 node-b', 'ADDED p1 node-b', 'DELETED p2 node-b'];
  await a.settled(wantA.length);
  await b.settled(wantB.length);
  await plainA.settled(wantA.length);
  t.same(a.events, wantA, 'node-a: entering, leaving and changing objects, and deletes');
  t.same(b.events, wantB);
  t.same(plainA.events, wantA, 'the same as the unindexed watch');
  t.same(pushA.events, wantA, 'the push path too');
  t.notOk(a.calls.some((n) => n.startsWith('other-')), 'the filter is never asked about another node\'s pods');
  t.notOk(pushA.calls.some((n) => n.startsWith('other-')));
  t.ok(plainA.calls.filter((n) => n.startsWith('other-')).length >= 20, 'the unindexed watch is asked about each');
  for (const w of [a, b, plainA, pushA]) w.stop();
});

t.test('a watch of unscheduled pods (the empty value) is indexed too', async (t) => {
  const start = String(await store.currentRevision());
  const unscheduled = watchNode('', true, start);
  await new Promise((r) => setTimeout(r, 100));
  await store.create(ref('u1'), pod('u1', ''));
  await store.create(ref('s1'), pod('s1', 'node-z'));
  await store.guaranteedUpdate(ref('u1'), (cur) => ({ ...cur!, spec: { nodeName: 'node-z' } }));
  await unscheduled.settled(2);
  t.same(unscheduled.events, ['ADDED u1 ', 'DELETED u1 ']);
  t.notOk(unscheduled.calls.includes('s1'));
  unscheduled.stop();
});

t.test('ended watches leave the index', async (t) => {
  const start = String(await store.currentRevision());
  const w = watchNode('node-c', true, start);
  await new Promise((r) => setTimeout(r, 100));
  w.stop();
  await new Promise((r) => setTimeout(r, 50));
  await store.create(ref('c1'), pod('c1', 'node-c'));
  const again = watchNode('node-c', true, start);
  await again.settled(1);
  t.same(again.events, ['ADDED c1 node-c'], 'a new watch of the value still gets its events');
  t.same(w.events, [], 'the ended one got nothing');
  again.stop();
});
