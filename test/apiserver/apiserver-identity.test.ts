// API server identity leases: one per server in kube-system with Kubernetes' labels, renewed,
// and leases that ran out collected by another server.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { findResource } from '../../src/api/resources/registry.js';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { ResourceRegistry } from '../../src/daemons/apiserver/registry/resource-registry.js';
import { ensureSystemNamespaces } from '../../src/daemons/apiserver/registry/system-namespaces.js';
import { ApiserverIdentity, IDENTITY_LABEL, identityLeaseName } from '../../src/daemons/apiserver/registry/apiserver-identity.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-identity-'));
const backend = await openLevelBackend({ dir });
const store = createObjectStore({ backendFor: () => backend });
t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
const registry = new ResourceRegistry(store, { repairMalformedUpdates: true });
await ensureSystemNamespaces(registry);
const leases = findResource('coordination.k8s.io', 'v1', 'leases')!;
const log = pino({ level: 'silent' });

t.test('each server holds a labelled lease; expired ones are collected', async (t) => {
  t.match(identityLeaseName('host', 6443), /^apiserver-[a-z2-7]{26}$/);
  t.not(identityLeaseName('host', 6443), identityLeaseName('host', 6444), 'servers sharing a host differ');
  const a = new ApiserverIdentity({ registry, securePort: 6443, log }), b = new ApiserverIdentity({ registry, securePort: 6444, log });
  await a.start(); await b.start();
  t.teardown(() => { a.stop(); b.stop(); });
  const { items } = await registry.list(leases, { namespace: 'kube-system' });
  const mine = items.filter((l) => l.metadata?.labels?.[IDENTITY_LABEL] === 'kube-apiserver');
  t.same(mine.map((l) => l.metadata!.name).sort(), [a.name, b.name].sort());
  const la = mine.find((l) => l.metadata!.name === a.name)!;
  t.equal((la.spec as { holderIdentity: string }).holderIdentity, a.holder);
  t.equal((la.spec as { leaseDurationSeconds: number }).leaseDurationSeconds, 3600);
  t.ok(la.metadata!.labels!['kubernetes.io/hostname']);

  // b stops renewing; two hours later a collects it (and never itself).
  await b.renew(new Date(Date.now() - 2 * 3600_000));
  t.same(await a.collect(), [b.name]);
  t.same(await a.collect(Date.now() + 10 * 3600_000), [], 'its own lease is never collected');
  await t.rejects(registry.get(leases, 'kube-system', b.name), { code: 404 });
  await registry.get(leases, 'kube-system', a.name);
});

t.test('two servers of one identity (same host and port) starting at once: neither fails, one lease', async (t) => {
  for (let round = 0; round < 20; round++) {
    const port = 7000 + round;
    const a = new ApiserverIdentity({ registry, securePort: port, log }), b = new ApiserverIdentity({ registry, securePort: port, log });
    const started = await Promise.allSettled([a.renew(), b.renew()]);
    t.same(started.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)), [], `round ${round}: both renewed`);
    const lease = await registry.get(leases, 'kube-system', a.name);
    t.ok([a.holder, b.holder].includes((lease.spec as { holderIdentity: string }).holderIdentity), 'held by one of them');
  }
});
