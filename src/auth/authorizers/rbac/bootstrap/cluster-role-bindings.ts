/**
 * The default ClusterRoleBindings (Kubernetes' bootstrappolicy ClusterRoleBindings()). The
 * system:node binding has no subjects: nodes get system:node's permissions through the Node
 * authorizer, narrowed to their own objects, not through RBAC.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { clusterRoleBinding, group, serviceAccount, user } from './builders.js';

const AUTHENTICATED = group('system:authenticated');

export function defaultClusterRoleBindings(): KubeObject[] {
  return [
    clusterRoleBinding('cluster-admin', 'cluster-admin', [group('system:masters')]),
    clusterRoleBinding('system:basic-user', 'system:basic-user', [AUTHENTICATED]),
    clusterRoleBinding('system:discovery', 'system:discovery', [AUTHENTICATED]),
    clusterRoleBinding('system:kube-controller-manager', 'system:kube-controller-manager', [user('system:kube-controller-manager')]),
    clusterRoleBinding('system:kube-dns', 'system:kube-dns', [serviceAccount('kube-system', 'kube-dns')]),
    clusterRoleBinding('system:kube-scheduler', 'system:kube-scheduler', [user('system:kube-scheduler')]),
    clusterRoleBinding('system:node', 'system:node', []),
    clusterRoleBinding('system:node-proxier', 'system:node-proxier', [user('system:kube-proxy')]),
    // Unauthenticated clients may read health and version: what a load balancer probes.
    clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', [AUTHENTICATED, group('system:unauthenticated')]),
    clusterRoleBinding('system:volume-scheduler', 'system:volume-scheduler', [user('system:kube-scheduler')]),
  ];
}
