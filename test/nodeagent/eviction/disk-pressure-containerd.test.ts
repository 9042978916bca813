/**
 * Eviction on a private containerd (skipped unless root with containerd installed). The root
 * dir is a 512Mi tmpfs of its own, so that other processes writing to the machine's disk
 * cannot move the signal; with --eviction-hard=nodefs.available<(its free space - 200Mi), a pod
 * that writes 300Mi into an emptyDir brings DiskPressure; that pod, not its idle neighbour, is evicted (phase Failed,
 * reason Evicted, Kubernetes' message, an Evicted event); a pod arriving under pressure is
 * refused (Evicted, "The node had condition: [DiskPressure]. "); the emptyDir is freed and the
 * condition clears once the transition period has passed.
 */
import { spawnSync } from 'node:child_process';
import { statfs } from 'node:fs/promises';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../../src/api/resources/types.js';
import { loadCoreconfig } from '../../../src/client/coreconfig.js';
import { RestClient } from '../../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../../src/flags/nodeagent.js';
import { startNodeAgent, type NodeAgent } from '../../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../../helpers/apiserver.js';
import { containerdSkipReason, startContainerd } from '../../helpers/containerd.js';
import { BUSYBOX_IMAGE } from '../../helpers/oci-image.js';
import { waitFor } from '../../helpers/wait-for.js';

type Cond = { type: string; status: string; lastTransitionTime?: string };
const MI = 2 ** 20;

const skip = containerdSkipReason();
if (skip) t.plan(0, `containerd: ${skip}`);
else await main();

async function main(): Promise<void> {
  const containerd = await startContainerd();
  const api = await startApiserver();
  const dir = await mkdtemp(join(tmpdir(), 'corectl-evict-'));
  const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
  let agent: NodeAgent | undefined;
  const root = join(dir, 'root');
  await mkdir(root, { recursive: true });
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512m', 'tmpfs', root], { encoding: 'utf8' });
  if (mount.status !== 0) throw new Error(`mount tmpfs: ${mount.stderr}`);
  t.teardown(async () => {
    await agent?.stop({ stopPods: true }).catch(() => undefined);
    client.close();
    await api.stop();
    await containerd.stop();
    spawnSync('umount', ['-l', root]);
    await rm(dir, { recursive: true, force: true });
  });
  const s = await statfs(root);
  const free = s.bavail * s.bsize;
  const thresholdMi = Math.floor((free - 200 * MI) / MI);
  const { config } = parseNodeagentArgs([
    '--container-runtime=remote', `--container-runtime-endpoint=${containerd.endpoint}`, `--coreconfig=${api.coreconfigPath}`,
    '--hostname-override=evict-node', `--root-dir=${root}`, `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0',
    '--healthz-port=0', '--fail-swap-on=false', '--address=127.0.0.1', '--node-status-update-frequency=1s', '--resolv-conf=', '--event-qps=0',
    `--eviction-hard=nodefs.available<${thresholdMi}Mi`, '--eviction-pressure-transition-period=10s',
  ]);
  agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true, evictionIntervalMs: 1000 });
  const PODS = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
  const NODES = { group: '', version: 'v1', resource: 'nodes' };
  let lastCondition: Cond | undefined;
  const diskPressure = async (): Promise<string | undefined> => {
    const n = await client.get<KubeObject & { status?: { conditions?: Cond[] } }>(NODES, 'evict-node').catch(() => undefined);
    lastCondition = n?.status?.conditions?.find((c) => c.type === 'DiskPressure');
    return lastCondition?.status;
  };
  const pod = (name: string, command: string): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: {
      nodeName: 'evict-node', terminationGracePeriodSeconds: 1, restartPolicy: 'Never',
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [{ name: 'c', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['sh', '-c', command], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    },
  });

  t.test('the node starts without disk pressure', async (t) => {
    t.equal(await waitFor('DiskPressure condition', diskPressure, 30_000), 'False');
  });

  t.test('filling an emptyDir past the threshold evicts that pod, and the pressure clears', async (t) => {
    await client.create(PODS, pod('idle', 'sleep 3600'));
    await waitFor('idle runs', async () => (await client.get<Pod>(PODS, 'idle')).status?.phase === 'Running', 60_000);
    await client.create(PODS, pod('filler', 'dd if=/dev/zero of=/data/fill bs=1M count=300 && sync && echo filled && sleep 3600'));
    await waitFor('filler runs', async () => (await client.get<Pod>(PODS, 'filler')).status?.phase === 'Running', 60_000);
    const t0 = Date.now();
    t.equal(await waitFor('DiskPressure True', async () => (await diskPressure()) === 'True' && 'True', 60_000), 'True');
    const tPressure = Date.now();
    const pressureSince = Date.parse(lastCondition?.lastTransitionTime ?? '');
    await client.create(PODS, pod('late', 'sleep 3600'));
    const evicted = await waitFor('filler evicted', async () => {
      const p = await client.get<Pod>(PODS, 'filler');
      return p.status?.reason === 'Evicted' ? p : undefined;
    }, 60_000);
    const tEvicted = Date.now();
    t.equal(evicted.status?.phase, 'Failed');
    t.match(evicted.status?.message, /^The node was low on resource: ephemeral-storage\. Threshold quantity: \d+Mi, available: \d+(Ki|Mi|Gi)?\. Container c was using \d+(Ki|Mi|Gi)?, request is 0, has larger consumption of ephemeral-storage\. $/);
    const idle = await client.get<Pod>(PODS, 'idle');
    t.equal(idle.status?.phase, 'Running', 'the pod using no disk is kept');
    const late = await waitFor('late refused', async () => {
      const p = await client.get<Pod>(PODS, 'late');
      return p.status?.phase === 'Failed' || p.status?.phase === 'Running' ? p : undefined;
    }, 30_000);
    t.same([late.status?.phase, late.status?.reason, late.status?.message], ['Failed', 'Evicted', 'The node had condition: [DiskPressure]. '], 'a pod arriving under disk pressure is refused');
    const events = await client.list<KubeObject & { reason?: string; type?: string; involvedObject?: { name?: string } }>({ group: '', version: 'v1', resource: 'events', namespace: 'default' });
    t.ok(events.items.some((e) => e.reason === 'Evicted' && e.type === 'Warning' && e.involvedObject?.name === 'filler'), 'an Evicted event');
    await waitFor('DiskPressure False', async () => (await diskPressure()) === 'False', 60_000);
    const tClear = Date.now();
    const clearedAt = Date.parse(lastCondition?.lastTransitionTime ?? '');
    t.comment(`measured: DiskPressure posted ${tPressure - t0}ms after the filler ran, filler Evicted ${tEvicted - tPressure}ms later, condition cleared ${tClear - tEvicted}ms after the eviction (transition period 10s)`);
    // Condition times have one-second resolution: 10 s of transition period show as at least 9 s.
    t.ok(clearedAt - pressureSince >= 9000, `the condition held for the transition period (${clearedAt - pressureSince}ms by its transition times)`);
  });
}
