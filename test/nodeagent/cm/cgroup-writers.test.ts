// Cgroup names for both drivers, the v1 and v2 writers against temp directory trees (the
// real cgroup filesystem creates interface files itself; here writes create them), and the
// container manager's layout over a v2 tree with systemd naming.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { openCgroupFs, detectCgroupVersion, sharesToWeight } from '../../../src/daemons/nodeagent/cm/cgroup-fs.js';
import { cgroupPath, parseCgroupName, podCgroupName } from '../../../src/daemons/nodeagent/cm/cgroup-name.js';
import { ContainerManager } from '../../../src/daemons/nodeagent/cm/container-manager.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';

const log = pino({ level: 'silent' });
const dir = await mkdtemp(join(tmpdir(), 'corectl-cgw-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const read = (...p: string[]): string => readFileSync(join(...p), 'utf8').trim();

t.test('names: cgroupfs and systemd', async (t) => {
  const pod = podCgroupName([], 'Burstable', '12ab-34cd');
  t.equal(cgroupPath(pod, 'cgroupfs'), '/kubepods/burstable/pod12ab-34cd');
  t.equal(cgroupPath(pod, 'systemd'), '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12ab_34cd.slice');
  t.equal(cgroupPath(podCgroupName([], 'Guaranteed', 'u1'), 'systemd'), '/kubepods.slice/kubepods-podu1.slice');
  t.equal(cgroupPath(podCgroupName(['custom'], 'BestEffort', 'u'), 'cgroupfs'), '/custom/kubepods/besteffort/podu');
  t.same(parseCgroupName('/system.slice/foo-bar.slice', 'systemd'), ['foo', 'bar']);
  t.same(parseCgroupName('/', 'systemd'), []);
  t.same(parseCgroupName('/a/b', 'cgroupfs'), ['a', 'b']);
  t.equal(cgroupPath([], 'systemd'), '/');
});

t.test('v2 writer: subtree_control down the path, v2 file names and values', async (t) => {
  const root = join(dir, 'v2');
  await mkdir(root, { recursive: true });
  await writeFile(join(root, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids rdma\n');
  t.equal(detectCgroupVersion(root), 2);
  const fs = openCgroupFs(root);
  t.equal(fs.version, 2);
  await fs.ensure('/kubepods/burstable/podX', { cpuShares: 1024, cpuQuota: 50_000, cpuPeriod: 100_000, memoryLimit: 64 * 2 ** 20, pidsLimit: -1, cpusetCpus: '0-1' });
  for (const p of ['', 'kubepods', 'kubepods/burstable']) t.equal(read(root, p, 'cgroup.subtree_control'), '+cpuset +cpu +memory +pids +hugetlb', `controllers delegated below /${p}`);
  const pod = join(root, 'kubepods/burstable/podX');
  t.equal(read(pod, 'cpu.weight'), String(sharesToWeight(1024)));
  t.equal(sharesToWeight(2), 1);
  t.equal(sharesToWeight(262_144), 10_000);
  t.equal(read(pod, 'cpu.max'), '50000 100000');
  t.equal(read(pod, 'memory.max'), String(64 * 2 ** 20));
  t.equal(read(pod, 'pids.max'), 'max');
  t.equal(read(pod, 'cpuset.cpus'), '0-1');
  await fs.update('/kubepods/burstable/podX', { cpuQuota: -1, memoryLimit: -1 });
  t.equal(read(pod, 'cpu.max'), 'max 100000');
  t.equal(read(pod, 'memory.max'), 'max');
  t.equal(await fs.read('/kubepods/burstable/podX', 'cpu.weight'), String(sharesToWeight(1024)));
  // A temp dir holds files; a real cgroup dir holds only virtual ones: drop them to rmdir.
  for (const f of ['cpu.weight', 'cpu.max', 'memory.max', 'pids.max', 'cpuset.cpus']) await rm(join(pod, f));
  await mkdir(join(pod, 'container1'));
  await fs.remove('/kubepods/burstable/podX');
  t.notOk(existsSync(pod), 'removed with the runtime\'s leftover child');
  await fs.remove('/kubepods/burstable/podX');
  t.pass('removing a removed cgroup is fine');
});

t.test('v1 writer: one directory per hierarchy, cpuset copied down', async (t) => {
  const root = join(dir, 'v1');
  for (const c of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'blkio']) await mkdir(join(root, c), { recursive: true });
  await writeFile(join(root, 'cpuset', 'cpuset.cpus'), '0-3\n');
  await writeFile(join(root, 'cpuset', 'cpuset.mems'), '0\n');
  t.equal(detectCgroupVersion(root), 1);
  const fs = openCgroupFs(root);
  await fs.ensure('/kubepods/podY', { cpuShares: 512, cpuQuota: 25_000, cpuPeriod: 100_000, memoryLimit: 1 << 20, pidsLimit: 100 });
  for (const c of ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'blkio']) t.ok(existsSync(join(root, c, 'kubepods/podY')), `made in ${c}`);
  t.equal(read(root, 'cpuset/kubepods/cpuset.cpus'), '0-3');
  t.equal(read(root, 'cpuset/kubepods/podY/cpuset.mems'), '0');
  t.equal(read(root, 'cpu/kubepods/podY/cpu.shares'), '512');
  t.equal(read(root, 'cpu/kubepods/podY/cpu.cfs_quota_us'), '25000');
  t.equal(read(root, 'cpu/kubepods/podY/cpu.cfs_period_us'), '100000');
  t.equal(read(root, 'memory/kubepods/podY/memory.limit_in_bytes'), String(1 << 20));
  t.equal(read(root, 'pids/kubepods/podY/pids.max'), '100');
  t.ok(fs.exists('/kubepods/podY'));
});

t.test('container manager on a v2 tree with the systemd driver', async (t) => {
  const root = join(dir, 'cm');
  await mkdir(join(root, 'system.slice'), { recursive: true });
  await writeFile(join(root, 'cgroup.controllers'), 'cpuset cpu memory pids\n');
  const fs = openCgroupFs(root);
  const base = {
    fs, driver: 'systemd' as const, cgroupsPerQos: true, cgroupRoot: '/', systemReserved: { cpu: '500m', memory: '1Gi' }, coreReserved: { memory: '1Gi' },
    systemReservedCgroup: '/system.slice', coreReservedCgroup: '', nodeagentCgroups: '/nodeagent.slice', runtimeCgroups: '/runtime.slice', systemCgroups: '/',
    cpuCfsQuota: true, qosReserved: { memory: '50%' }, capacity: { cpuMilli: 4000, memoryBytes: 8 * 2 ** 30 }, log, pid: 4242,
  };
  const missing = new ContainerManager({ ...base, enforceNodeAllocatable: ['pods', 'core-reserved'], coreReservedCgroup: '/core.slice' });
  await t.rejects(missing.start(), /--core-reserved-cgroup \/core.slice: the cgroup does not exist/);
  await t.rejects(new ContainerManager({ ...base, cgroupsPerQos: false, enforceNodeAllocatable: ['pods'] }).start(), /needs --cgroups-per-qos=true/);
  await t.rejects(new ContainerManager({ ...base, qosReserved: { memory: 'lots' }, enforceNodeAllocatable: ['pods'] }).start(), /--experimental-qos-reserved/);

  // A pod cgroup left by an earlier run (its pod gone) is removed at start; a live one refuses.
  await mkdir(join(root, 'kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podold.slice/leftover-container'), { recursive: true });
  const cm = new ContainerManager({ ...base, enforceNodeAllocatable: ['pods', 'system-reserved'], staleAfterMs: 0 });
  const pods: Pod[] = [];
  cm.trackPods(() => pods);
  await cm.start();
  t.equal(read(root, 'kubepods.slice/cpu.weight'), String(sharesToWeight(Math.floor(3500 * 1024 / 1000))), 'kubepods: allocatable cpu 3500m');
  t.equal(read(root, 'kubepods.slice/memory.max'), String(6 * 2 ** 30), 'kubepods: capacity minus both reservations');
  t.equal(read(root, 'system.slice/memory.max'), String(2 ** 30), 'system-reserved enforced on its cgroup');
  t.equal(read(root, 'nodeagent.slice/cgroup.procs'), '4242', '--nodeagent-cgroups: our pid moved in');
  t.ok(existsSync(join(root, 'runtime.slice')), '--runtime-cgroups created');
  t.notOk(existsSync(join(root, 'kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podold.slice')), 'a stale pod cgroup is removed at start');
  t.ok(existsSync(join(root, 'kubepods.slice/kubepods-besteffort.slice')), 'the QoS cgroup stays');

  const g: Pod = { metadata: { uid: 'g-1' }, spec: { containers: [{ name: 'a', resources: { limits: { cpu: '1', memory: '1Gi' } } }] } };
  const b: Pod = { metadata: { uid: 'b-1' }, spec: { containers: [{ name: 'a', resources: { requests: { cpu: '250m', memory: '512Mi' } } }, { name: 'b', resources: { limits: { memory: '1Gi' } } }] } };
  pods.push(g, b);
  t.equal(cm.podCgroupPath(g), '/kubepods.slice/kubepods-podg_1.slice');
  t.equal(cm.podCgroupPath(b), '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb_1.slice');
  t.equal(cm.podCgroupParent(g), '/kubepods.slice/kubepods-podg_1.slice/.', 'a runtime on cgroupfs gets a parent that containerd will not turn into a systemd unit');
  t.equal(new ContainerManager({ ...base, enforceNodeAllocatable: [], runtimeSystemd: true }).podCgroupParent(g), '/kubepods.slice/kubepods-podg_1.slice', 'with systemd: the slice');
  await cm.ensurePod(g);
  await cm.ensurePod(b);
  t.equal(read(root, 'kubepods.slice/kubepods-podg_1.slice/cpu.max'), '100000 100000');
  t.equal(read(root, 'kubepods.slice/kubepods-podg_1.slice/memory.max'), String(2 ** 30));
  const bDir = 'kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb_1.slice';
  t.equal(read(root, bDir, 'cpu.weight'), String(sharesToWeight(256)), 'burstable pod: shares from 250m');
  t.notOk(existsSync(join(root, bDir, 'cpu.max')), 'no quota: a container has no cpu limit');
  t.notOk(existsSync(join(root, bDir, 'memory.max')), 'no memory limit: container a has none');
  // memory=50%: burstable = allocatable - 50% of Guaranteed requests; besteffort = that - 50% of Burstable requests.
  t.equal(read(root, 'kubepods.slice/kubepods-burstable.slice/memory.max'), String(6 * 2 ** 30 - 2 ** 29));
  t.equal(read(root, 'kubepods.slice/kubepods-besteffort.slice/memory.max'), String(6 * 2 ** 30 - 2 ** 29 - (512 + 1024) * 2 ** 19));
  t.equal(read(root, 'kubepods.slice/kubepods-burstable.slice/cpu.weight'), String(sharesToWeight(256)));

  pods.splice(0, 1);
  await cm.removePod(g);
  for (const f of ['cpu.weight', 'cpu.max', 'memory.max']) await rm(join(root, 'kubepods.slice/kubepods-podg_1.slice', f), { force: true });
  await cm.sweep();
  t.notOk(existsSync(join(root, 'kubepods.slice/kubepods-podg_1.slice')), 'a gone pod\'s cgroup is swept once empty');
  t.ok(existsSync(join(root, bDir)), 'an active pod\'s cgroup stays');
});

t.test('--cgroups-per-qos=false and --system-cgroups on a v1 tree', async (t) => {
  const root = join(dir, 'v1b');
  for (const c of ['cpu', 'memory']) await mkdir(join(root, c), { recursive: true });
  await writeFile(join(root, 'cpu', 'cgroup.procs'), '1\n55\n66\n');
  const proc = join(dir, 'proc');
  await mkdir(join(proc, '55'), { recursive: true });
  await mkdir(join(proc, '66'), { recursive: true });
  await writeFile(join(proc, '55', 'cmdline'), 'sleep\x0030\x00');
  await writeFile(join(proc, '66', 'cmdline'), ''); // a kernel thread has no command line
  const fs = openCgroupFs(root);
  const base = {
    fs, driver: 'cgroupfs' as const, systemReserved: {}, coreReserved: {}, systemReservedCgroup: '', coreReservedCgroup: '',
    nodeagentCgroups: '', runtimeCgroups: '', cpuCfsQuota: true, qosReserved: {}, capacity: { cpuMilli: 2000, memoryBytes: 2 ** 30 }, log, procRoot: proc,
  };
  const flat = new ContainerManager({ ...base, cgroupsPerQos: false, cgroupRoot: '', enforceNodeAllocatable: ['none'], systemCgroups: '/system' });
  await flat.start();
  t.notOk(existsSync(join(root, 'cpu', 'kubepods')), 'no QoS hierarchy');
  t.equal(flat.podCgroupParent({ metadata: { uid: 'x' } }), '', 'pods under the runtime\'s default parent');
  t.equal(read(root, 'cpu/system/cgroup.procs'), '55', 'the user process moved into --system-cgroups; init and the kernel thread stay');
  await mkdir(join(root, 'cpu', 'custom'));
  await mkdir(join(root, 'memory', 'custom'));
  const rooted = new ContainerManager({ ...base, cgroupsPerQos: false, cgroupRoot: '/custom', enforceNodeAllocatable: [], systemCgroups: '/' });
  await rooted.start();
  t.equal(rooted.podCgroupParent({ metadata: { uid: 'x' } }), '/custom', 'pods directly under --cgroup-root');
  await t.rejects(new ContainerManager({ ...base, cgroupsPerQos: true, cgroupRoot: '/missing', enforceNodeAllocatable: ['pods'], systemCgroups: '/' }).start(), /--cgroup-root \/missing: the cgroup does not exist/);
});
