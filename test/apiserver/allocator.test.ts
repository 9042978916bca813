import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { IpAllocator, formatIp, parseCidr, parseIp } from '../../src/daemons/apiserver/registry/ip-allocator.js';
import { PortAllocator } from '../../src/daemons/apiserver/registry/port-allocator.js';
import { AlreadyAllocatedError, RangeFullError } from '../../src/daemons/apiserver/registry/bitmap-range.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-alloc-'));
const backend = await openLevelBackend({ dir });
const store = createObjectStore({ backendFor: () => backend });
t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });

t.test('CIDR and IP parsing', async (t) => {
  t.equal(parseCidr('10.0.0.7/24').text, '10.0.0.0/24');
  t.equal(formatIp(6, parseIp('fd00::1')!.value), 'fd00::1');
  t.equal(formatIp(6, parseIp('2001:db8:0:0:1:0:0:1')!.value), '2001:db8::1:0:0:1');
  t.equal(parseIp('300.1.1.1'), undefined);
  t.throws(() => parseCidr('10.0.0.0'));
  const v6 = new IpAllocator(store, 'fd00:10:96::/112');
  t.equal(v6.firstIp(), 'fd00:10:96::1');
  t.equal(v6.size, 65535);
});

t.test('IPv4: reserved first IP, unique concurrent allocation, full range, release', async (t) => {
  const ips = new IpAllocator(store, '192.168.7.0/29'); // usable .1 - .6
  t.equal(ips.size, 6);
  t.equal(ips.firstIp(), '192.168.7.1');
  await ips.allocate('192.168.7.1');
  await t.rejects(ips.allocate('192.168.7.1'), AlreadyAllocatedError);
  await t.rejects(ips.allocate('192.168.7.7'), RangeError, 'broadcast is not usable');
  await t.rejects(ips.allocate('10.0.0.1'), RangeError);
  const got = await Promise.all(Array.from({ length: 5 }, () => ips.allocateNext()));
  t.equal(new Set(got).size, 5, 'no duplicates under concurrency');
  t.notOk(got.includes('192.168.7.1'));
  await t.rejects(ips.allocateNext(), RangeFullError);
  await ips.release(got[0]!);
  t.equal(await ips.allocateNext(), got[0], 'released IP is reused');
  t.ok(await ips.isAllocated(got[1]!));

  // A second allocator on the same store (another API server) sees the same bitmap.
  const other = new IpAllocator(store, '192.168.7.0/29');
  await t.rejects(other.allocate(got[2]!), AlreadyAllocatedError);
  await other.reset(['192.168.7.1']);
  t.notOk(await ips.isAllocated(got[2]!), 'reset (repair) rebuilds the bitmap');
});

t.test('node ports', async (t) => {
  const ports = new PortAllocator(store, 30000, 3);
  await ports.allocate(30001);
  await t.rejects(ports.allocate(30001), AlreadyAllocatedError);
  await t.rejects(ports.allocate(29999), RangeError);
  const a = await ports.allocateNext();
  const b = await ports.allocateNext();
  t.same([a, b].sort(), [30000, 30002]);
  await t.rejects(ports.allocateNext(), RangeFullError);
  await ports.release(30001);
  t.equal(await ports.allocateNext(), 30001);
});

t.test('kubernetes service reconciler: master-count and lease', async (t) => {
  const { ResourceRegistry } = await import('../../src/daemons/apiserver/registry/resource-registry.js');
  const { ServiceAllocation } = await import('../../src/daemons/apiserver/registry/service-allocation.js');
  const { KubernetesServiceReconciler } = await import('../../src/daemons/apiserver/registry/kubernetes-service.js');
  const { ensureSystemNamespaces } = await import('../../src/daemons/apiserver/registry/system-namespaces.js');
  const { endpoints } = await import('../../src/api/resources/core/endpoints.js');
  const { pino } = await import('pino');
  const ips = new IpAllocator(store, '10.55.0.0/24');
  const registry = new ResourceRegistry(store, { repairMalformedUpdates: true, services: new ServiceAllocation(ips, new PortAllocator(store, 31000, 10)) });
  await ensureSystemNamespaces(registry);
  const mk = (addr: string, type: string, count = 1): InstanceType<typeof KubernetesServiceReconciler> => new KubernetesServiceReconciler({
    registry, store, ips, advertiseAddress: addr, securePort: 6443, reconcilerType: type, apiserverCount: count, intervalMs: 60_000, log: pino({ level: 'silent' }),
  });
  const addresses = async (): Promise<string[]> => {
    const ep = await registry.get(endpoints, 'default', 'kubernetes');
    return ((ep.subsets as { addresses: { ip: string }[] }[] | undefined) ?? []).flatMap((s) => s.addresses.map((x) => x.ip));
  };

  const a1 = mk('10.1.0.1', 'master-count', 2);
  const a2 = mk('10.1.0.2', 'master-count', 2);
  await a1.start(); await a2.start();
  t.same(await addresses(), ['10.1.0.1', '10.1.0.2']);
  const a3 = mk('10.1.0.3', 'master-count', 2);
  await a3.start();
  t.equal((await addresses()).length, 2, 'at most --apiserver-count addresses');
  t.ok((await addresses()).includes('10.1.0.3'), 'the reconciling server keeps itself');
  await a3.stop(); await a2.stop(); await a1.stop();
  t.same(await addresses(), [], 'stopping withdraws the address');

  const l1 = mk('10.2.0.1', 'lease');
  const l2 = mk('10.2.0.2', 'lease');
  await l1.start(); await l2.start(); await l1.reconcile();
  t.same(await addresses(), ['10.2.0.1', '10.2.0.2']);
  await l2.stop();
  t.same(await addresses(), ['10.2.0.1'], 'lease removed on stop');
  await l1.stop();

  const svc = await registry.get((await import('../../src/api/resources/core/services.js')).services, 'default', 'kubernetes');
  t.equal((svc.spec as { clusterIP: string }).clusterIP, '10.55.0.1');

  const none = mk('10.3.0.1', 'none');
  await none.start();
  t.same(await addresses(), [], 'none leaves the endpoints alone');
  await none.stop();

  // --core-service-node-port: the service becomes NodePort on that port, and back.
  const { services } = await import('../../src/api/resources/core/services.js');
  const spec = async () => (await registry.get(services, 'default', 'kubernetes')).spec as { type: string; ports: { nodePort?: number; port: number; targetPort: number }[] };
  const np = new KubernetesServiceReconciler({ registry, store, ips, advertiseAddress: '10.4.0.1', securePort: 6443, reconcilerType: 'none', apiserverCount: 1, nodePort: 31005, intervalMs: 60_000, log: pino({ level: 'silent' }) });
  await np.start();
  t.equal((await spec()).type, 'NodePort');
  t.same((await spec()).ports.map((p) => [p.port, p.targetPort, p.nodePort]), [[443, 6443, 31005]]);
  await np.stop();
  const back = mk('10.4.0.1', 'none');
  await back.start();
  t.equal((await spec()).type, 'ClusterIP');
  t.equal((await spec()).ports[0]!.nodePort, undefined, 'no node port on a ClusterIP service');
  await back.stop();
  // The node port was released: a user service may take it now.
  const user = await registry.create(services, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'np', namespace: 'default' }, spec: { type: 'NodePort', ports: [{ port: 80, nodePort: 31005 }] } });
  t.equal((user.spec as { ports: { nodePort: number }[] }).ports[0]!.nodePort, 31005);
});
