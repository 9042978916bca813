import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { PersistentVolumeBinderController } from '../../src/daemons/controller-manager/controllers/persistentvolume-binder.js';
import { ANN_STORAGE_RESIZER, PersistentVolumeExpanderController } from '../../src/daemons/controller-manager/controllers/persistentvolume-expander.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

type Dict = Record<string, unknown>;
const PVS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };
const CLAIMS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace: 'default' };
const CLASSES: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };

const phaseOf = (o: KubeObject): unknown => (o.status as Dict | undefined)?.phase;

t.test('persistentvolume-expander is selectable and implemented', (t) => assertSelectable(t, 'persistentvolume-expander'));

t.test('expansion is handed to external controllers', async (t) => {
  const c = await startControllers([new PersistentVolumeBinderController(), new PersistentVolumeExpanderController()], { recordEvents: true });
  t.teardown(() => c.stop());
  const api = c.client;
  const eventsOf = async (name: string): Promise<KubeObject[]> =>
    (await api.list(EVENTS, { fieldSelector: `involvedObject.name=${name}` })).items.filter((e) => e.reason === 'ExternalExpanding');

  /** A class allowing expansion, a volume of it with the given source, and a claim bound to it. */
  const boundClaim = async (name: string, provisioner: string, source: Dict): Promise<KubeObject> => {
    await api.create(CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner, allowVolumeExpansion: true });
    await api.create(PVS, {
      apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name },
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: name, ...source },
    });
    await waitFor(`volume ${name} Available`, async () => phaseOf(await api.get(PVS, name)) === 'Available');
    await api.create(CLAIMS, {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: name },
    });
    return waitFor(`claim ${name} Bound`, async () => { const o = await api.get(CLAIMS, name); return phaseOf(o) === 'Bound' && o; });
  };
  const grow = (name: string): Promise<KubeObject> => api.patch(CLAIMS, name, 'merge', { spec: { resources: { requests: { storage: '2Gi' } } } });

  const same = await boundClaim('exp-same', 'example.com/csi', { csi: { driver: 'example.com/csi', volumeHandle: 'same' } });
  await boundClaim('exp-csi', 'example.com/csi', { csi: { driver: 'example.com/csi', volumeHandle: 'h1' } });
  await boundClaim('exp-ebs', 'kubernetes.io/aws-ebs', { awsElasticBlockStore: { volumeID: 'vol-1' } });

  await grow('exp-csi');
  const csi = await waitFor('ExternalExpanding for exp-csi', async () => (await eventsOf('exp-csi'))[0]);
  t.equal(csi.type, 'Warning');
  t.equal(csi.message, 'waiting for an external controller to expand this PVC');
  t.equal((csi.source as Dict).component, 'volume_expand');
  t.notOk((await api.get(CLAIMS, 'exp-csi')).metadata?.annotations?.[ANN_STORAGE_RESIZER], 'a CSI volume\'s resizer watches claims itself');

  await grow('exp-ebs');
  const ebs = await waitFor('resizer annotation on exp-ebs', async () => {
    const o = await api.get(CLAIMS, 'exp-ebs');
    return o.metadata?.annotations?.[ANN_STORAGE_RESIZER] === 'ebs.csi.aws.com' && o;
  });
  t.equal(phaseOf(ebs), 'Bound');
  const ev = await waitFor('ExternalExpanding for exp-ebs', async () => (await eventsOf('exp-ebs'))[0]);
  t.equal(ev.type, 'Normal');
  t.equal(ev.message, 'CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc');
  t.same((ebs.status as Dict).capacity, { storage: '1Gi' }, 'the capacity is the resizer\'s to change');

  t.same(await eventsOf('exp-same'), [], 'a claim not asking for more has nothing to expand');
  t.equal(phaseOf(await api.get(CLAIMS, same.metadata!.name!)), 'Bound');
});

t.test('a local-path volume is grown here; the claim waits for the node with FileSystemResizePending', async (t) => {
  const c = await startControllers([new PersistentVolumeBinderController(), new PersistentVolumeExpanderController()], { recordEvents: true });
  t.teardown(() => c.stop());
  const api = c.client;
  await api.create(CLASSES, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'lp' }, provisioner: 'corectl.io/local-path', allowVolumeExpansion: true });
  await api.create(PVS, {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'lp-v', annotations: { 'pv.kubernetes.io/provisioned-by': 'corectl.io/local-path' } },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: 'lp', hostPath: { path: '/var/lib/x/pvc-1_default_lp-c' } },
  });
  await waitFor('lp-v Available', async () => phaseOf(await api.get(PVS, 'lp-v')) === 'Available');
  await api.create(CLAIMS, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'lp-c' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'lp' } });
  await waitFor('lp-c Bound', async () => phaseOf(await api.get(CLAIMS, 'lp-c')) === 'Bound');
  await api.patch(CLAIMS, 'lp-c', 'merge', { spec: { resources: { requests: { storage: '3Gi' } } } });
  const pv = await waitFor('the volume grown', async () => { const o = await api.get(PVS, 'lp-v'); return ((o.spec as Dict).capacity as Dict).storage === '3Gi' && o; });
  t.ok(pv);
  const claim = await waitFor('FileSystemResizePending', async () => {
    const o = await api.get(CLAIMS, 'lp-c');
    return ((o.status as Dict).conditions as Dict[] | undefined)?.some((x) => x.type === 'FileSystemResizePending' && x.status === 'True') && o;
  });
  t.same((claim.status as Dict).allocatedResources, { storage: '3Gi' });
  t.same((claim.status as Dict).capacity, { storage: '1Gi' }, 'the capacity is the node\'s to set');
  const ev = await waitFor('FileSystemResizeRequired', async () => (await api.list(EVENTS, { fieldSelector: 'involvedObject.name=lp-c' })).items.find((e) => e.reason === 'FileSystemResizeRequired'));
  t.equal(ev.message, 'Require file system resize of volume on node');
});
