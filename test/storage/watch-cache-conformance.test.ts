// The shared Backend conformance suite, run against the watch cache wrapping a real LevelDB
// and a real etcd.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createWatchCache } from '../../src/storage/watch-cache/watch-cache.js';
import { runConformance } from './conformance.js';
import { openEtcdBackend } from '../../src/storage/etcd/etcd-backend.js';
import { skipWithoutEtcd, startEtcd, withKeyPrefix } from '../helpers/etcd.js';

await runConformance(t, 'watchcache(leveldb)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-wc-'));
  const inner = await openLevelBackend({ dir, ttlSweepIntervalMs: 200, progressIntervalMs: 200 });
  const backend = createWatchCache(inner, { prefix: '/', progressIdleMs: 200 });
  return {
    backend,
    async cleanup() {
      await backend.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

// The same suite over etcd: one etcd for the file, one key prefix per case.
await t.test('over etcd', { skip: skipWithoutEtcd() }, async (t) => {
  const etcd = await startEtcd();
  t.teardown(() => etcd.stop());
  let instance = 0;
  await runConformance(t, 'watchcache(etcd)', async () => {
    const raw = await openEtcdBackend({ endpoints: [etcd.endpoint] });
    const backend = createWatchCache(withKeyPrefix(raw, `/case-${++instance}`), { prefix: '/', progressIdleMs: 200 });
    return { backend, cleanup: () => backend.close() };
  });
});
