// Object count polling (--kvstore-count-metric-poll-period) through the object store.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { startCountMetrics } from '../../src/storage/count-metrics.js';

t.test('counts per resource, polled', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-count-'));
  const b = await openLevelBackend({ dir });
  const store = createObjectStore({ backendFor: () => b, watchCache: { enabled: true, defaultSize: 100, sizes: { secrets: 0 } } });
  t.teardown(async () => { await store.close(); await b.close(); await rm(dir, { recursive: true, force: true }); });
  for (let i = 0; i < 3; i++) await store.create({ group: '', resource: 'pods', namespace: 'ns', name: `p${i}` }, { metadata: { name: `p${i}` } });
  await store.create({ group: '', resource: 'secrets', namespace: 'ns', name: 's' }, { metadata: { name: 's' } });
  await store.create({ group: 'apps', resource: 'deployments', namespace: 'ns', name: 'd' }, { metadata: { name: 'd' } });
  t.equal(store.watchCacheFor('', 'secrets'), undefined, 'size 0 disables the cache for a resource');
  const m = startCountMetrics({
    count: (r, g) => store.count(r, g),
    resources: () => [{ group: '', resource: 'pods' }, { group: '', resource: 'secrets' }, { group: 'apps', resource: 'deployments' }],
    periodMs: 0,
  });
  t.equal(m.counts().size, 0, 'disabled: nothing until polled');
  await m.poll();
  t.same(Object.fromEntries(m.counts()), { pods: 3, secrets: 1, 'deployments.apps': 1 });
  await store.delete({ group: '', resource: 'pods', namespace: 'ns', name: 'p0' });
  await m.poll();
  t.equal(m.counts().get('pods'), 2);
  await m.stop();
});
