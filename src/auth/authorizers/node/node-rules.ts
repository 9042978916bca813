/**
 * Kubernetes' static rules for nodes (bootstrappolicy.NodeRules(), as in its bootstrap-policy
 * test data for the system:node ClusterRole): what every node may do beyond what the Node
 * authorizer decides from the graph. Data only.
 */
import type { PolicyRule } from '../rbac/rule-match.js';

export function nodeRules(): PolicyRule[] {
  return [
    // Checking API access (non-mutating creates).
    { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['localsubjectaccessreviews', 'subjectaccessreviews'], verbs: ['create'] },
    // Service env vars.
    { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] },
    // Registering and reporting its Node (NodeRestriction limits it to its own).
    { apiGroups: [''], resources: ['nodes'], verbs: ['create', 'get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch', 'update'] },
    { apiGroups: [''], resources: ['nodes'], verbs: ['patch', 'update'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch', 'update'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
    // Mirror pods, pod status and evictions (NodeRestriction limits them to pods bound to the node).
    { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete'] },
    { apiGroups: [''], resources: ['pods/status'], verbs: ['patch', 'update'] },
    { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
    // The Node authorizer limits these to the objects of pods bound to the node.
    { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims', 'persistentvolumes'], verbs: ['get'] },
    { apiGroups: [''], resources: ['endpoints'], verbs: ['get'] },
    { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests'], verbs: ['create', 'get', 'list', 'watch'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'delete', 'get', 'patch', 'update'] },
    { apiGroups: ['storage.k8s.io'], resources: ['volumeattachments'], verbs: ['get'] },
    { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
    { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['get', 'patch', 'update'] },
    { apiGroups: ['storage.k8s.io'], resources: ['csidrivers'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: ['storage.k8s.io'], resources: ['csinodes'], verbs: ['create', 'delete', 'get', 'patch', 'update'] },
    { apiGroups: ['node.k8s.io'], resources: ['runtimeclasses'], verbs: ['get', 'list', 'watch'] },
  ];
}
