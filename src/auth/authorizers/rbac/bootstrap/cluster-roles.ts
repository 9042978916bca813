/**
 * The default ClusterRoles every cluster has (Kubernetes' bootstrappolicy ClusterRoles()):
 * cluster-admin, the user-facing admin/edit/view (aggregated from the system:aggregate-to-*
 * roles and from any role a user labels aggregate-to-*), and the system: roles of components.
 * The system:controller:* roles are in controller-roles.ts.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { nodeRules } from '../../node/node-rules.js';
import { clusterRole, eventsRule, G, READ, READ_WRITE, rule, urlRule, WRITE } from './builders.js';

const AGGREGATE_TO = (role: 'admin' | 'edit' | 'view'): Record<string, string> => ({ [`rbac.authorization.k8s.io/aggregate-to-${role}`]: 'true' });

/** What system:aggregate-to-view grants: reads of objects that carry no secrets and grant nothing. */
function viewRules(): ReturnType<typeof rule>[] {
  return [
    rule(READ, [G.core], ['pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts',
      'services', 'services/status', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'configmaps']),
    rule(READ, [G.core], ['limitranges', 'resourcequotas', 'bindings', 'events', 'pods/status', 'resourcequotas/status',
      'namespaces/status', 'replicationcontrollers/status', 'pods/log']),
    // Reading namespaces at namespace scope reads only that namespace: a hint of what one may see.
    rule(READ, [G.core], ['namespaces']),
    rule(READ, [G.discovery], ['endpointslices']),
    rule(READ, [G.apps], ['controllerrevisions', 'statefulsets', 'statefulsets/scale', 'statefulsets/status', 'daemonsets',
      'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status']),
    rule(READ, [G.autoscaling], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
    rule(READ, [G.batch], ['jobs', 'cronjobs', 'cronjobs/status', 'jobs/status']),
    rule(READ, [G.extensions], ['daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status',
      'ingresses', 'ingresses/status', 'replicasets', 'replicasets/scale', 'replicasets/status', 'replicationcontrollers/scale', 'networkpolicies']),
    rule(READ, [G.policy], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
    rule(READ, [G.networking], ['ingresses', 'ingresses/status', 'networkpolicies']),
  ];
}

/** What system:aggregate-to-edit grants: writes of a namespace's workloads, secrets included. */
function editRules(): ReturnType<typeof rule>[] {
  return [
    // Pods' interactive subresources and secrets are reads beyond view.
    rule(READ, [G.core], ['pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward', 'secrets', 'services/proxy']),
    rule(['impersonate'], [G.core], ['serviceaccounts']),
    rule(WRITE, [G.core], ['pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward']),
    rule(['create'], [G.core], ['pods/eviction']),
    rule(WRITE, [G.core], ['replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services',
      'services/proxy', 'persistentvolumeclaims', 'configmaps', 'secrets', 'events']),
    rule(['create'], [G.core], ['serviceaccounts/token']),
    rule(WRITE, [G.apps], ['statefulsets', 'statefulsets/scale', 'daemonsets', 'deployments', 'deployments/scale',
      'deployments/rollback', 'replicasets', 'replicasets/scale']),
    rule(WRITE, [G.autoscaling], ['horizontalpodautoscalers']),
    rule(WRITE, [G.batch], ['jobs', 'cronjobs']),
    rule(WRITE, [G.extensions], ['daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'ingresses',
      'replicasets', 'replicasets/scale', 'replicationcontrollers/scale', 'networkpolicies']),
    rule(WRITE, [G.policy], ['poddisruptionbudgets']),
    rule(WRITE, [G.networking], ['ingresses', 'networkpolicies']),
    rule(READ_WRITE, [G.coordination], ['leases']),
  ];
}

const SIGNER_APPROVER = (signer: string): KubeObject => clusterRole(`system:certificates.k8s.io:${signer.slice('kubernetes.io/'.length)}-approver`,
  [rule(['approve'], [G.certificates], ['signers'], [signer])]);

export function defaultClusterRoles(): KubeObject[] {
  return [
    // Aggregated: the aggregation controller fills their rules.
    clusterRole('admin', [], { aggregateFrom: [AGGREGATE_TO('admin')] }),
    clusterRole('cluster-admin', [rule(['*'], ['*'], ['*']), urlRule(['*'], ['*'])]),
    clusterRole('edit', [], { aggregateFrom: [AGGREGATE_TO('edit')], labels: AGGREGATE_TO('admin') }),
    clusterRole('system:aggregate-to-admin', [
      rule(['create'], [G.authorization], ['localsubjectaccessreviews']),
      // Granting roles inside the namespace is what admin has beyond edit.
      rule(READ_WRITE, [G.rbac], ['roles', 'rolebindings']),
    ], { labels: AGGREGATE_TO('admin') }),
    clusterRole('system:aggregate-to-edit', editRules(), { labels: AGGREGATE_TO('edit') }),
    clusterRole('system:aggregate-to-view', viewRules(), { labels: AGGREGATE_TO('view') }),
    clusterRole('system:auth-delegator', [
      rule(['create'], [G.authentication], ['tokenreviews']),
      rule(['create'], [G.authorization], ['subjectaccessreviews']),
    ]),
    clusterRole('system:basic-user', [
      rule(['create'], [G.authorization], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']),
      rule(['create'], [G.authentication], ['selfsubjectreviews']),
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:nodeclient',
      [rule(['create'], [G.certificates], ['certificatesigningrequests/nodeclient'])]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
      [rule(['create'], [G.certificates], ['certificatesigningrequests/selfnodeclient'])]),
    SIGNER_APPROVER('kubernetes.io/kube-apiserver-client'),
    SIGNER_APPROVER('kubernetes.io/kube-apiserver-client-kubelet'),
    SIGNER_APPROVER('kubernetes.io/kubelet-serving'),
    SIGNER_APPROVER('kubernetes.io/legacy-unknown'),
    clusterRole('system:discovery', [urlRule(['get'], ['/livez', '/readyz', '/healthz', '/version', '/version/',
      '/openapi', '/openapi/*', '/api', '/api/*', '/apis', '/apis/*'])]),
    clusterRole('system:heapster', [
      rule(READ, [G.core], ['events', 'pods', 'nodes', 'namespaces']),
      rule(READ, [G.extensions], ['deployments']),
    ]),
    clusterRole('system:kube-aggregator', [rule(READ, [G.core], ['services', 'endpoints'])]),
    clusterRole('system:kube-controller-manager', [
      eventsRule(),
      // Leader election through its own lease.
      rule(['create'], [G.coordination], ['leases']),
      rule(['get', 'update'], [G.coordination], ['leases'], ['kube-controller-manager']),
      // Its controllers' service accounts and their token secrets.
      rule(['create'], [G.core], ['secrets', 'serviceaccounts']),
      rule(['delete'], [G.core], ['secrets']),
      rule(['get'], [G.core], ['namespaces', 'secrets', 'serviceaccounts', 'configmaps']),
      rule(['update'], [G.core], ['secrets', 'serviceaccounts']),
      // Delegated authentication and authorization of its own port.
      rule(['create'], [G.authentication], ['tokenreviews']),
      rule(['create'], [G.authorization], ['subjectaccessreviews']),
      // The shared informers.
      rule(['list', 'watch'], ['*'], ['*']),
      rule(['create'], [G.core], ['serviceaccounts/token']),
    ]),
    clusterRole('system:kube-dns', [rule(['list', 'watch'], [G.core], ['endpoints', 'services'])]),
    clusterRole('system:kube-scheduler', [
      eventsRule(),
      rule(['create'], [G.coordination], ['leases']),
      rule(['get', 'update'], [G.coordination], ['leases'], ['kube-scheduler']),
      rule(READ, [G.core], ['nodes']),
      rule(['get', 'list', 'watch', 'delete'], [G.core], ['pods']),
      rule(['create'], [G.core], ['pods/binding', 'bindings']),
      rule(['patch', 'update'], [G.core], ['pods/status']),
      rule(READ, [G.core], ['replicationcontrollers', 'services']),
      rule(READ, [G.apps, G.extensions], ['replicasets']),
      rule(READ, [G.apps], ['statefulsets']),
      rule(READ, [G.policy], ['poddisruptionbudgets']),
      rule(READ, [G.core], ['persistentvolumeclaims', 'persistentvolumes']),
      rule(['create'], [G.authentication], ['tokenreviews']),
      rule(['create'], [G.authorization], ['subjectaccessreviews']),
      rule(READ, [G.storage], ['csinodes']),
      rule(READ, [G.core], ['namespaces']),
      rule(READ, [G.storage], ['csidrivers']),
      rule(READ, [G.storage], ['csistoragecapacities']),
    ]),
    clusterRole('system:kubelet-api-admin', [
      rule(READ, [G.core], ['nodes']),
      rule(['proxy'], [G.core], ['nodes']),
      rule(['*'], [G.core], ['nodes/proxy', 'nodes/metrics', 'nodes/stats', 'nodes/log']),
    ]),
    clusterRole('system:monitoring', [urlRule(['get'], ['/metrics', '/metrics/slis', '/livez', '/readyz', '/healthz',
      '/livez/*', '/readyz/*', '/healthz/*'])]),
    clusterRole('system:node', nodeRules()),
    clusterRole('system:node-bootstrapper', [rule(['create', 'get', 'list', 'watch'], [G.certificates], ['certificatesigningrequests'])]),
    clusterRole('system:node-problem-detector', [
      rule(['get'], [G.core], ['nodes']),
      rule(['patch'], [G.core], ['nodes/status']),
      eventsRule(),
    ]),
    clusterRole('system:node-proxier', [
      rule(['list', 'watch'], [G.core], ['services', 'endpoints']),
      rule(READ, [G.core], ['nodes']),
      eventsRule(),
      rule(['list', 'watch'], [G.discovery], ['endpointslices']),
    ]),
    clusterRole('system:persistent-volume-provisioner', [
      rule(['get', 'list', 'watch', 'create', 'delete'], [G.core], ['persistentvolumes']),
      // update: the provisioner annotates claims.
      rule(['get', 'list', 'watch', 'update'], [G.core], ['persistentvolumeclaims']),
      rule(READ, [G.storage], ['storageclasses']),
      rule(['watch'], [G.core], ['events']),
      eventsRule(),
    ]),
    clusterRole('system:public-info-viewer', [urlRule(['get'], ['/livez', '/readyz', '/healthz', '/version', '/version/'])]),
    clusterRole('system:service-account-issuer-discovery', [urlRule(['get'], ['/.well-known/openid-configuration', '/openid/v1/jwks'])]),
    clusterRole('system:volume-scheduler', [
      rule(['get', 'list', 'watch', 'patch', 'update'], [G.core], ['persistentvolumes']),
      rule(READ, [G.storage], ['storageclasses']),
      rule(['get', 'list', 'watch', 'patch', 'update'], [G.core], ['persistentvolumeclaims']),
    ]),
    clusterRole('view', [], { aggregateFrom: [AGGREGATE_TO('view')], labels: AGGREGATE_TO('edit') }),
  ];
}
