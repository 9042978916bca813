/**
 * The node agent's cgroups on a private containerd (skipped unless root with containerd and a
 * v1 or v2 cgroup filesystem): pods of each QoS class land in kubepods / burstable /
 * besteffort pod cgroups with their summed requests and limits, the containers run under
 * them, a memory hog is OOM-killed and reported OOMKilled with exit code 137, and under
 * --cpu-manager-policy=static a Guaranteed pod with cpu: 1 gets a CPU of its own while the
 * shared pool (every other container's cpuset) shrinks, and grows back when it is gone.
 * A second agent with --cgroup-driver=systemd puts its pods in systemd-named slices (through
 * the cgroup filesystem) and hands the runtime a pod's sysctls and Localhost seccomp profile.
 * The agents work under a private --cgroup-root so that parallel agents never meet.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseNodeagentArgs } from '../../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';
import { DEFAULT_CGROUP_MOUNT, detectCgroupVersion, openCgroupFs } from '../../../src/daemons/nodeagent/cm/cgroup-fs.js';
import { containerdSkipReason, startContainerd } from '../../helpers/containerd.js';
import { waitFor } from '../../helpers/wait-for.js';

const skip = containerdSkipReason() || (existsSync(join(DEFAULT_CGROUP_MOUNT, 'cpu')) || existsSync(join(DEFAULT_CGROUP_MOUNT, 'cgroup.controllers')) ? false : 'no cgroup filesystem');
if (skip) t.plan(0, `containerd: ${skip}`);
else await main();

async function main(): Promise<void> {
  const v = detectCgroupVersion();
  const fs = openCgroupFs();
  const root = `/corectl-cm-${randomBytes(4).toString('hex')}`;
  await fs.ensure(root);
  const containerd = await startContainerd();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-cm-'));
  const manifests = join(dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  let agent: NodeAgent | undefined;
  const sliceRoot = `/corectlcm${randomBytes(4).toString('hex')}.slice`;
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    await containerd.stop();
    await fs.remove(root).catch(() => undefined);
    await fs.remove(sliceRoot).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  /** v1: a controller's file; v2: the unified tree's. */
  const file = (controller: string, path: string, name: string): string => (v === 2 ? join(DEFAULT_CGROUP_MOUNT, path, name) : join(DEFAULT_CGROUP_MOUNT, controller, path, name));
  const read = (controller: string, path: string, name: string): string => readFileSync(file(controller, path, name), 'utf8').trim();

  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${join(dir, 'absent')}`,
    '--hostname-override=cm-node', `--root-dir=${join(dir, 'root')}`, '--enable-server=false', '--fail-swap-on=false', '--resolv-conf=',
    `--pod-manifest-path=${manifests}`, '--file-check-frequency=1s', `--cgroup-root=${root}`,
    '--cpu-manager-policy=static', '--system-reserved=cpu=500m,memory=100Mi', '--cpu-manager-reconcile-period=1s',
  ]);
  agent = await startNodeAgent(config, { relistPeriodMs: 200, skipProcessTweaks: true, backoff: { initialMs: 1000, maxMs: 2000, resetMs: 600_000 } });
  const a = agent;

  const manifest = (name: string, resources: object | undefined, command = 'sleep 600', restartPolicy = 'Always'): string => JSON.stringify({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1, restartPolicy,
      containers: [{ name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', command: ['sh', '-c', command], ...(resources ? { resources } : {}) }],
    },
  });
  const podNamed = (name: string): Pod | undefined => a.pods.pods().find((p) => p.metadata?.name === `${name}-cm-node`);
  const running = (name: string): Promise<Pod> => waitFor(`${name} running`, () => { const p = podNamed(name); return p?.status?.phase === 'Running' ? p : undefined; }, 60_000);
  const containerId = (p: Pod): string => (p.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^containerd:\/\//, '');

  t.test('node-level QoS cgroups', async (t) => {
    t.ok(fs.exists(`${root}/kubepods`), 'kubepods under --cgroup-root');
    t.ok(fs.exists(`${root}/kubepods/burstable`), 'burstable');
    t.ok(fs.exists(`${root}/kubepods/besteffort`), 'besteffort');
    if (v === 1) {
      t.equal(read('cpu', `${root}/kubepods/besteffort`, 'cpu.shares'), '2', 'besteffort cpu.shares 2');
      const cores = a.host.cpuCores;
      t.equal(read('cpu', `${root}/kubepods`, 'cpu.shares'), String(Math.floor(((cores * 1000 - 500) * 1024) / 1000)), 'kubepods cpu.shares from allocatable cpu (capacity - 500m)');
      t.equal(Number(read('memory', `${root}/kubepods`, 'memory.limit_in_bytes')), Math.floor((a.host.memoryBytes - 100 * 2 ** 20) / 4096) * 4096, 'kubepods memory limit = capacity - system-reserved');
    }
  });

  t.test('pods of each QoS class get their cgroup and values; static CPUs', async (t) => {
    await writeFile(join(manifests, 'be.json'), manifest('be', undefined));
    const be = await running('be');
    const beUid = be.metadata?.uid ?? '';
    const bePath = `${root}/kubepods/besteffort/pod${beUid}`;
    t.ok(fs.exists(bePath), 'besteffort pod cgroup');
    const beId = containerId(be);
    t.ok(existsSync(file('cpu', `${bePath}/${beId}`, v === 1 ? 'cpu.shares' : 'cpu.weight')), 'the container runs under its pod cgroup');
    t.equal(read('cpuset', `${bePath}/${beId}`, 'cpuset.cpus'), '0-1', 'shared pool: every CPU');

    await writeFile(join(manifests, 'bu.json'), manifest('bu', { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } }));
    const bu = await running('bu');
    const buPath = `${root}/kubepods/burstable/pod${bu.metadata?.uid ?? ''}`;
    if (v === 1) {
      t.equal(read('cpu', buPath, 'cpu.shares'), '102', 'burstable pod cpu.shares from 100m');
      t.equal(read('cpu', buPath, 'cpu.cfs_quota_us'), '20000', 'cfs quota from 200m');
      t.equal(read('memory', buPath, 'memory.limit_in_bytes'), String(64 * 2 ** 20), 'memory limit 64Mi');
      t.equal(read('cpu', `${root}/kubepods/burstable`, 'cpu.shares'), '102', 'burstable QoS shares = its pods\' requests');
    } else {
      t.equal(read('cpu', buPath, 'cpu.max'), '20000 100000');
      t.equal(read('memory', buPath, 'memory.max'), String(64 * 2 ** 20));
    }

    await writeFile(join(manifests, 'gu.json'), manifest('gu', { limits: { cpu: '1', memory: '64Mi' } }));
    const gu = await running('gu');
    const guUid = gu.metadata?.uid ?? '';
    const guPath = `${root}/kubepods/pod${guUid}`;
    t.equal(gu.status?.qosClass, 'Guaranteed');
    if (v === 1) {
      t.equal(read('cpu', guPath, 'cpu.shares'), '1024', 'guaranteed pod cpu.shares from 1 cpu');
      t.equal(read('cpu', guPath, 'cpu.cfs_quota_us'), '100000', 'quota 1 cpu');
      t.equal(read('memory', guPath, 'memory.limit_in_bytes'), String(64 * 2 ** 20));
    }
    const guCpus = read('cpuset', `${guPath}/${containerId(gu)}`, 'cpuset.cpus');
    t.equal(guCpus, '1', 'the Guaranteed container has CPU 1 to itself (CPU 0 is reserved)');
    await waitFor('shared pool shrunk', () => read('cpuset', `${bePath}/${beId}`, 'cpuset.cpus') === '0', 15_000);
    t.pass('the besteffort container moved off CPU 1');
    const state = JSON.parse(readFileSync(join(dir, 'root', 'cpu_manager_state'), 'utf8')) as { policyName: string; defaultCpuSet: string; entries: Record<string, Record<string, string>> };
    t.equal(state.policyName, 'static');
    t.equal(state.defaultCpuSet, '0');
    t.same(state.entries[guUid], { main: '1' }, 'the assignment is in cpu_manager_state');

    await unlink(join(manifests, 'gu.json'));
    await waitFor('gu gone', () => !podNamed('gu'), 30_000);
    await waitFor('shared pool grown back', () => read('cpuset', `${bePath}/${beId}`, 'cpuset.cpus') === '0-1', 15_000);
    t.pass('CPU 1 is back in the shared pool');
    await waitFor('gu pod cgroup removed', () => !fs.exists(guPath), 15_000);
    t.pass('the pod cgroup is removed with the pod');
  });

  t.test('a memory hog over its limit is OOMKilled with exit code 137', async (t) => {
    await writeFile(join(manifests, 'hog.json'), manifest('hog', { limits: { memory: '20Mi' } }, 'x=a; while true; do x=$x$x; done', 'Never'));
    const p = await waitFor('hog terminated', () => {
      const x = podNamed('hog');
      return x?.status?.containerStatuses?.[0]?.state?.terminated ? x : undefined;
    }, 60_000);
    const term = p.status?.containerStatuses?.[0]?.state?.terminated;
    t.equal(term?.reason, 'OOMKilled');
    t.equal(term?.exitCode, 137);
    t.equal(p.status?.phase, 'Failed');
  });

  t.test('systemd naming, sysctls and a Localhost seccomp profile', async (t) => {
    await a.stop({ stopPods: true });
    await fs.ensure(sliceRoot);
    const seccompRoot = join(dir, 'seccomp');
    await mkdir(join(seccompRoot, 'profiles'), { recursive: true });
    await writeFile(join(seccompRoot, 'profiles', 'no-mkdir.json'), JSON.stringify({
      defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }],
    }));
    const manifests2 = join(dir, 'manifests2');
    await mkdir(manifests2, { recursive: true });
    const { config: c2 } = parseNodeagentArgs([
      '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${join(dir, 'absent')}`,
      '--hostname-override=cm-node', `--root-dir=${join(dir, 'root2')}`, '--enable-server=false', '--fail-swap-on=false', '--resolv-conf=',
      `--pod-manifest-path=${manifests2}`, '--file-check-frequency=1s', '--cgroup-driver=systemd', `--cgroup-root=${sliceRoot}`,
      `--seccomp-profile-root=${seccompRoot}`, '--experimental-allowed-unsafe-sysctls=net.core.somaxconn',
    ]);
    const b = agent = await startNodeAgent(c2, { relistPeriodMs: 200, skipProcessTweaks: true });
    await writeFile(join(manifests2, 'sd.json'), JSON.stringify({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'sd', namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 1,
        securityContext: { sysctls: [{ name: 'net.core.somaxconn', value: '321' }, { name: 'net.ipv4.ip_local_port_range', value: '20000 30000' }] },
        containers: [
          { name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', command: ['sleep', '600'], resources: { requests: { cpu: '50m' } } },
          { name: 'confined', image: 'localhost/busybox:latest', imagePullPolicy: 'Never', command: ['sleep', '600'], securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/no-mkdir.json' } } },
        ],
      },
    }));
    const p = await waitFor('sd running', () => { const x = b.pods.pods().find((y) => y.metadata?.name === 'sd-cm-node'); return x?.status?.phase === 'Running' ? x : undefined; }, 60_000);
    const uid = (p.metadata?.uid ?? '').replace(/-/g, '_');
    const prefix = sliceRoot.slice(1, -'.slice'.length);
    const podPath = `${sliceRoot}/${prefix}-kubepods.slice/${prefix}-kubepods-burstable.slice/${prefix}-kubepods-burstable-pod${uid}.slice`;
    t.ok(fs.exists(podPath), `pod cgroup in systemd naming: ${podPath}`);
    const ids = Object.fromEntries((p.status?.containerStatuses ?? []).map((s) => [s.name, (s.containerID ?? '').replace(/^containerd:\/\//, '')]));
    t.ok(existsSync(file('cpu', `${podPath}/${ids.main}`, v === 1 ? 'cpu.shares' : 'cpu.weight')), 'the container runs under it');
    if (v === 1) t.equal(read('cpu', podPath, 'cpu.shares'), '51', 'cpu.shares from 50m');
    const sh = async (id: string, cmd: string): Promise<string> => (await b.runtime.execSync(id, ['sh', '-c', cmd], 10)).stdout.toString().trim();
    t.equal(await sh(ids.main ?? '', 'cat /proc/sys/net/core/somaxconn'), '321', 'an allowed unsafe sysctl reaches the pod');
    t.equal(await sh(ids.main ?? '', 'cat /proc/sys/net/ipv4/ip_local_port_range'), '20000\t30000', 'a safe sysctl reaches the pod');
    t.equal(await sh(ids.main ?? '', 'mkdir /tmp/d && echo made'), 'made', 'an unconfined container may mkdir');
    t.equal(await sh(ids.confined ?? '', 'mkdir /tmp/d 2>/dev/null && echo made || echo refused'), 'refused', 'the Localhost profile refuses mkdir');
  });
}
