// The attachdetach controller against a real API server: VolumeAttachments for the CSI volumes
// of pods on nodes that leave attaching to the controller, none for drivers that do not attach
// or nodes that attach themselves; node status.volumesAttached from attached attachments;
// detaching waits for the node to stop listing the volume in volumesInUse.
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { AttachDetachController, attachmentName } from '../../src/daemons/controller-manager/controllers/attachdetach.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const PVS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumes' };
const CLAIMS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims', namespace: 'default' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods', namespace: 'default' };
const DRIVERS: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'csidrivers' };
const VAS: ResourceRef = { group: 'storage.k8s.io', version: 'v1', resource: 'volumeattachments' };
const MANAGED = 'volumes.kubernetes.io/controller-managed-attach-detach';

t.test('attachdetach is selectable and implemented', (t) => assertSelectable(t, 'attachdetach'));

t.test('attachdetach against a real API server', async (t) => {
  const c = await startControllers(new AttachDetachController(), { args: ['--attach-detach-reconcile-sync-period=2s'] });
  t.teardown(() => c.stop());
  const api = c.client;
  await api.create(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', annotations: { [MANAGED]: 'true' } } });
  await api.create(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n2' } });
  await api.create(DRIVERS, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: 'noattach.example.com' }, spec: { attachRequired: false } });
  const csiClaim = async (name: string, driver: string, handle: string): Promise<void> => {
    await api.create(PVS, { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: `pv-${name}` }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], csi: { driver, volumeHandle: handle } } });
    await api.create(CLAIMS, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: `pv-${name}`, storageClassName: '' } });
  };
  const pod = (name: string, node: string, claim: string): KubeObject => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name },
    spec: { nodeName: node, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: claim } }] },
  });
  await csiClaim('attach', 'att.example.com', 'h1');
  await csiClaim('noattach', 'noattach.example.com', 'h2');
  await csiClaim('self', 'att.example.com', 'h3');
  await api.create(PODS, pod('user', 'n1', 'attach'));
  await api.create(PODS, pod('user-noattach', 'n1', 'noattach'));
  await api.create(PODS, pod('user-self', 'n2', 'self'));

  const name = attachmentName('h1', 'att.example.com', 'n1');
  const va = await waitFor('the VolumeAttachment', async () => (await api.list(VAS)).items.find((a) => a.metadata?.name === name));
  t.same(va.spec, { attacher: 'att.example.com', nodeName: 'n1', source: { persistentVolumeName: 'pv-attach' } });
  await new Promise((r) => setTimeout(r, 2500));
  t.same((await api.list(VAS)).items.map((a) => a.metadata?.name), [name], 'none for a driver without attach, none for a node that attaches itself');

  // The driver's external attacher reports the attachment.
  await api.patch(VAS, name, 'merge', { status: { attached: true, attachmentMetadata: { devicePath: '/dev/fake' } } }, { subresource: 'status' });
  const attached = await waitFor('volumesAttached', async () => {
    const n = await api.get(NODES, 'n1');
    return ((n.status as { volumesAttached?: unknown[] } | undefined)?.volumesAttached?.length ?? 0) > 0 && n;
  });
  t.same((attached.status as Record<string, unknown>).volumesAttached, [{ name: 'kubernetes.io/csi/att.example.com^h1', devicePath: '' }]);

  // The node still uses the volume: the pod's deletion does not detach it yet.
  await api.patch(NODES, 'n1', 'merge', { status: { volumesInUse: ['kubernetes.io/csi/att.example.com^h1'] } }, { subresource: 'status' });
  await api.delete(PODS, 'user', { gracePeriodSeconds: 0 });
  await new Promise((r) => setTimeout(r, 2500));
  t.ok((await api.list(VAS)).items.some((a) => a.metadata?.name === name), 'still attached while in use');
  await api.patch(NODES, 'n1', 'merge', { status: { volumesInUse: null } }, { subresource: 'status' });
  await waitFor('detached', async () => !(await api.list(VAS)).items.some((a) => a.metadata?.name === name));
  await waitFor('volumesAttached cleared', async () => !((await api.get(NODES, 'n1')).status as { volumesAttached?: unknown[] } | undefined)?.volumesAttached?.length);
});
