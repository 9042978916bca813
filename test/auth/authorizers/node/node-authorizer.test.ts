/**
 * The Node authorizer's decisions: no opinion for non-nodes, graph-scoped reads of secrets,
 * config maps, claims and volumes, tokens only for service accounts of the node's pods, the
 * node's own Lease, and Kubernetes' static node rules for the rest (reasons worded as
 * Kubernetes').
 */
import t from 'tap';
import type { AuthorizationAttributes } from '../../../../src/auth/authorizer.js';
import { NodeGraph } from '../../../../src/auth/authorizers/node/graph.js';
import { NodeAuthorizer } from '../../../../src/auth/authorizers/node/node-authorizer.js';
import { nodeIdentity } from '../../../../src/auth/authorizers/node/node-identity.js';

const NODE1 = { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] };

function req(verb: string, resource: string, o: Partial<AuthorizationAttributes> = {}): AuthorizationAttributes {
  return {
    user: NODE1, verb, isResourceRequest: true, path: '', namespace: 'ns', apiGroup: '', apiVersion: 'v1',
    resource, subresource: '', name: '', ...o,
  };
}

const graph = new NodeGraph();
graph.setPod({ metadata: { name: 'p1', namespace: 'ns', uid: 'u1' }, spec: { nodeName: 'n1', serviceAccountName: 'sa1', volumes: [{ name: 'v', secret: { secretName: 's1' } }, { name: 'c', configMap: { name: 'c1' } }, { name: 'pv', persistentVolumeClaim: { claimName: 'claim1' } }] } });
graph.setPod({ metadata: { name: 'p2', namespace: 'ns', uid: 'u2' }, spec: { nodeName: 'n2', serviceAccountName: 'sa2', volumes: [{ name: 'v', secret: { secretName: 's2' } }] } });
graph.setPV({ metadata: { name: 'vol1' }, spec: { claimRef: { namespace: 'ns', name: 'claim1' } } });
// No wait for the graph to catch up: this graph is filled by hand, so the answers are synchronous.
const authz = new NodeAuthorizer(graph, undefined, 0);
const decide = (a: AuthorizationAttributes): string => { const r = authz.authorize(a) as { decision: string; reason: string }; return r.decision === 'allow' ? 'allow' : `no: ${r.reason}`; };

t.test('node identity', async (t) => {
  t.same(nodeIdentity(NODE1), { isNode: true, nodeName: 'n1' });
  t.same(nodeIdentity({ name: 'system:node:n1', groups: [] }), { isNode: false, nodeName: '' }, 'the group is required');
  t.same(nodeIdentity({ name: 'kubelet', groups: ['system:nodes'] }), { isNode: false, nodeName: '' });
  t.same(nodeIdentity({ name: 'system:node:', groups: ['system:nodes'] }), { isNode: true, nodeName: '' });
  t.equal(decide(req('get', 'secrets', { name: 's1', user: { name: 'system:node:', groups: ['system:nodes'] } })), 'no: unknown node for user "system:node:"');
  t.equal(decide(req('get', 'secrets', { name: 's1', user: { name: 'alice', groups: [] } })), 'no: ', 'no opinion on anyone else');
});

t.test('secrets and config maps of the node\'s pods only', async (t) => {
  t.equal(decide(req('get', 'secrets', { name: 's1' })), 'allow');
  t.equal(decide(req('watch', 'secrets', { name: 's1' })), 'allow', 'a watch pinned by metadata.name');
  t.equal(decide(req('get', 'configmaps', { name: 'c1' })), 'allow');
  t.equal(decide(req('get', 'secrets', { name: 's2' })), "no: no relationship found between node 'n1' and this object");
  t.equal(decide(req('list', 'secrets')), 'no: No Object name found');
  t.equal(decide(req('update', 'secrets', { name: 's1' })), 'no: can only read resources of this type');
  t.equal(decide(req('get', 'secrets', { name: 's1', namespace: '' })), 'no: can only read namespaced object of this type');
  t.equal(decide(req('get', 'secrets', { name: 's1', subresource: 'x' })), 'no: cannot read subresource');
});

t.test('claims and volumes', async (t) => {
  t.equal(decide(req('get', 'persistentvolumeclaims', { name: 'claim1' })), 'allow');
  t.equal(decide(req('get', 'persistentvolumes', { name: 'vol1', namespace: '' })), 'allow');
  t.equal(decide(req('list', 'persistentvolumes', { namespace: '' })), 'no: can only get individual resources of this type');
  t.equal(decide(req('patch', 'persistentvolumeclaims', { name: 'claim1', subresource: 'status' })), 'allow');
  t.equal(decide(req('get', 'persistentvolumeclaims', { name: 'claim1', subresource: 'status' })), 'no: can only get/update/patch this type');
  t.equal(decide(req('get', 'volumeattachments', { apiGroup: 'storage.k8s.io', name: 'va', namespace: '' })), "no: no relationship found between node 'n1' and this object");
});

t.test('service-account tokens for the node\'s pods only', async (t) => {
  t.equal(decide(req('create', 'serviceaccounts', { name: 'sa1', subresource: 'token' })), 'allow');
  t.equal(decide(req('create', 'serviceaccounts', { name: 'sa2', subresource: 'token' })), "no: no relationship found between node 'n1' and this object");
  t.equal(decide(req('get', 'serviceaccounts', { name: 'sa1' })), 'no: can only create tokens for individual service accounts');
  t.equal(decide(req('create', 'serviceaccounts', { name: 'sa1' })), 'no: can only create token subresource of serviceaccount');
});

t.test('leases: its own, in kube-node-lease', async (t) => {
  const lease = (verb: string, o: Partial<AuthorizationAttributes>): string => decide(req(verb, 'leases', { apiGroup: 'coordination.k8s.io', namespace: 'kube-node-lease', ...o }));
  t.equal(lease('update', { name: 'n1' }), 'allow');
  t.equal(lease('create', {}), 'allow', 'the name of a create is checked by NodeRestriction');
  t.equal(lease('update', { name: 'n2' }), 'no: can only access node lease with the same name as the requesting node');
  t.equal(lease('get', { name: 'n1', namespace: 'default' }), 'no: can only access leases in the "kube-node-lease" system namespace');
  t.equal(lease('list', {}), 'no: can only get, create, update, patch, or delete a node lease');
});

t.test('the static node rules for everything else', async (t) => {
  t.equal(decide(req('get', 'nodes', { name: 'n2', namespace: '' })), 'allow');
  t.equal(decide(req('patch', 'nodes', { name: 'n2', namespace: '', subresource: 'status' })), 'allow', 'NodeRestriction narrows it');
  t.equal(decide(req('create', 'pods')), 'allow');
  t.equal(decide(req('update', 'pods', { name: 'p1' })), 'no: ');
  t.equal(decide(req('create', 'pods', { name: 'p2', subresource: 'eviction' })), 'allow');
  t.equal(decide(req('create', 'events')), 'allow');
  t.equal(decide(req('create', 'certificatesigningrequests', { apiGroup: 'certificates.k8s.io', namespace: '' })), 'allow');
  t.equal(decide(req('delete', 'nodes', { name: 'n1', namespace: '' })), 'no: ');
  t.equal(decide(req('list', 'deployments', { apiGroup: 'apps' })), 'no: ');
  t.equal(decide({ ...req('get', ''), isResourceRequest: false, path: '/healthz' }), 'no: ');
});

// SelfSubjectRulesReview (kubectl auth can-i --list) under Node,RBAC: Kubernetes' node
// authorizer leaves everyone's list complete and marks only a node's incomplete.
t.test('rules for the rules review: incomplete for nodes only', async (t) => {
  t.same(await authz.rulesFor({ name: 'alice', groups: ['system:authenticated'] }, 'default'), { resourceRules: [], nonResourceRules: [], incomplete: false });
  t.same(await authz.rulesFor({ name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] }, 'default'),
    { resourceRules: [], nonResourceRules: [], incomplete: true, evaluationError: 'node authorizer does not support user rule resolution' });
});

t.test('a request for an object the graph relates to the node a moment later waits for it', async (t) => {
  const g = new NodeGraph();
  const waiting = new NodeAuthorizer(g, undefined, 500);
  const user = { name: 'system:node:late', groups: ['system:nodes', 'system:authenticated'] };
  const attrs = { user, verb: 'get', isResourceRequest: true, path: '', namespace: 'ns', apiGroup: '', apiVersion: 'v1', resource: 'secrets', subresource: '', name: 's-late' };
  const answer = waiting.authorize(attrs);
  t.ok(answer instanceof Promise, 'not related yet: the answer waits');
  setTimeout(() => g.setPod({ metadata: { name: 'p', namespace: 'ns', uid: 'u-late' }, spec: { nodeName: 'late', volumes: [{ name: 'v', secret: { secretName: 's-late' } }] } }), 50);
  t.equal((await answer).decision, 'allow', 'allowed once the graph has the pod');
  const other = await waiting.authorize({ ...attrs, name: 'unrelated' });
  t.equal(other.decision, 'noOpinion', 'an unrelated object is still refused after the wait');
});
