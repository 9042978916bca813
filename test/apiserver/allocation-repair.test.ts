// The ClusterIP/NodePort repair shared by several API servers on one store: a compare-and-swap
// on the bitmap's snapshot, leaks kept for a few repairs, concurrent allocation never undone.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { openLevelBackend } from '../../src/storage/leveldb/level-backend.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { IpAllocator } from '../../src/daemons/apiserver/registry/ip-allocator.js';
import { PortAllocator } from '../../src/daemons/apiserver/registry/port-allocator.js';
import { AllocationRepair, LEAK_REPAIRS } from '../../src/daemons/apiserver/registry/allocation-repair.js';

const dir = await mkdtemp(join(tmpdir(), 'corectl-repair-'));
const backend = await openLevelBackend({ dir });
const store = createObjectStore({ backendFor: () => backend });
t.teardown(async () => { await store.close(); await backend.close(); await rm(dir, { recursive: true, force: true }); });
const log = pino({ level: 'silent' });

let n = 0;
async function createService(ip: string, nodePort?: number): Promise<void> {
  const name = `s${n++}`;
  await store.create({ resource: 'services', group: '', namespace: 'default', name }, {
    apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' },
    spec: nodePort ? { type: 'NodePort', clusterIP: ip, ports: [{ port: 80, nodePort }] } : { clusterIP: ip, ports: [{ port: 80 }] },
  });
}

t.test('a repair never frees an allocation made after its snapshot', async (t) => {
  const a = new IpAllocator(store, '10.70.0.0/24'), b = new IpAllocator(store, '10.70.0.0/24');
  const snap = await a.snapshot();
  const ip = await b.allocateNext(); // another API server allocates meanwhile
  t.notOk(await a.restore(snap, []), 'the compare-and-swap fails');
  t.ok(await a.isAllocated(ip), 'the allocation stands');
});

t.test('leaked bits live LEAK_REPAIRS repairs; used ones stay; concurrent creates keep theirs', async (t) => {
  const ips = new IpAllocator(store, '10.71.0.0/24'), ports = new PortAllocator(store, 32000, 200);
  const repair = new AllocationRepair({ store, ips, nodePorts: ports, log });
  const used = await ips.allocateNext(), usedPort = await ports.allocateNext();
  await createService(used, usedPort);
  const leaked = await ips.allocateNext(); // allocated, its service never written (a killed server)
  for (let i = 1; i < LEAK_REPAIRS; i++) {
    await repair.runOnce();
    t.ok(await ips.isAllocated(leaked), `leak kept after repair ${i}`);
  }
  const r = await repair.runOnce();
  t.notOk(await ips.isAllocated(leaked), 'leak freed');
  t.equal(r.freed, 1);
  t.ok(await ips.isAllocated(used), 'a used IP is never freed');
  t.same(r.duplicates, []);

  // Another "server" allocates and creates while repairs run back to back: nothing is lost.
  const other = new IpAllocator(store, '10.71.0.0/24'), otherPorts = new PortAllocator(store, 32000, 200);
  let stop = false;
  const repairs = (async () => { let k = 0; while (!stop) { await repair.runOnce(); k++; } return k; })();
  const got: string[] = [], gotPorts: number[] = [];
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let i = 0; i < 15; i++) {
      const ip = await other.allocateNext(), port = await otherPorts.allocateNext();
      got.push(ip); gotPorts.push(port);
      await createService(ip, port);
    }
  }));
  stop = true;
  t.ok(await repairs > 0, 'repairs ran meanwhile');
  t.equal(new Set(got).size, got.length, 'no IP handed out twice');
  t.equal(new Set(gotPorts).size, gotPorts.length, 'no port handed out twice');
  const final = await repair.runOnce();
  t.same(final.duplicates, []);
  for (const ip of got) t.ok(await ips.isAllocated(ip), `${ip} still allocated`);
});

t.test('duplicates held by two services are reported', async (t) => {
  const ips = new IpAllocator(store, '10.72.0.0/24'), ports = new PortAllocator(store, 33000, 10);
  await createService('10.72.0.9');
  await createService('10.72.0.9');
  const r = await new AllocationRepair({ store, ips, nodePorts: ports, log }).runOnce();
  t.same(r.duplicates, ['10.72.0.9']);
  t.ok(await ips.isAllocated('10.72.0.9'));
});
