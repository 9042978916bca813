// CSI volumes on the node against a recording CSI driver of our own on a unix socket
// (test/helpers/csi-driver.ts): the node agent asks NodeGetInfo and NodeGetCapabilities once,
// stages a volume once per node, publishes it per pod, and when pods go unpublishes each and
// unstages after the last one, in that order; a driver without STAGE_UNSTAGE_VOLUME is only
// published; a driver that is not there fails the mount at once.
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { CsiNode } from '../../src/daemons/nodeagent/volumes/csi-node.js';
import { refreshVolumes, setUpVolumes, tearDownPodDir, type VolumeContext } from '../../src/daemons/nodeagent/volumes/volumes.js';
import { startRecordingDriver } from '../helpers/csi-driver.js';

const root = await mkdtemp(join(tmpdir(), 'corectl-csi-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
const DRIVER = 'fixture.csi.corectl.io';
const PLAIN = 'plain.csi.corectl.io';
await mkdir(join(root, 'plugins', DRIVER), { recursive: true });
await mkdir(join(root, 'plugins', PLAIN), { recursive: true });
const driver = await startRecordingDriver(join(root, 'plugins', DRIVER, 'csi.sock'), { nodeId: 'node-1' });
const plain = await startRecordingDriver(join(root, 'plugins', PLAIN, 'csi.sock'), { stages: false, name: PLAIN });
t.teardown(() => driver.stop());
t.teardown(() => plain.stop());

const secrets = new Map([['default/stage-secret', { key: 'sekret' }]]);
const claims = new Map<string, KubeObject>();
const pvs = new Map<string, KubeObject>();
function csiClaim(name: string, drv: string, handle: string): void {
  claims.set(`default/${name}`, { metadata: { name, namespace: 'default', uid: `u-${name}` }, spec: { volumeName: `pv-${name}` }, status: { phase: 'Bound' } });
  pvs.set(`pv-${name}`, {
    metadata: { name: `pv-${name}` },
    spec: {
      accessModes: ['ReadWriteOnce'], mountOptions: ['noatime'], claimRef: { namespace: 'default', name, uid: `u-${name}` },
      csi: { driver: drv, volumeHandle: handle, fsType: 'ext4', volumeAttributes: { tier: 'gold' }, nodeStageSecretRef: { name: 'stage-secret', namespace: 'default' } },
    },
  });
}
const csi = new CsiNode({ rootDir: root, reader: { configMap: async () => undefined, secret: async (ns, n) => secrets.get(`${ns}/${n}`) }, log: pino({ level: 'silent' }) });
t.teardown(() => csi.close());
const ctx: VolumeContext = {
  rootDir: root, podIp: '', hostIp: '', log: pino({ level: 'silent' }), csi,
  reader: { configMap: async () => undefined, secret: async () => undefined }, projected: { setUp: async () => undefined },
  claims: { claim: async (ns, n) => claims.get(`${ns}/${n}`), volume: async (n) => pvs.get(n) },
};
const pod = (uid: string, claimName: string, readOnly = false): Pod => ({
  metadata: { name: `p-${uid}`, namespace: 'default', uid }, spec: { containers: [{ name: 'c' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName, readOnly } }] },
});

t.test('stage once, publish per pod, unpublish each, unstage after the last', async (t) => {
  csiClaim('shared', DRIVER, 'vol-1');
  const a = await setUpVolumes(pod('pa', 'shared'), ctx);
  const b = await setUpVolumes(pod('pb', 'shared', true), ctx);
  const targetA = join(root, 'pods', 'pa', 'volumes', 'kubernetes.io~csi', 'data', 'mount');
  const targetB = join(root, 'pods', 'pb', 'volumes', 'kubernetes.io~csi', 'data', 'mount');
  t.equal(a.get('data'), targetA, 'the pod mounts its publish target');
  t.equal(await readFile(join(targetA, 'published'), 'utf8'), 'vol-1');
  t.ok(b.readOnly.has('data'));
  await tearDownPodDir(root, 'pa', csi);
  t.equal(await readFile(join(targetB, 'published'), 'utf8'), 'vol-1', 'the other pod keeps its volume');
  await tearDownPodDir(root, 'pb', csi);
  t.same(driver.calls.map(([m, r]) => `${m}${r.targetPath ? ` ${String(r.targetPath).includes('/pa/') ? 'pa' : 'pb'}` : ''}`), [
    'NodeGetInfo', 'NodeGetCapabilities', 'NodeStageVolume', 'NodePublishVolume pa', 'NodePublishVolume pb',
    'NodeUnpublishVolume pa', 'NodeUnpublishVolume pb', 'NodeUnstageVolume',
  ], 'the recorded order');
  const stage = driver.calls.find(([m]) => m === 'NodeStageVolume')![1];
  const staging = csi.stagingPath(DRIVER, 'vol-1');
  t.equal(stage.stagingTargetPath, staging);
  t.same(stage.secrets, { key: 'sekret' }, 'nodeStageSecretRef is read');
  t.same(stage.volumeContext, { tier: 'gold' });
  t.same(stage.volumeCapability, { mount: { fsType: 'ext4', mountFlags: ['noatime'], volumeMountGroup: '' }, accessMode: { mode: 'SINGLE_NODE_WRITER' }, accessType: 'mount' });
  const pubs = driver.calls.filter(([m]) => m === 'NodePublishVolume').map(([, r]) => r);
  t.same(pubs.map((r) => [r.stagingTargetPath, r.readonly]), [[staging, false], [staging, true]], 'published from the staging path; readOnly passed');
  t.match(pubs[0]?.volumeContext, { tier: 'gold', 'csi.storage.k8s.io/pod.name': 'p-pa', 'csi.storage.k8s.io/pod.uid': 'pa' });
  t.same(driver.calls.find(([m]) => m === 'NodeUnstageVolume')![1], { volumeId: 'vol-1', stagingTargetPath: staging });
});

t.test('a driver without STAGE_UNSTAGE_VOLUME is only published and unpublished', async (t) => {
  csiClaim('plain', PLAIN, 'vol-2');
  await setUpVolumes(pod('pc', 'plain'), ctx);
  await tearDownPodDir(root, 'pc', csi);
  t.same(plain.calls.map(([m]) => m), ['NodeGetInfo', 'NodeGetCapabilities', 'NodePublishVolume', 'NodeUnpublishVolume']);
  t.equal(plain.calls[2]?.[1].stagingTargetPath, '');
});

t.test('a driver that is not registered fails the mount at once', async (t) => {
  csiClaim('missing', 'missing.csi.corectl.io', 'vol-3');
  const started = Date.now();
  await t.rejects(setUpVolumes(pod('pd', 'missing'), ctx), /driver name missing\.csi\.corectl\.io not found in the list of registered CSI drivers/);
  t.ok(Date.now() - started < 30_000, 'no hang');
  await tearDownPodDir(root, 'pd', csi);
});

t.test('a driver that attaches: staging waits for the VolumeAttachment and gets its publish context; volumesInUse', async (t) => {
  let attached: Record<string, string> | undefined;
  const looked: string[] = [];
  const attaching = new CsiNode({
    rootDir: root, reader: { configMap: async () => undefined, secret: async (ns, n) => secrets.get(`${ns}/${n}`) },
    attachments: { required: async (d) => d === DRIVER, lookup: async (d, h, pv) => { looked.push(`${d} ${h} ${pv}`); return attached; } },
  });
  t.teardown(() => attaching.close());
  const actx = { ...ctx, csi: attaching };
  csiClaim('att', DRIVER, 'vol-att');
  const before = driver.calls.length;
  await t.rejects(setUpVolumes(pod('pe', 'att'), actx), /is not attached to the node yet/);
  t.equal(driver.calls.slice(before).filter(([m]) => m === 'NodeStageVolume').length, 0, 'not staged before it is attached');
  attached = { devicePath: '/dev/fake0' };
  await setUpVolumes(pod('pe', 'att'), actx);
  t.same(looked, [`${DRIVER} vol-att pv-att`, `${DRIVER} vol-att pv-att`]);
  const stage = driver.calls.slice(before).find(([m]) => m === 'NodeStageVolume')![1];
  t.same(stage.publishContext, { devicePath: '/dev/fake0' }, 'the attachment metadata is the publish context');
  t.same(await attaching.volumesInUse(), [`kubernetes.io/csi/${DRIVER}^vol-att`]);
  await tearDownPodDir(root, 'pe', attaching);
  t.same(await attaching.volumesInUse(), [], 'none once unpublished');
});

t.test('expansion on the node: NodeExpandVolume on the target, then the claim\'s capacity and conditions', async (t) => {
  const EXP = 'expand.csi.corectl.io';
  await mkdir(join(root, 'plugins', EXP), { recursive: true });
  const exp = await startRecordingDriver(join(root, 'plugins', EXP, 'csi.sock'), { name: EXP, expands: true });
  t.teardown(() => exp.stop());
  const patches: Array<[string, Record<string, unknown>]> = [];
  const ectx: VolumeContext = { ...ctx, claims: { ...ctx.claims!, patchClaimStatus: async (ns, n, p) => { patches.push([`${ns}/${n}`, p]); } } };
  csiClaim('grow', EXP, 'vol-grow');
  const paths = await setUpVolumes(pod('pf', 'grow'), ectx);
  t.same(await refreshVolumes(pod('pf', 'grow'), paths, ectx), [], 'nothing pending');
  // The resizer grew the volume and asked the node to finish.
  pvs.get('pv-grow')!.spec = { ...(pvs.get('pv-grow')!.spec as object), capacity: { storage: '2Gi' } };
  claims.get('default/grow')!.status = { phase: 'Bound', capacity: { storage: '1Gi' }, conditions: [{ type: 'Resizing', status: 'False' }, { type: 'FileSystemResizePending', status: 'True' }] };
  t.same(await refreshVolumes(pod('pf', 'grow'), paths, ectx), ['claim grow expanded']);
  const call = exp.calls.find(([m]) => m === 'NodeExpandVolume')![1];
  t.equal(call.volumePath, paths.get('data'), 'on the pod\'s publish target');
  t.same(call.capacityRange, { requiredBytes: String(2 * 1024 ** 3), limitBytes: '0' });
  t.equal(call.stagingTargetPath, csi.stagingPath(EXP, 'vol-grow'));
  t.same(patches, [['default/grow', { status: { capacity: { storage: '2Gi' }, conditions: [{ type: 'Resizing', status: 'False' }] } }]], 'capacity set, condition dropped');
  await tearDownPodDir(root, 'pf', csi);
});
