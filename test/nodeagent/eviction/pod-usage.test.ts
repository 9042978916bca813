// Per-pod disk usage for ranking eviction candidates counts the pod's volumes, its logs and its
// containers' writable layers (from CRI ListContainerStats), as kubelet ranks by ephemeral storage.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { diskUsage, hostPodUsage } from '../../../src/daemons/nodeagent/eviction/pod-usage.js';

t.test('disk = volumes + logs + writable layers', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-podusage-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const podDir = join(dir, 'pod');
  const logDir = join(dir, 'logs');
  await mkdir(join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'data'), { recursive: true });
  await mkdir(logDir, { recursive: true });
  await writeFile(join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'data', 'f'), Buffer.alloc(64 * 1024, 1));
  await writeFile(join(logDir, '0.log'), Buffer.alloc(8 * 1024, 1));
  const base = (await diskUsage(join(podDir, 'volumes'))) + (await diskUsage(logDir));
  t.ok(base >= 72 * 1024, `volumes and logs: ${base} bytes`);
  const pod = { uid: 'u1', podDir, logDir, containers: new Map([['main', 'c1'], ['side', 'c2']]) };
  const cgroups = join(dir, 'no-cgroups');
  const withLayers = await hostPodUsage(cgroups, async () => new Map([['c1', 1_000_000], ['c2', 500], ['other', 7]]))([pod]);
  t.equal(withLayers.get('u1')?.disk, base + 1_000_500, 'the pod\'s containers\' writable layers are added, nobody else\'s');
  const without = await hostPodUsage(cgroups)([pod]);
  t.equal(without.get('u1')?.disk, base, 'without the runtime\'s figures: volumes and logs');
  const failing = await hostPodUsage(cgroups, async () => { throw new Error('unavailable'); })([pod]);
  t.equal(failing.get('u1')?.disk, base, 'a runtime that fails to answer leaves the layers out');
});
