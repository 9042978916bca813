// The audit policy: rules in order, each list matching as Kubernetes' policy checker does
// (users, groups, verbs, resources with subresource and name forms, namespaces, non-resource
// URLs), omitStages joined from policy and rule, omitManagedFields per rule over the policy's,
// and a bad policy refused with the entry at fault.
import t from 'tap';
import { AuditPolicy, PolicyError, type PolicyAttributes } from '../../../src/daemons/apiserver/audit/policy.js';

const policy = AuditPolicy.parse(`
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: None
  users: [system:kube-proxy]
  verbs: [watch]
  resources: [{ group: "", resources: [endpoints, services] }]
- level: None
  userGroups: [system:nodes]
  verbs: [get]
  resources: [{ group: "", resources: [nodes] }]
- level: None
  nonResourceURLs: [/healthz*, /version]
- level: RequestResponse
  resources: [{ group: "", resources: [pods/log, "*/status"] }]
  omitManagedFields: false
- level: Request
  resources: [{ group: "", resources: [configmaps], resourceNames: [controller-leader] }]
  omitStages: [ResponseStarted]
- level: Metadata
  resources: [{ group: "", resources: [secrets] }, { group: apps, resources: ["deployments/*"] }]
- level: Request
  namespaces: [kube-system]
- level: Metadata
  resources: [{ group: rbac.authorization.k8s.io }]
- level: Metadata
  nonResourceURLs: ["/apis*"]
`);

const user = { name: 'alice', groups: ['devs', 'system:authenticated'] };
function res(verb: string, apiGroup: string, resource: string, extra: Partial<PolicyAttributes> = {}): PolicyAttributes {
  return { user, verb, isResourceRequest: true, path: '/x', apiGroup, namespace: 'default', resource, subresource: '', name: '', ...extra };
}
function nonres(path: string): PolicyAttributes {
  return { user, verb: 'get', isResourceRequest: false, path, apiGroup: '', namespace: '', resource: '', subresource: '', name: '' };
}
const level = (a: PolicyAttributes): string => policy.evaluate(a).level;

t.test('rules match in order, each list narrowing', async (t) => {
  t.equal(level(res('watch', '', 'endpoints', { user: { name: 'system:kube-proxy', groups: [] } })), 'None', 'user + verb + resource');
  t.equal(level(res('list', '', 'endpoints', { user: { name: 'system:kube-proxy', groups: [] } })), 'None', 'not the verb: on to the next rules, none match');
  t.equal(level(res('get', '', 'nodes', { user: { name: 'node1', groups: ['system:nodes'] } })), 'None', 'by group');
  t.equal(level(res('get', '', 'pods', { subresource: 'log' })), 'RequestResponse', 'a subresource by name');
  t.equal(level(res('update', '', 'pods', { subresource: 'status' })), 'RequestResponse', '*/status');
  t.equal(level(res('update', '', 'nodes', { subresource: 'status' })), 'RequestResponse', '*/status of another resource');
  t.equal(level(res('get', '', 'pods')), 'None', 'pods alone is not pods/log');
  t.equal(level(res('update', '', 'configmaps', { name: 'controller-leader' })), 'Request', 'by resource name');
  t.equal(level(res('update', '', 'configmaps', { name: 'other' })), 'None', 'another name');
  t.equal(level(res('get', '', 'secrets')), 'Metadata');
  t.equal(level(res('get', 'apps', 'deployments')), 'Metadata', 'deployments/* covers deployments');
  t.equal(level(res('update', 'apps', 'deployments', { subresource: 'scale' })), 'Metadata', 'and its subresources');
  t.equal(level(res('get', 'extensions', 'deployments')), 'None', 'another group');
  t.equal(level(res('get', '', 'configmaps', { namespace: 'kube-system' })), 'Request', 'by namespace');
  t.equal(level(res('get', 'rbac.authorization.k8s.io', 'roles')), 'Metadata', 'a whole group');
  t.equal(level(nonres('/healthz/etcd')), 'None', 'a URL prefix');
  t.equal(level(nonres('/apis/apps/v1')), 'Metadata');
  t.equal(level(nonres('/api')), 'None', 'no rule matches: None');
  t.equal(level({ ...nonres('/x'), isResourceRequest: true, namespace: 'kube-system' }), 'Request', 'namespaces only for resource requests');
});

t.test('omitStages joins the policy and the rule; omitManagedFields the rule over the policy', async (t) => {
  const d = policy.evaluate(res('update', '', 'configmaps', { name: 'controller-leader' }));
  t.same([...d.omitStages].sort(), ['RequestReceived', 'ResponseStarted']);
  t.equal(d.omitManagedFields, true, "the policy's");
  t.equal(policy.evaluate(res('get', '', 'pods', { subresource: 'log' })).omitManagedFields, false, "the rule's");
  t.same([...policy.evaluate(nonres('/none')).omitStages], ['RequestReceived']);
});

t.test('bad policies are refused naming the entry', async (t) => {
  const bad = (text: string, msg: RegExp) => {
    let err: unknown;
    try { AuditPolicy.parse(text); } catch (e) { err = e; }
    t.ok(err instanceof PolicyError, `refused: ${msg.source}`);
    t.match((err as Error | undefined)?.message ?? '', msg);
  };
  const head = 'apiVersion: audit.k8s.io/v1\nkind: Policy\n';
  bad('apiVersion: audit.k8s.io/v1beta1\nkind: Policy\n', /apiVersion is "audit.k8s.io\/v1beta1", want "audit.k8s.io\/v1"/);
  bad('apiVersion: audit.k8s.io/v1\nkind: Pod\n', /kind is "Pod"/);
  bad(`${head}rules:\n- users: [a]\n`, /rules\[0\]\.level: required/);
  bad(`${head}rules:\n- level: Everything\n`, /rules\[0\]\.level: unsupported value "Everything"/);
  bad(`${head}rules:\n- level: None\n  omitStages: [Sometimes]\n`, /rules\[0\]\.omitStages: unsupported value "Sometimes"/);
  bad(`${head}omitStages: [Never]\n`, /Policy\.omitStages/);
  bad(`${head}rules:\n- level: None\n  nonResourceURLs: [/a]\n  namespaces: [x]\n`, /both regular resources and non-resource URLs/);
  bad(`${head}rules:\n- level: None\n  nonResourceURLs: [/a*b]\n`, /may only end with "\*"/);
  bad(`${head}rules:\n- level: None\n  resources: [{ resources: ["*"], resourceNames: [x] }]\n`, /resourceNames: may not be given with a wildcard/);
  bad('{', /not YAML or JSON/);
  t.equal(AuditPolicy.parse(JSON.stringify({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata' }] })).evaluate(nonres('/x')).level, 'Metadata', 'JSON too');
});
