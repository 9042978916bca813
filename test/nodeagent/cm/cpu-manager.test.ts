// The static CPU manager without a runtime: reserved CPUs, exclusive assignments, the shared
// pool, Kubernetes' state file layout, refusals, and a restart reading the state back.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { CpuManager, exclusiveCpus } from '../../../src/daemons/nodeagent/cm/cpu-manager.js';
import { formatCpuSet, parseCpuSet } from '../../../src/daemons/nodeagent/cm/cpuset.js';
import { milliCpuToQuota, milliCpuToShares, podCgroupResources } from '../../../src/daemons/nodeagent/cm/pod-resources.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';

const log = pino({ level: 'silent' });
const dir = await mkdtemp(join(tmpdir(), 'corectl-cpum-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const pod = (uid: string, cpu: string, memory = '64Mi', requests?: Record<string, string>): Pod => ({
  metadata: { uid }, spec: { containers: [{ name: 'c', resources: { limits: { cpu, memory }, ...(requests ? { requests } : {}) } }] },
});

t.test('cpu lists and pod cgroup arithmetic', async (t) => {
  t.same(parseCpuSet('0-2,5,7-8'), [0, 1, 2, 5, 7, 8]);
  t.equal(formatCpuSet([8, 0, 1, 2, 5, 7]), '0-2,5,7-8');
  t.throws(() => parseCpuSet('3-1'));
  t.equal(milliCpuToShares(0), 2);
  t.equal(milliCpuToShares(1), 2);
  t.equal(milliCpuToShares(100), 102);
  t.equal(milliCpuToShares(1_000_000), 262_144);
  t.equal(milliCpuToQuota(5), 1000, 'at least 1 ms per period');
  t.equal(milliCpuToQuota(1500), 150_000);
  t.same(podCgroupResources(pod('x', '2'), true), { cpuShares: 2048, cpuPeriod: 100_000, cpuQuota: 200_000, memoryLimit: 64 * 2 ** 20 });
  t.same(podCgroupResources(pod('x', '2'), false), { cpuShares: 2048, cpuPeriod: 100_000, cpuQuota: -1, memoryLimit: 64 * 2 ** 20 }, '--cpu-cfs-quota=false');
  t.same(podCgroupResources({ spec: { containers: [{ name: 'c' }] } }, true), { cpuShares: 2 }, 'BestEffort');
  const withInit: Pod = { spec: { initContainers: [{ name: 'i', resources: { limits: { cpu: '3', memory: '1Gi' } } }], containers: [{ name: 'c', resources: { limits: { cpu: '1', memory: '64Mi' } } }] } };
  t.same(podCgroupResources(withInit, true), { cpuShares: 3072, cpuPeriod: 100_000, cpuQuota: 300_000, memoryLimit: 2 ** 30 }, 'an init container asking more counts');
  t.equal(exclusiveCpus(pod('a', '1'), { name: 'c', resources: { limits: { cpu: '1', memory: '64Mi' } } }), 1);
  t.equal(exclusiveCpus(pod('a', '1500m'), { name: 'c', resources: { limits: { cpu: '1500m', memory: '64Mi' } } }), 0, 'fractional: shared');
  const burst = pod('b', '2', '64Mi', { cpu: '1' });
  t.equal(exclusiveCpus(burst, burst.spec?.containers?.[0] ?? { name: '' }), 0, 'Burstable: shared');
});

t.test('static policy', async (t) => {
  t.throws(() => new CpuManager({ policy: 'static', rootDir: dir, cpus: [0, 1], reservedMilli: 0, log }), /needs reserved CPUs/);
  t.throws(() => new CpuManager({ policy: 'static', rootDir: dir, cpus: [0, 1], reservedMilli: 2000, log }), /none would be left/);
  const none = new CpuManager({ policy: 'none', rootDir: dir, cpus: [0, 1, 2, 3], reservedMilli: 0, log });
  none.allocate(pod('p', '1'));
  t.equal(none.cpusetFor('p', 'c'), undefined, 'none: no cpusets');

  const m = new CpuManager({ policy: 'static', rootDir: dir, cpus: [0, 1, 2, 3], reservedMilli: 1500, log });
  t.same(m.reserved, [0, 1], '1500m reserves two CPUs, lowest first');
  m.start();
  m.allocate(pod('p1', '1'));
  t.equal(m.cpusetFor('p1', 'c'), '2');
  t.equal(m.cpusetFor('other', 'c'), '0-1,3', 'shared pool keeps the reserved CPUs');
  t.throws(() => m.allocate(pod('p2', '2')), /not enough cpus available to satisfy request: requested=2, available=1/);
  t.equal(m.cpusetFor('p2', 'c'), '0-1,3', 'nothing assigned on failure');
  m.allocate(pod('p3', '1'));
  await m.flushed();
  const state = JSON.parse(readFileSync(join(dir, 'cpu_manager_state'), 'utf8')) as Record<string, unknown>;
  t.same(Object.keys(state), ['policyName', 'defaultCpuSet', 'entries', 'checksum'], 'Kubernetes\' layout');
  t.same(state, { policyName: 'static', defaultCpuSet: '0-1', entries: { p1: { c: '2' }, p3: { c: '3' } }, checksum: state.checksum });

  const again = new CpuManager({ policy: 'static', rootDir: dir, cpus: [0, 1, 2, 3], reservedMilli: 1500, log });
  t.equal(again.cpusetFor('p3', 'c'), '3', 'a restart keeps the assignments');
  t.ok(again.releaseStale(new Set(['p1'])));
  t.equal(again.cpusetFor('x', 'c'), '0-1,3');
  await again.flushed();
  writeFileSync(join(dir, 'cpu_manager_state'), JSON.stringify({ policyName: 'none', defaultCpuSet: '' }));
  t.throws(() => new CpuManager({ policy: 'static', rootDir: dir, cpus: [0, 1, 2, 3], reservedMilli: 1500, log }), /written by policy "none"/);
});
