/**
 * The `system:controller:<name>` ClusterRole and ClusterRoleBinding (to the ServiceAccount
 * kube-system/<name>) of every controller corectl runs, with Kubernetes' rules
 * (bootstrappolicy controller_policy.go). <name> is the service account Kubernetes' controller
 * manager gives the controller with --use-service-account-credentials, which is not always the
 * controller's --controllers name: CONTROLLER_SERVICE_ACCOUNTS maps one to the other.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { PolicyRule } from '../rule-match.js';
import { clusterRole, clusterRoleBinding, eventsRule, G, READ, rule, serviceAccount } from './builders.js';

/**
 * --controllers name → the service account it runs as (kube-system/<account>). The
 * serviceaccount-token controller has none: as in Kubernetes it keeps the controller manager's
 * own credentials (it mints the tokens the others use).
 */
export const CONTROLLER_SERVICE_ACCOUNTS: Readonly<Record<string, string>> = {
  attachdetach: 'attachdetach-controller',
  bootstrapsigner: 'bootstrap-signer',
  'clusterrole-aggregation': 'clusterrole-aggregation-controller',
  cronjob: 'cronjob-controller',
  csrapproving: 'certificate-controller',
  csrcleaner: 'certificate-controller',
  csrsigning: 'certificate-controller',
  daemonset: 'daemon-set-controller',
  deployment: 'deployment-controller',
  disruption: 'disruption-controller',
  endpoint: 'endpoint-controller',
  endpointslice: 'endpointslice-controller',
  garbagecollector: 'generic-garbage-collector',
  horizontalpodautoscaling: 'horizontal-pod-autoscaler',
  job: 'job-controller',
  namespace: 'namespace-controller',
  nodeipam: 'node-controller',
  nodelifecycle: 'node-controller',
  'persistentvolume-binder': 'persistent-volume-binder',
  'persistentvolume-expander': 'expand-controller',
  podgc: 'pod-garbage-collector',
  'pv-protection': 'pv-protection-controller',
  'pvc-protection': 'pvc-protection-controller',
  replicaset: 'replicaset-controller',
  replicationcontroller: 'replication-controller',
  resourcequota: 'resourcequota-controller',
  'root-ca-cert-publisher': 'root-ca-cert-publisher',
  serviceaccount: 'service-account-controller',
  statefulset: 'statefulset-controller',
  tokencleaner: 'token-cleaner',
  ttl: 'ttl-controller',
};

/**
 * Accounts whose rights are only namespaced Roles (namespace-roles.ts: kube-system secrets,
 * kube-public's cluster-info), as in Kubernetes: they have no system:controller: ClusterRole.
 */
export const NAMESPACED_ROLE_ACCOUNTS: readonly string[] = ['bootstrap-signer', 'token-cleaner'];

/** Controllers that run with the controller manager's own identity (system:kube-controller-manager). */
export const CONTROLLERS_WITHOUT_ACCOUNT: readonly string[] = ['serviceaccount-token'];

const WORKLOAD = [G.apps, G.extensions];
const PVC_PV_READ = (resources: string[]): PolicyRule => rule(READ, [G.core], resources);

/** Service account → its role's rules. */
const CONTROLLER_RULES: Readonly<Record<string, () => PolicyRule[]>> = {
  'attachdetach-controller': () => [
    rule(['list', 'watch'], [G.core], ['persistentvolumeclaims', 'persistentvolumes']),
    rule(['get', 'list', 'watch'], [G.core], ['nodes']),
    rule(['patch', 'update'], [G.core], ['nodes/status']),
    rule(['list', 'watch'], [G.core], ['pods']),
    eventsRule(),
    rule(['get', 'list', 'watch', 'create', 'delete'], [G.storage], ['volumeattachments']),
    rule(['get', 'list', 'watch'], [G.storage], ['csidrivers']),
    rule(['get', 'list', 'watch'], [G.storage], ['csinodes']),
  ],
  'certificate-controller': () => [
    rule(['get', 'list', 'watch', 'delete'], [G.certificates], ['certificatesigningrequests']),
    rule(['update'], [G.certificates], ['certificatesigningrequests/status', 'certificatesigningrequests/approval']),
    rule(['approve'], [G.certificates], ['signers'], ['kubernetes.io/kube-apiserver-client-kubelet']),
    rule(['sign'], [G.certificates], ['signers'], ['kubernetes.io/kube-apiserver-client', 'kubernetes.io/kube-apiserver-client-kubelet',
      'kubernetes.io/kubelet-serving', 'kubernetes.io/legacy-unknown']),
    // The approver asks whether the requester may ask for a node client certificate.
    rule(['create'], [G.authorization], ['subjectaccessreviews']),
    eventsRule(),
  ],
  // escalate: it writes rules its own role does not hold.
  'clusterrole-aggregation-controller': () => [rule(['escalate', 'get', 'list', 'watch', 'update', 'patch'], [G.rbac], ['clusterroles'])],
  'cronjob-controller': () => [
    rule(['get', 'list', 'watch', 'update'], [G.batch], ['cronjobs']),
    rule(['get', 'list', 'watch', 'create', 'update', 'delete', 'patch'], [G.batch], ['jobs']),
    rule(['update'], [G.batch], ['cronjobs/status']),
    rule(['update'], [G.batch], ['cronjobs/finalizers']),
    rule(['list', 'watch', 'delete'], [G.core], ['pods']),
    eventsRule(),
  ],
  'daemon-set-controller': () => [
    rule(READ, WORKLOAD, ['daemonsets']),
    rule(['update'], WORKLOAD, ['daemonsets/status']),
    rule(['update'], WORKLOAD, ['daemonsets/finalizers']),
    rule(['list', 'watch'], [G.core], ['nodes']),
    rule(['list', 'watch', 'create', 'delete', 'patch'], [G.core], ['pods']),
    rule(['create'], [G.core], ['pods/binding']),
    rule(['get', 'list', 'watch', 'create', 'delete', 'update', 'patch'], [G.apps], ['controllerrevisions']),
    eventsRule(),
  ],
  'deployment-controller': () => [
    rule(['get', 'list', 'watch', 'update'], WORKLOAD, ['deployments']),
    rule(['update'], WORKLOAD, ['deployments/status']),
    rule(['update'], WORKLOAD, ['deployments/finalizers']),
    rule(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'], WORKLOAD, ['replicasets']),
    // Pods are read, and updated to relabel them during a rollback.
    rule(['get', 'list', 'watch', 'update'], [G.core], ['pods']),
    eventsRule(),
  ],
  'disruption-controller': () => [
    rule(READ, WORKLOAD, ['deployments']),
    rule(READ, WORKLOAD, ['replicasets']),
    rule(READ, [G.core], ['replicationcontrollers']),
    rule(READ, [G.policy], ['poddisruptionbudgets']),
    rule(READ, [G.apps], ['statefulsets']),
    rule(['update'], [G.policy], ['poddisruptionbudgets/status']),
    rule(['patch', 'update'], [G.core], ['pods/status']),
    // The expected pod count of any scalable owner.
    rule(['get'], ['*'], ['*/scale']),
    eventsRule(),
  ],
  'endpoint-controller': () => [
    rule(READ, [G.core], ['services', 'pods']),
    rule(['get', 'list', 'watch', 'create', 'update', 'delete'], [G.core], ['endpoints']),
    rule(['create'], [G.core], ['endpoints/restricted']),
    eventsRule(),
  ],
  'endpointslice-controller': () => [
    rule(READ, [G.core], ['services', 'pods', 'nodes']),
    // Owner references with blockOwnerDeletion on services need this.
    rule(['update'], [G.core], ['services/finalizers']),
    rule(['get', 'list', 'watch', 'create', 'update', 'delete'], [G.discovery], ['endpointslices']),
    eventsRule(),
  ],
  'expand-controller': () => [
    rule(['get', 'list', 'watch', 'update', 'patch'], [G.core], ['persistentvolumes']),
    rule(['update', 'patch'], [G.core], ['persistentvolumeclaims/status']),
    PVC_PV_READ(['persistentvolumeclaims']),
    eventsRule(),
  ],
  'generic-garbage-collector': () => [rule(['get', 'list', 'watch', 'patch', 'update', 'delete'], ['*'], ['*']), eventsRule()],
  'job-controller': () => [
    rule(['get', 'list', 'watch', 'update', 'patch'], [G.batch], ['jobs']),
    rule(['update'], [G.batch], ['jobs/status']),
    rule(['update'], [G.batch], ['jobs/finalizers']),
    rule(['list', 'watch', 'create', 'delete', 'patch'], [G.core], ['pods']),
    eventsRule(),
  ],
  'namespace-controller': () => [
    rule(['get', 'list', 'watch', 'delete'], [G.core], ['namespaces']),
    rule(['update'], [G.core], ['namespaces/finalize', 'namespaces/status']),
    // Emptying a namespace deletes every kind in it.
    rule(['get', 'list', 'watch', 'delete', 'deletecollection'], ['*'], ['*']),
  ],
  'node-controller': () => [
    rule(['get', 'list', 'watch', 'update', 'delete', 'patch'], [G.core], ['nodes']),
    rule(['patch', 'update'], [G.core], ['nodes/status']),
    // Marking pods of unready nodes not ready, and evicting them.
    rule(['patch', 'update'], [G.core], ['pods/status']),
    rule(['list', 'watch', 'get', 'delete'], [G.core], ['pods']),
    eventsRule(),
  ],
  'persistent-volume-binder': () => [
    rule(['get', 'list', 'watch', 'update', 'create', 'delete'], [G.core], ['persistentvolumes']),
    rule(['update'], [G.core], ['persistentvolumes/status']),
    rule(['get', 'list', 'watch', 'update'], [G.core], ['persistentvolumeclaims']),
    rule(['update'], [G.core], ['persistentvolumeclaims/status']),
    // Recycler pods.
    rule(['get', 'list', 'watch', 'create', 'delete'], [G.core], ['pods']),
    rule(READ, [G.storage], ['storageclasses']),
    rule(['watch', 'list'], [G.core], ['nodes']),
    eventsRule(),
    rule(['watch'], [G.core], ['events']),
  ],
  'pod-garbage-collector': () => [
    rule(['list', 'watch', 'delete'], [G.core], ['pods']),
    rule(READ, [G.core], ['nodes']),
    rule(['patch'], [G.core], ['pods/status']),
  ],
  // Kubernetes' system:controller:horizontal-pod-autoscaler: the scale of any target, the metrics APIs.
  'horizontal-pod-autoscaler': () => [
    rule(['get', 'list', 'watch'], [G.autoscaling], ['horizontalpodautoscalers']),
    rule(['update'], [G.autoscaling], ['horizontalpodautoscalers/status']),
    rule(['get', 'update'], ['*'], ['*/scale']),
    rule(['list', 'watch'], [G.core], ['pods']),
    rule(['list', 'watch'], ['metrics.k8s.io'], ['pods']),
    rule(['get', 'list', 'watch'], ['custom.metrics.k8s.io'], ['*']),
    rule(['get', 'list', 'watch'], ['external.metrics.k8s.io'], ['*']),
    eventsRule(),
  ],
  'pv-protection-controller': () => [rule(['get', 'list', 'watch', 'update'], [G.core], ['persistentvolumes']), eventsRule()],
  'pvc-protection-controller': () => [
    rule(['get', 'list', 'watch', 'update'], [G.core], ['persistentvolumeclaims']),
    rule(['update'], [G.core], ['persistentvolumeclaims/status']),
    rule(READ, [G.core], ['pods']),
    eventsRule(),
  ],
  'replicaset-controller': () => [
    rule(['get', 'list', 'watch', 'update'], WORKLOAD, ['replicasets']),
    rule(['update'], WORKLOAD, ['replicasets/status']),
    rule(['update'], WORKLOAD, ['replicasets/finalizers']),
    rule(['list', 'watch', 'patch', 'create', 'delete'], [G.core], ['pods']),
    eventsRule(),
  ],
  'replication-controller': () => [
    // Kubernetes runs the replication controller as the replica set controller over another kind.
    rule(['get', 'list', 'watch', 'update'], [G.core], ['replicationcontrollers']),
    rule(['update'], [G.core], ['replicationcontrollers/status']),
    rule(['update'], [G.core], ['replicationcontrollers/finalizers']),
    rule(['list', 'watch', 'patch', 'create', 'delete'], [G.core], ['pods']),
    eventsRule(),
  ],
  'resourcequota-controller': () => [
    // Quota counts objects of every kind.
    rule(['list', 'watch'], ['*'], ['*']),
    rule(['update'], [G.core], ['resourcequotas/status']),
    eventsRule(),
  ],
  'root-ca-cert-publisher': () => [rule(['create', 'update'], [G.core], ['configmaps']), eventsRule()],
  'service-account-controller': () => [rule(['create'], [G.core], ['serviceaccounts']), eventsRule()],
  'statefulset-controller': () => [
    rule(['list', 'watch'], [G.core], ['pods']),
    rule(READ, [G.apps], ['statefulsets']),
    rule(['update'], [G.apps], ['statefulsets/status']),
    rule(['update'], [G.apps], ['statefulsets/finalizers']),
    rule(['get', 'create', 'delete', 'update', 'patch'], [G.core], ['pods']),
    rule(['get', 'list', 'watch', 'create', 'delete', 'update', 'patch'], [G.apps], ['controllerrevisions']),
    rule(['get', 'create', 'list', 'watch'], [G.core], ['persistentvolumeclaims']),
    // Claims retention (persistentVolumeClaimRetentionPolicy).
    rule(['update', 'delete'], [G.core], ['persistentvolumeclaims']),
    rule(['update'], [G.core], ['pods/finalizers']),
    eventsRule(),
  ],
  'ttl-controller': () => [rule(['update', 'patch', 'list', 'watch'], [G.core], ['nodes']), eventsRule()],
};

/** The distinct service accounts of the controllers we run that have a ClusterRole, sorted. */
export function controllerAccounts(): string[] {
  return [...new Set(Object.values(CONTROLLER_SERVICE_ACCOUNTS))].filter((a) => !NAMESPACED_ROLE_ACCOUNTS.includes(a)).sort();
}

export function controllerRoles(): KubeObject[] {
  return controllerAccounts().map((sa) => {
    const rules = CONTROLLER_RULES[sa];
    if (!rules) throw new Error(`no rules for controller service account ${sa}`);
    return clusterRole(`system:controller:${sa}`, rules());
  });
}

export function controllerRoleBindings(): KubeObject[] {
  return controllerAccounts().map((sa) => clusterRoleBinding(`system:controller:${sa}`, `system:controller:${sa}`, [serviceAccount('kube-system', sa)]));
}
