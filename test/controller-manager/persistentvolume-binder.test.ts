import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { PersistentVolumeBinderController } from '../../src/daemons/controller-manager/controllers/persistentvolume-binder.js';
import { findBestMatchForClaim } from '../../src/daemons/controller-manager/controllers/persistentvolume/volume-index.js';
import { volumeMismatch } from '../../src/daemons/controller-manager/controllers/persistentvolume/volume-helpers.js';
import { deleterFor, hostPathDeletable, provisionerFor } from '../../src/daemons/controller-manager/controllers/persistentvolume/volume-plugins.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

type Dict = Record<string, unknown>;
const PVS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };
const CLAIMS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace: 'default' };
const CLASSES: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
const BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';

interface VolumeOpts { cls?: string; modes?: string[]; labels?: Record<string, string>; mode?: string; policy?: string; claimRef?: Dict; source?: Dict; phase?: string; vac?: string }
function volume(name: string, size: string, o: VolumeOpts = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name, ...(o.labels ? { labels: o.labels } : {}) },
    spec: {
      capacity: { storage: size }, accessModes: o.modes ?? ['ReadWriteOnce'], persistentVolumeReclaimPolicy: o.policy ?? 'Retain',
      ...(o.cls !== undefined ? { storageClassName: o.cls } : {}), ...(o.mode ? { volumeMode: o.mode } : {}),
      ...(o.claimRef ? { claimRef: o.claimRef } : {}), ...(o.vac ? { volumeAttributesClassName: o.vac } : {}),
      ...(o.source ?? { hostPath: { path: `/srv/volumes/${name}` } }),
    },
    ...(o.phase ? { status: { phase: o.phase } } : {}),
  };
}

interface ClaimOpts { cls?: string; modes?: string[]; selector?: Dict; mode?: string; volumeName?: string; annotations?: Record<string, string>; vac?: string }
function claim(name: string, size: string, o: ClaimOpts = {}): KubeObject {
  return {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'default', ...(o.annotations ? { annotations: o.annotations } : {}) },
    spec: {
      accessModes: o.modes ?? ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: o.cls ?? '',
      ...(o.selector ? { selector: o.selector } : {}), ...(o.mode ? { volumeMode: o.mode } : {}),
      ...(o.volumeName ? { volumeName: o.volumeName } : {}), ...(o.vac ? { volumeAttributesClassName: o.vac } : {}),
    },
  };
}

const spec = (o: KubeObject): Dict => (o.spec ?? {}) as Dict;
const status = (o: KubeObject): Dict => (o.status ?? {}) as Dict;
const phaseOf = (o: KubeObject): unknown => status(o).phase;
const annotations = (o: KubeObject): Record<string, string> => o.metadata?.annotations ?? {};
const claimRefOf = (v: KubeObject): Dict | undefined => spec(v).claimRef as Dict | undefined;

t.test('persistentvolume-binder is selectable and implemented', (t) => assertSelectable(t, 'persistentvolume-binder'));

t.test('which volume a claim gets', async (t) => {
  const avail = (v: KubeObject): KubeObject => ({ ...v, status: { phase: 'Available' } });
  const c = { ...claim('c', '3Gi', { cls: 'gold' }), metadata: { name: 'c', namespace: 'ns', uid: 'u1' } };
  const pick = (vols: KubeObject[], cl: KubeObject = c, delay = false): string | undefined => findBestMatchForClaim(cl, vols, delay)?.metadata?.name;

  t.equal(pick([avail(volume('v10', '10Gi', { cls: 'gold' })), avail(volume('v5', '5Gi', { cls: 'gold' })), avail(volume('v1', '1Gi', { cls: 'gold' }))]), 'v5', 'the smallest that fits');
  t.equal(pick([avail(volume('exact', '3Gi', { cls: 'gold' })), avail(volume('v5', '5Gi', { cls: 'gold' }))]), 'exact', 'an exact fit');
  t.equal(pick([avail(volume('big-rwo', '9Gi', { cls: 'gold' })), avail(volume('small-rwx', '4Gi', { cls: 'gold', modes: ['ReadWriteOnce', 'ReadWriteMany'] }))]), 'big-rwo',
    'volumes offering fewer access modes are searched first');
  t.equal(pick([avail(volume('rwx', '4Gi', { cls: 'gold', modes: ['ReadWriteMany'] }))]), undefined, 'access modes must include the requested ones');
  t.equal(pick([avail(volume('silver', '4Gi', { cls: 'silver' })), avail(volume('none', '4Gi'))]), undefined, 'the class must be equal');
  t.equal(pick([avail(volume('none', '4Gi')), avail(volume('gold', '4Gi', { cls: 'gold' }))], { ...c, spec: { ...spec(c), storageClassName: '' } }), 'none', '"" takes only classless volumes');
  t.equal(pick([avail(volume('block', '4Gi', { cls: 'gold', mode: 'Block' }))]), undefined, 'volumeMode must be equal (Filesystem by default)');
  t.equal(pick([avail(volume('vac', '4Gi', { cls: 'gold', vac: 'fast' }))]), undefined, 'so must the volume attributes class');
  t.equal(pick([volume('pending', '4Gi', { cls: 'gold' }), { ...avail(volume('released', '4Gi', { cls: 'gold' })), status: { phase: 'Released' } }]), undefined, 'only Available volumes');
  t.equal(pick([avail(volume('dying', '4Gi', { cls: 'gold' })), { ...avail(volume('x', '4Gi', { cls: 'gold' })), metadata: { name: 'x', deletionTimestamp: '2024-01-01T00:00:00Z' } }]), 'dying', 'not one being deleted');
  t.equal(pick([avail(volume('other', '4Gi', { cls: 'gold', claimRef: { namespace: 'ns', name: 'd' } }))]), undefined, 'not one pre-bound to another claim');

  const sel = { ...c, spec: { ...spec(c), selector: { matchLabels: { tier: 'a' }, matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1', 'z2'] }] } } };
  t.equal(pick([avail(volume('no-zone', '4Gi', { cls: 'gold', labels: { tier: 'a' } })), avail(volume('z2', '8Gi', { cls: 'gold', labels: { tier: 'a', zone: 'z2' } }))], sel), 'z2', 'the selector matches the labels');

  const pre = avail(volume('pre', '8Gi', { cls: 'other', modes: ['ReadWriteOnce'], claimRef: { namespace: 'ns', name: 'c' } }));
  t.equal(pick([avail(volume('v4', '4Gi', { cls: 'gold' })), pre]), 'pre', 'a volume pre-bound to the claim wins (its class is not checked)');
  t.equal(pick([{ ...pre, spec: { ...spec(pre), claimRef: { namespace: 'ns', name: 'c', uid: 'old' } } }]), undefined, 'but not when bound to an older claim of that name');
  t.equal(pick([avail(volume('v4', '4Gi', { cls: 'gold' })), pre], c, true), 'pre', 'delayed binding takes pre-bound volumes only');
  t.equal(pick([avail(volume('v4', '4Gi', { cls: 'gold' }))], c, true), undefined);

  t.equal(volumeMismatch(volume('small', '1Gi', { cls: 'gold' }), c), 'requested PV is too small');
  t.equal(volumeMismatch(volume('silver', '5Gi', { cls: 'silver' }), c), 'storageClassName does not match');
  t.equal(volumeMismatch(volume('block', '5Gi', { cls: 'gold', mode: 'Block' }), c), 'incompatible volumeMode');
  t.equal(volumeMismatch(volume('rox', '5Gi', { cls: 'gold', modes: ['ReadOnlyMany'] }), c), 'incompatible accessMode');
  t.equal(volumeMismatch(volume('fine', '5Gi', { cls: 'gold' }), c), undefined);
});

t.test('in-tree plugins: who deletes a volume, who provisions for a class', async (t) => {
  t.same(deleterFor(volume('hp', '1Gi', { source: { hostPath: { path: '/tmp/x' } } })), { kind: 'host-path', path: '/tmp/x' });
  t.same(deleterFor(volume('nfs', '1Gi', { source: { nfs: { server: 's', path: '/' } } })), { kind: 'failed', error: 'error getting deleter volume plugin for volume "nfs": no deletable volume plugin matched' });
  t.same(deleterFor(volume('loc', '1Gi', { source: { local: { path: '/mnt' } } })), { kind: 'failed', error: 'error getting deleter volume plugin for volume "loc": no volume plugin matched' });
  t.same(deleterFor(volume('csi', '1Gi', { source: { csi: { driver: 'd', volumeHandle: 'h' } } })), { kind: 'external' });
  const byExternal = volume('ext', '1Gi', { source: { local: { path: '/mnt' } } });
  byExternal.metadata!.annotations = { 'pv.kubernetes.io/provisioned-by': 'rancher.io/local-path' };
  t.same(deleterFor(byExternal), { kind: 'external' });
  t.equal(hostPathDeletable('/tmp/data'), undefined);
  t.equal(hostPathDeletable('/tmp/'), 'host_path deleter only supports /tmp/.+ but received provided /tmp/');
  t.equal(hostPathDeletable('/srv/data'), 'host_path deleter only supports /tmp/.+ but received provided /srv/data');
  t.same(provisionerFor('example.com/nfs'), { kind: 'external', name: 'example.com/nfs' });
  t.same(provisionerFor('kubernetes.io/aws-ebs'), { kind: 'external', name: 'ebs.csi.aws.com' }, 'migrated plugins go to their CSI driver');
  t.same(provisionerFor('kubernetes.io/no-provisioner'), { kind: 'failed', error: 'no volume plugin matched name: kubernetes.io/no-provisioner' });
  t.same(provisionerFor('kubernetes.io/host-path'), { kind: 'in-tree', plugin: 'kubernetes.io/host-path' });
});

t.test('persistentvolume-binder against a real API server', async (t) => {
  // A short resync: some transitions (a volume appearing for a waiting claim) wait for it, as in Kubernetes.
  const c = await startControllers(new PersistentVolumeBinderController(), { args: ['--pvclaimbinder-sync-period=1s'], recordEvents: true });
  t.teardown(() => c.stop());
  const api = c.client;

  const getVolume = (name: string): Promise<KubeObject> => api.get(PVS, name);
  const getClaim = (name: string): Promise<KubeObject> => api.get(CLAIMS, name);
  const gone = async (f: () => Promise<unknown>): Promise<boolean> => {
    try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
  };
  const createVolume = async (v: KubeObject): Promise<KubeObject> => {
    await api.create(PVS, v);
    return waitFor(`volume ${v.metadata?.name} Available`, async () => { const o = await getVolume(v.metadata!.name!); return phaseOf(o) === 'Available' && o; });
  };
  const volumePhase = (name: string, phase: string): Promise<KubeObject> =>
    waitFor(`volume ${name} ${phase}`, async () => { const o = await getVolume(name); return phaseOf(o) === phase && o; });
  const claimPhase = (name: string, phase: string): Promise<KubeObject> =>
    waitFor(`claim ${name} ${phase}`, async () => { const o = await getClaim(name); return phaseOf(o) === phase && o; });
  const eventsOf = async (name: string): Promise<KubeObject[]> => (await api.list(EVENTS, { fieldSelector: `involvedObject.name=${name}` })).items;
  const eventFor = (name: string, reason: string): Promise<KubeObject> =>
    waitFor(`${reason} event for ${name}`, async () => (await eventsOf(name)).find((e) => e.reason === reason));

  await t.test('static binding takes the smallest fitting volume and binds both sides', async (t) => {
    for (const [name, size] of [['st-500m', '500Mi'], ['st-1g', '1Gi'], ['st-5g', '5Gi'], ['st-10g', '10Gi']] as const) {
      await createVolume(volume(name, size, { cls: 'static', modes: ['ReadWriteOnce', 'ReadOnlyMany'] }));
    }
    const created = await api.create(CLAIMS, claim('st', '800Mi', { cls: 'static' }));
    const bound = await claimPhase('st', 'Bound');
    t.equal(spec(bound).volumeName, 'st-1g');
    t.equal(annotations(bound)[BIND_COMPLETED], 'yes');
    t.equal(annotations(bound)[BOUND_BY_CONTROLLER], 'yes');
    t.same(status(bound).capacity, { storage: '1Gi' }, 'the claim reports the volume capacity');
    t.same(status(bound).accessModes, ['ReadWriteOnce', 'ReadOnlyMany'], 'and its access modes');
    const v = await volumePhase('st-1g', 'Bound');
    const ref = claimRefOf(v)!;
    t.match(ref, { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'default', name: 'st', uid: created.metadata?.uid });
    t.ok(ref.resourceVersion, 'the claimRef carries the claim resourceVersion');
    t.equal(annotations(v)[BOUND_BY_CONTROLLER], 'yes');
    for (const other of ['st-500m', 'st-5g', 'st-10g']) t.equal(phaseOf(await getVolume(other)), 'Available', `${other} stays Available`);
  });

  await t.test('mismatching class, access modes, selector or volume mode do not bind', async (t) => {
    await createVolume(volume('mm', '2Gi', { cls: 'mm', labels: { tier: 'gold' } }));
    const misfits: Array<[string, ClaimOpts]> = [
      ['mm-class', { cls: 'mm-other' }],
      ['mm-modes', { cls: 'mm', modes: ['ReadWriteMany'] }],
      ['mm-selector', { cls: 'mm', selector: { matchLabels: { tier: 'silver' } } }],
      ['mm-block', { cls: 'mm', mode: 'Block' }],
      ['mm-size', { cls: 'mm' }],
    ];
    for (const [name, o] of misfits) await api.create(CLAIMS, claim(name, name === 'mm-size' ? '3Gi' : '1Gi', o));
    // No StorageClass objects exist for these classes: each sync that finds no volume says so.
    for (const [name] of misfits) {
      const ev = await eventFor(name, 'ProvisioningFailed');
      t.match(ev.message, /^storageclass\.storage\.k8s\.io "mm(-other)?" not found$/, `${name} was looked at`);
      const o = await getClaim(name);
      t.equal(phaseOf(o), 'Pending', `${name} stays Pending`);
      t.notOk(spec(o).volumeName);
    }
    t.equal(phaseOf(await getVolume('mm')), 'Available');
    t.notOk(claimRefOf(await getVolume('mm')));
    await api.create(CLAIMS, claim('mm-fit', '1Gi', { cls: 'mm', selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold'] }] } }));
    t.equal(spec(await claimPhase('mm-fit', 'Bound')).volumeName, 'mm', 'a fitting claim takes it');
  });

  await t.test('a classless claim with no volume waits with FailedBinding', async (t) => {
    await api.create(CLAIMS, claim('nocls', '1Gi'));
    const ev = await eventFor('nocls', 'FailedBinding');
    t.equal(ev.message, 'no persistent volumes available for this claim and no storage class is set');
    t.equal(ev.type, 'Normal');
    t.equal((ev.source as Dict).component, 'persistentvolume-controller');
    await createVolume(volume('nocls-v', '1Gi'));
    t.equal(spec(await claimPhase('nocls', 'Bound')).volumeName, 'nocls-v', 'bound by a later resync once a volume exists');
  });

  await t.test('a volume pre-bound to a claim is the one it gets', async (t) => {
    await createVolume(volume('pre-small', '1Gi', { cls: 'pre' }));
    await createVolume(volume('pre-v', '8Gi', { cls: 'pre', claimRef: { namespace: 'default', name: 'pre-c' } }));
    await api.create(CLAIMS, claim('pre-c', '1Gi', { cls: 'pre' }));
    const bound = await claimPhase('pre-c', 'Bound');
    t.equal(spec(bound).volumeName, 'pre-v');
    t.equal(annotations(bound)[BOUND_BY_CONTROLLER], 'yes', 'the controller set the claim side');
    const v = await volumePhase('pre-v', 'Bound');
    t.equal(claimRefOf(v)?.uid, bound.metadata?.uid, 'the pre-binding got the claim uid');
    t.notOk(annotations(v)[BOUND_BY_CONTROLLER], 'the user made the volume side');
    t.equal(phaseOf(await getVolume('pre-small')), 'Available');
  });

  await t.test('a claim naming its volume gets it, if it fits', async (t) => {
    await createVolume(volume('named-v', '2Gi', { cls: 'named' }));
    await api.create(CLAIMS, claim('named-c', '1Gi', { cls: 'named', volumeName: 'named-v' }));
    const bound = await claimPhase('named-c', 'Bound');
    t.equal(annotations(bound)[BIND_COMPLETED], 'yes');
    t.notOk(annotations(bound)[BOUND_BY_CONTROLLER], 'the user made the claim side');
    const v = await volumePhase('named-v', 'Bound');
    t.equal(annotations(v)[BOUND_BY_CONTROLLER], 'yes', 'the controller made the volume side');

    await createVolume(volume('named-small', '1Gi', { cls: 'named' }));
    await api.create(CLAIMS, claim('named-big', '5Gi', { cls: 'named', volumeName: 'named-small' }));
    const ev = await eventFor('named-big', 'VolumeMismatch');
    t.equal(ev.message, 'Cannot bind to requested volume "named-small": requested PV is too small');
    t.equal(ev.type, 'Warning');
    t.equal(phaseOf(await getClaim('named-big')), 'Pending');

    await api.create(CLAIMS, claim('named-later', '1Gi', { cls: 'named', volumeName: 'named-later-v' }));
    await createVolume(volume('named-later-v', '1Gi', { cls: 'named' }));
    t.equal(spec(await claimPhase('named-later', 'Bound')).volumeName, 'named-later-v', 'a named volume created later is bound then');
  });

  await t.test('WaitForFirstConsumer: no binding until a node is selected; then provisioning is asked for', async (t) => {
    await api.create(CLASSES, {
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'wffc' }, provisioner: 'example.com/wffc', volumeBindingMode: 'WaitForFirstConsumer',
    });
    await createVolume(volume('wffc-v', '1Gi', { cls: 'wffc' }));
    await api.create(CLAIMS, claim('wffc-c', '1Gi', { cls: 'wffc' }));
    const ev = await eventFor('wffc-c', 'WaitForFirstConsumer');
    t.equal(ev.message, 'waiting for first consumer to be created before binding');
    t.equal(phaseOf(await getClaim('wffc-c')), 'Pending');
    t.equal(phaseOf(await getVolume('wffc-v')), 'Available', 'the matching volume is left alone');

    await api.create(PODS, {
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'wffc-user' },
      spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'wffc-c' } }] },
    });
    t.equal((await eventFor('wffc-c', 'WaitForPodScheduled')).message, 'waiting for pod wffc-user to be scheduled');

    await api.patch(CLAIMS, 'wffc-c', 'merge', { metadata: { annotations: { 'volume.kubernetes.io/selected-node': 'node-1' } } });
    const asked = await waitFor('provisioner annotations', async () => {
      const o = await getClaim('wffc-c');
      return annotations(o)['volume.kubernetes.io/storage-provisioner'] === 'example.com/wffc' && o;
    });
    t.equal(annotations(asked)['volume.beta.kubernetes.io/storage-provisioner'], 'example.com/wffc');
    t.match((await eventFor('wffc-c', 'ExternalProvisioning')).message, /^Waiting for a volume to be created either by the external provisioner 'example.com\/wffc' or manually by the system administrator\./);
    t.equal(phaseOf(await getVolume('wffc-v')), 'Available', 'existing volumes are bound by the scheduler, not here');

    // What the scheduler does for an existing volume: point it at the claim; the binder completes the binding.
    const v = await getVolume('wffc-v');
    await api.update(PVS, { ...v, metadata: { ...v.metadata, annotations: { [BOUND_BY_CONTROLLER]: 'yes' } }, spec: { ...spec(v), claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'default', name: 'wffc-c', uid: asked.metadata?.uid } } });
    t.equal(spec(await claimPhase('wffc-c', 'Bound')).volumeName, 'wffc-v');
  });

  await t.test('a class with an external provisioner: the claim is annotated, the provisioned volume bound', async (t) => {
    await api.create(CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'ext' }, provisioner: 'example.com/ext' });
    const created = await api.create(CLAIMS, claim('ext-c', '2Gi', { cls: 'ext' }));
    const ev = await eventFor('ext-c', 'ExternalProvisioning');
    t.equal(ev.message, "Waiting for a volume to be created either by the external provisioner 'example.com/ext' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.");
    const o = await getClaim('ext-c');
    t.equal(annotations(o)['volume.kubernetes.io/storage-provisioner'], 'example.com/ext');
    t.equal(annotations(o)['volume.beta.kubernetes.io/storage-provisioner'], 'example.com/ext');
    // The external provisioner's part: a volume pre-bound to the claim.
    const pv = volume(`pvc-${created.metadata?.uid}`, '2Gi', { cls: 'ext', policy: 'Delete', source: { csi: { driver: 'example.com/ext', volumeHandle: 'h1' } }, claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'ext-c', uid: created.metadata?.uid } });
    pv.metadata!.annotations = { 'pv.kubernetes.io/provisioned-by': 'example.com/ext' };
    await api.create(PVS, pv);
    t.equal(spec(await claimPhase('ext-c', 'Bound')).volumeName, pv.metadata?.name);
    await volumePhase(pv.metadata!.name!, 'Bound');

    await api.delete(CLAIMS, 'ext-c');
    const released = await volumePhase(pv.metadata!.name!, 'Released');
    t.equal(claimRefOf(released)?.name, 'ext-c', 'a CSI volume is left to its external deleter');
  });

  await t.test('a deleted claim releases its volume; Retain keeps it, an admin frees it', async (t) => {
    await createVolume(volume('keep-v', '1Gi', { cls: 'keep' }));
    await api.create(CLAIMS, claim('keep-c', '1Gi', { cls: 'keep' }));
    await claimPhase('keep-c', 'Bound');
    await api.delete(CLAIMS, 'keep-c');
    const released = await volumePhase('keep-v', 'Released');
    t.equal(claimRefOf(released)?.name, 'keep-c', 'the claimRef stays');
    // A new claim of the same name is another claim: the volume stays Released.
    await api.create(CLAIMS, claim('keep-c', '1Gi', { cls: 'keep' }));
    await eventFor('keep-c', 'ProvisioningFailed');
    t.equal(phaseOf(await getVolume('keep-v')), 'Released');
    t.equal(phaseOf(await getClaim('keep-c')), 'Pending');
    // The admin clears the claimRef: the volume is Available again and the waiting claim takes it.
    const v = await getVolume('keep-v');
    const { claimRef: _dropped, ...rest } = spec(v);
    await api.update(PVS, { ...v, spec: rest });
    t.equal(spec(await claimPhase('keep-c', 'Bound')).volumeName, 'keep-v');
  });

  await t.test('Delete: a host-path volume under /tmp is removed with its directory; others fail', async (t) => {
    const dir = await mkdtemp('/tmp/corectl-pv-');
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'data.txt'), 'x');
    const cases: Array<[string, Dict]> = [
      ['del-tmp', { hostPath: { path: dir } }],
      ['del-srv', { hostPath: { path: '/srv/del-srv' } }],
      ['del-nfs', { nfs: { server: 'nfs.example.com', path: '/exports/a' } }],
      ['del-local', { local: { path: '/mnt/disk1' }, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] }] } } }],
    ];
    for (const [name, source] of cases) {
      await createVolume(volume(name, '1Gi', { cls: name, policy: 'Delete', source }));
      await api.create(CLAIMS, claim(`${name}-c`, '1Gi', { cls: name }));
      await claimPhase(`${name}-c`, 'Bound');
      await api.delete(CLAIMS, `${name}-c`);
    }
    t.ok(await waitFor('del-tmp deleted', () => gone(() => getVolume('del-tmp'))), 'the volume object is deleted');
    await t.rejects(access(dir), { code: 'ENOENT' }, 'and its directory');
    const expected: Record<string, string> = {
      'del-srv': 'host_path deleter only supports /tmp/.+ but received provided /srv/del-srv',
      'del-nfs': 'error getting deleter volume plugin for volume "del-nfs": no deletable volume plugin matched',
      'del-local': 'error getting deleter volume plugin for volume "del-local": no volume plugin matched',
    };
    for (const [name, message] of Object.entries(expected)) {
      const failed = await volumePhase(name, 'Failed');
      t.equal(status(failed).message, message, `${name}: status.message`);
      const ev = await eventFor(name, 'VolumeFailedDelete');
      t.equal(ev.message, message);
      t.equal(ev.type, 'Warning');
    }
  });

  await t.test('Recycle is not supported: the volume fails', async (t) => {
    await createVolume(volume('rec-v', '1Gi', { cls: 'rec', policy: 'Recycle' }));
    await api.create(CLAIMS, claim('rec-c', '1Gi', { cls: 'rec' }));
    await claimPhase('rec-c', 'Bound');
    await api.delete(CLAIMS, 'rec-c');
    await volumePhase('rec-v', 'Failed');
    const ev = await eventFor('rec-v', 'VolumeFailedRecycle');
    t.equal(ev.type, 'Warning');
    t.match(ev.message, /^Recycle failed: /);
  });

  await t.test('a claim whose volume is gone is Lost', async (t) => {
    await createVolume(volume('lost-v', '1Gi', { cls: 'lost' }));
    await api.create(CLAIMS, claim('lost-c', '1Gi', { cls: 'lost' }));
    await claimPhase('lost-c', 'Bound');
    await api.delete(PVS, 'lost-v');
    const lost = await claimPhase('lost-c', 'Lost');
    t.notOk(status(lost).capacity, 'capacity is cleared');
    t.notOk(status(lost).accessModes, 'and the access modes');
    t.equal(spec(lost).volumeName, 'lost-v');
    const ev = await eventFor('lost-c', 'ClaimLost');
    t.equal(ev.message, 'Bound claim has lost its PersistentVolume. Data on the volume is lost!');
    t.equal(ev.type, 'Warning');
  });
});

t.test('two binders, two claims, one volume: only one claim binds', async (t) => {
  const c = await startControllers([new PersistentVolumeBinderController(), new PersistentVolumeBinderController()], { args: ['--pvclaimbinder-sync-period=1s'], recordEvents: true });
  t.teardown(() => c.stop());
  const api = c.client;
  await api.create(PVS, volume('race-v', '1Gi', { cls: 'race' }));
  await waitFor('race-v Available', async () => phaseOf(await api.get(PVS, 'race-v')) === 'Available');
  await Promise.all(['race-a', 'race-b'].map((n) => api.create(CLAIMS, claim(n, '1Gi', { cls: 'race' }))));
  const winner = await waitFor('a bound claim', async () => {
    const l = (await api.list(CLAIMS)).items.filter((o) => phaseOf(o) === 'Bound');
    return l.length > 0 && l[0];
  });
  const loserName = winner.metadata?.name === 'race-a' ? 'race-b' : 'race-a';
  // The loser is looked at again after the winner is bound (resync): it finds no volume.
  const seenAt = Date.now();
  await waitFor(`${loserName} synced after the binding`, async () => {
    const l = (await api.list(EVENTS, { fieldSelector: `involvedObject.name=${loserName}` })).items;
    return l.some((e) => e.reason === 'ProvisioningFailed' && Date.parse(String(e.lastTimestamp)) >= seenAt - 1000);
  });
  const loser = await api.get(CLAIMS, loserName);
  t.equal(phaseOf(loser), 'Pending', 'the other claim waits');
  t.notOk(spec(loser).volumeName, 'without a volume');
  t.notOk(annotations(loser)[BIND_COMPLETED]);
  const v = await api.get(PVS, 'race-v');
  t.equal(claimRefOf(v)?.uid, winner.metadata?.uid, 'the volume points at the winner');
  t.equal(phaseOf(v), 'Bound');
  t.equal(spec(await api.get(CLAIMS, winner.metadata!.name!)).volumeName, 'race-v');
});

t.test('provisioners in the binder: local-path on the selected node (helper pod deletes it), host-path with --enable-hostpath-provisioner', async (t) => {
  const c = await startControllers(new PersistentVolumeBinderController(), { args: ['--pvclaimbinder-sync-period=1s', '--enable-hostpath-provisioner'], recordEvents: true });
  t.teardown(() => c.stop());
  const api = c.client;
  const SYSTEM_PODS: ResourceRef = { ...PODS, namespace: 'kube-system' };
  await api.create({ group: '', version: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-system' } }).catch(() => undefined);
  const boundClaim = (name: string): Promise<KubeObject> => waitFor(`claim ${name} Bound`, async () => { const o = await api.get(CLAIMS, name); return phaseOf(o) === 'Bound' && o; });

  await api.create(CLASSES, {
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'local-path' }, provisioner: 'corectl.io/local-path',
    volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete', parameters: { nodePath: '/var/lib/test-storage', helperImage: 'localhost/busybox:latest' },
  });
  const created = await api.create(CLAIMS, claim('lp', '1Gi', { cls: 'local-path' }));
  await api.patch(CLAIMS, 'lp', 'merge', { metadata: { annotations: { 'volume.kubernetes.io/selected-node': 'node-7' } } });
  const bound = await boundClaim('lp');
  const pvName = `pvc-${created.metadata?.uid}`;
  t.equal(spec(bound).volumeName, pvName);
  const pv = await api.get(PVS, pvName);
  t.same(spec(pv).hostPath, { path: `/var/lib/test-storage/${pvName}_default_lp`, type: 'DirectoryOrCreate' }, 'a directory under nodePath, created by the node agent');
  t.same(spec(pv).nodeAffinity, { required: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-7'] }] }] } }, 'pinned to the selected node');
  t.equal(spec(pv).persistentVolumeReclaimPolicy, 'Delete');
  t.equal(annotations(pv)['pv.kubernetes.io/provisioned-by'], 'corectl.io/local-path');
  t.ok((await api.list(EVENTS, { fieldSelector: 'involvedObject.name=lp' })).items.some((e) => e.reason === 'ProvisioningSucceeded'));

  await api.delete(CLAIMS, 'lp');
  const helper = await waitFor('helper pod', async () => (await api.list(SYSTEM_PODS)).items.find((p) => p.metadata?.name === `helper-pod-delete-${pvName}`.slice(0, 63)));
  const hs = spec(helper) as { nodeName?: string; containers?: Array<{ image?: string; command?: string[] }>; volumes?: Array<{ hostPath?: { path?: string } }> };
  t.equal(hs.nodeName, 'node-7', 'the helper runs on the volume\'s node');
  t.equal(hs.containers?.[0]?.image, 'localhost/busybox:latest', 'with the class\'s helper image');
  t.same(hs.containers?.[0]?.command, ['rm', '-rf', `/data/${pvName}_default_lp`], 'removing only the volume\'s directory');
  t.equal(hs.volumes?.[0]?.hostPath?.path, '/var/lib/test-storage', 'with only nodePath mounted');
  t.equal(phaseOf(await api.get(PVS, pvName)), 'Released', 'the volume stays until the helper succeeded');
  // The node's part: the helper ran and succeeded.
  await api.patch(SYSTEM_PODS, helper.metadata!.name!, 'merge', { status: { phase: 'Succeeded' } }, { subresource: 'status' });
  await waitFor('local-path volume deleted', async () => { try { await api.get(PVS, pvName); return false; } catch (e) { return (e as { code?: number }).code === 404; } });
  await waitFor('helper pod removed', async () => !(await api.list(SYSTEM_PODS)).items.some((p) => p.metadata?.name === helper.metadata?.name && !p.metadata?.deletionTimestamp));

  // A volume claiming to be local-path with a path outside its base is never handed to a helper.
  await api.create(PVS, {
    ...volume('lp-evil', '1Gi', { cls: 'evil', policy: 'Delete', source: { hostPath: { path: '/etc' }, nodeAffinity: { required: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-7'] }] }] } } } }),
    metadata: { name: 'lp-evil', annotations: { 'pv.kubernetes.io/provisioned-by': 'corectl.io/local-path', 'corectl.io/local-path-base': '/' } },
  });
  await api.create(CLAIMS, claim('lp-evil-c', '1Gi', { cls: 'evil' }));
  await boundClaim('lp-evil-c');
  await api.delete(CLAIMS, 'lp-evil-c');
  const failed = await waitFor('lp-evil Failed', async () => { const o = await api.get(PVS, 'lp-evil'); return phaseOf(o) === 'Failed' && o; });
  t.match(status(failed).message, /is not a local-path directory/);
  t.notOk((await api.list(SYSTEM_PODS)).items.some((p) => p.metadata?.name === 'helper-pod-delete-lp-evil'), 'no helper pod');

  await api.create(CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'hostpath' }, provisioner: 'kubernetes.io/host-path', reclaimPolicy: 'Delete' });
  const hc = await api.create(CLAIMS, claim('hp', '1Gi', { cls: 'hostpath' }));
  const hpBound = await boundClaim('hp');
  const hpv = await api.get(PVS, String(spec(hpBound).volumeName));
  t.equal(hpv.metadata?.name, `pvc-${hc.metadata?.uid}`);
  const path = String((spec(hpv).hostPath as Dict).path);
  t.match(path, /^\/tmp\/hostpath_pv\/[0-9a-f-]{36}$/);
  await access(path);
  t.equal(annotations(hpv)['pv.kubernetes.io/provisioned-by'], 'kubernetes.io/host-path');
  await api.delete(CLAIMS, 'hp');
  await waitFor('host-path volume deleted', async () => { try { await api.get(PVS, hpv.metadata!.name!); return false; } catch (e) { return (e as { code?: number }).code === 404; } });
  await t.rejects(access(path), { code: 'ENOENT' }, 'its directory is removed (Delete)');
});
