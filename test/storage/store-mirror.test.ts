// StoreMirror on a real LevelDB object store (with its watch cache): the first list, changes
// from the watch, onChange, has(name, resourceVersion), one mirror per store and resource, and
// the end when the store closes.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { storeMirror } from '../../src/storage/store-mirror.js';
import { waitFor } from '../helpers/wait-for.js';

const GROUP = 'scheduling.k8s.io';
const RESOURCE = 'priorityclasses';
const cls = (name: string, value: number): KubeObject => ({ apiVersion: `${GROUP}/v1`, kind: 'PriorityClass', metadata: { name, uid: `uid-${name}` }, value });
const ref = (name: string) => ({ group: GROUP, resource: RESOURCE, namespace: '', name });

t.test('a mirror follows the store', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-mirror-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, prefix: '/registry', watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  t.teardown(async () => { await backend.close(); await rm(dir, { recursive: true, force: true }); });

  await store.create(ref('before'), cls('before', 1));
  const m = storeMirror(store, GROUP, RESOURCE);
  t.equal(storeMirror(store, GROUP, RESOURCE), m, 'one mirror per store and resource');
  t.notOk(m.synced, 'not synced before the first list');
  await m.ready;
  t.ok(m.synced);
  t.same([...m.objects.keys()], ['before'], 'the first list');
  const changes: number[] = [];
  m.onChange(() => changes.push(m.generation));
  t.same(changes.length, 1, 'onChange runs at once on a synced mirror');

  const created = await store.create(ref('later'), cls('later', 2));
  await waitFor('later mirrored', () => m.has('later', created.metadata!.resourceVersion));
  t.equal(m.objects.get('later')?.value, 2);
  const updated = await store.guaranteedUpdate(ref('later'), (cur) => ({ ...cur!, value: 3 }));
  await waitFor('update mirrored', () => m.has('later', updated.metadata!.resourceVersion));
  t.equal(m.objects.get('later')?.value, 3);
  t.notOk(m.has('later', String(Number(updated.metadata!.resourceVersion) + 1)), 'not known at a later resourceVersion');
  await store.delete(ref('before'));
  await waitFor('delete mirrored', () => !m.has('before'));
  t.ok(changes.length >= 4, 'a change per event');
  t.ok(changes.every((g, i) => i === 0 || g > changes[i - 1]!), 'generation grows with each change');

  await store.close();
  // The mirror's watch ends with the store; nothing is left running to keep the process alive.
});

t.test('a namespaced resource is mirrored across namespaces under namespace/name', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-mirror-'));
  const backend = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => backend, prefix: '/registry', watchCache: { enabled: true, defaultSize: 100, sizes: {} } });
  t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
  const G = 'rbac.authorization.k8s.io';
  const role = (namespace: string, name: string): KubeObject => ({ apiVersion: `${G}/v1`, kind: 'Role', metadata: { name, namespace, uid: `uid-${namespace}-${name}` }, rules: [] });
  await store.create({ group: G, resource: 'roles', namespace: 'a', name: 'r' }, role('a', 'r'));
  const m = storeMirror(store, G, 'roles');
  await m.ready;
  t.same([...m.objects.keys()], ['a/r'], 'listed from every namespace');
  await store.create({ group: G, resource: 'roles', namespace: 'b', name: 'r' }, role('b', 'r'));
  await waitFor('second namespace mirrored', () => m.has('b/r'));
  t.ok(m.has('a/r'), 'the same name in two namespaces is two objects');
  await store.delete({ group: G, resource: 'roles', namespace: 'a', name: 'r' });
  await waitFor('delete mirrored', () => !m.has('a/r'));
  t.ok(m.has('b/r'));
});
