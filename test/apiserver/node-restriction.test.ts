/**
 * NodeRestriction's rules that the REST test does not reach: the label policy (kubelet labels
 * and namespaces allowed, other kubernetes.io / k8s.io keys and node-restriction ones refused),
 * unidentifiable nodes, unexpected pod subresources, resource-claim statuses, claim status
 * updates, CSINodes, and that non-nodes pass untouched.
 */
import t from 'tap';
import { findResource } from '../../src/api/resources/registry.js';
import type { KubeObject } from '../../src/api/resources/types.js';
import { forbiddenLabels, nodeRestriction } from '../../src/daemons/apiserver/admission/node-restriction.js';
import type { AdmissionAttributes, AdmissionOperation } from '../../src/daemons/apiserver/admission/types.js';
import type { ObjectStore } from '../../src/storage/object-store-types.js';
import { StorageError } from '../../src/storage/errors.js';

const stored: Record<string, KubeObject> = {
  'pods/ns/p1': { metadata: { name: 'p1', namespace: 'ns', uid: 'u1' }, spec: { nodeName: 'n1' } },
};
const store = {
  async get(ref: { resource: string; namespace: string; name: string }): Promise<KubeObject> {
    const o = stored[`${ref.resource}/${ref.namespace}/${ref.name}`];
    if (!o) throw new StorageError('KeyNotFound', 'not found');
    return o;
  },
} as unknown as ObjectStore;
const plugin = nodeRestriction({ store });
const N1 = { name: 'system:node:n1', groups: ['system:nodes'] };

function attrs(plural: string, group: string, op: AdmissionOperation, o: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  const def = findResource(group, 'v1', plural);
  if (!def) throw new Error(`no ${group}/${plural}`);
  return { operation: op, def, subresource: '', namespace: def.namespaced ? 'ns' : '', name: '', dryRun: false, request: { user: N1, version: 'v1' }, ...o };
}

async function outcome(a: AdmissionAttributes): Promise<string> {
  try { await plugin.admit!(a); return 'admitted'; } catch (e) { return (e as Error).message; }
}

t.test('the label policy', async (t) => {
  t.same(forbiddenLabels(['kubernetes.io/hostname', 'topology.kubernetes.io/zone', 'node.kubernetes.io/instance-type', 'kubelet.kubernetes.io/x',
    'foo.node.kubernetes.io/y', 'beta.kubernetes.io/arch', 'example.com/mine', 'plain']), [], 'kubelet labels, their namespaces and foreign ones');
  t.same(forbiddenLabels(['node-restriction.kubernetes.io/a', 'x.node-restriction.kubernetes.io/b', 'node-role.kubernetes.io/master', 'k8s.io/x', 'sub.k8s.io/y']),
    ['k8s.io/x', 'node-restriction.kubernetes.io/a', 'node-role.kubernetes.io/master', 'sub.k8s.io/y', 'x.node-restriction.kubernetes.io/b'], 'sorted, as Kubernetes lists them');
});

t.test('who is checked', async (t) => {
  t.equal(plugin.handles('CREATE', findResource('apps', 'v1', 'deployments')!, ''), false, 'only the resources it restricts');
  t.equal(await outcome(attrs('pods', '', 'UPDATE', { name: 'p2', request: { user: { name: 'alice', groups: [] }, version: 'v1' } })), 'admitted', 'non-nodes pass');
  t.equal(await outcome(attrs('pods', '', 'UPDATE', { name: 'p2' })), 'pods "p2" is forbidden: unexpected operation "UPDATE", node "n1" can only create and delete mirror pods');
  t.equal(await outcome(attrs('pods', '', 'CREATE', { name: 'x', object: {}, request: { user: { name: 'system:node:', groups: ['system:nodes'] }, version: 'v1' } })),
    'pods "x" is forbidden: could not determine node from user "system:node:"');
  t.equal(await outcome(attrs('pods', '', 'CREATE', { name: 'p1', subresource: 'binding', object: {} })),
    'pods "p1" is forbidden: unexpected pod subresource "binding", only \'status\' and \'eviction\' are allowed');
});

t.test('pods', async (t) => {
  const old = stored['pods/ns/p1']!;
  const claims = { ...old, status: { resourceClaimStatuses: [{ name: 'c', resourceClaimName: 'other' }] } };
  t.equal(await outcome(attrs('pods', '', 'UPDATE', { name: 'p1', subresource: 'status', oldObject: old, object: claims })),
    'pods "p1" is forbidden: node "n1" cannot update resource claim statues', 'Kubernetes\' wording');
  t.equal(await outcome(attrs('pods', '', 'UPDATE', { name: 'p1', subresource: 'status', oldObject: old, object: { ...old, status: { phase: 'Running' } } })), 'admitted');
  t.equal(await outcome(attrs('pods', '', 'CREATE', { name: 'gone', subresource: 'eviction', object: { metadata: { name: 'gone' } } })), 'pods "gone" not found', 'NotFound, as Kubernetes');
  t.equal(await outcome(attrs('pods', '', 'DELETE', { name: 'p1', oldObject: old })), 'admitted');
});

t.test('claim status and CSINodes', async (t) => {
  const pvc = { metadata: { name: 'c', namespace: 'ns', resourceVersion: '5', labels: { a: 'b' } }, spec: { resources: {} }, status: { phase: 'Bound' } };
  const next = { ...pvc, metadata: { ...pvc.metadata, resourceVersion: '' }, status: { phase: 'Bound', capacity: { storage: '2Gi' }, conditions: [{ type: 'Resizing', status: 'True' }] } };
  t.equal(await outcome(attrs('persistentvolumeclaims', '', 'UPDATE', { name: 'c', subresource: 'status', oldObject: pvc, object: next })), 'admitted');
  const relabel = { ...next, metadata: { ...next.metadata, labels: { a: 'c' } } };
  t.match(await outcome(attrs('persistentvolumeclaims', '', 'UPDATE', { name: 'c', subresource: 'status', oldObject: pvc, object: relabel })),
    /^persistentvolumeclaims "c" is forbidden: node "n1" is not allowed to update fields other than status.quantity and status.conditions: /);
  t.equal(await outcome(attrs('persistentvolumeclaims', '', 'UPDATE', { name: 'c', oldObject: pvc, object: next })), 'persistentvolumeclaims "c" is forbidden: may only update PVC status');
  t.equal(await outcome(attrs('csinodes', 'storage.k8s.io', 'CREATE', { name: 'n2', object: { metadata: { name: 'n2' } } })),
    'csinodes.storage.k8s.io "n2" is forbidden: can only access CSINode with the same name as the requesting node');
  t.equal(await outcome(attrs('csinodes', 'storage.k8s.io', 'UPDATE', { name: 'n1', object: { metadata: { name: 'n1' } } })), 'admitted');
});
