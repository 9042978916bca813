/**
 * The rules of the system:node ClusterRole: Kubernetes' NodeRules() (bootstrappolicy/policy.go),
 * what a node agent needs with feature gates at their defaults. Data only: the Node authorizer
 * narrows these to the node's own objects; RBAC grants them through system:node.
 */
import type { PolicyRule } from '../rbac/rule-match.js';

const READ = ['get', 'list', 'watch'];

function r(verbs: string[], groups: string[], resources: string[]): PolicyRule {
  return { verbs, apiGroups: groups, resources };
}

export function nodeRules(): PolicyRule[] {
  return [
    // Checking API access: these creates change nothing.
    r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
    r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews', 'localsubjectaccessreviews']),
    // The service lister behind pods' service environment variables.
    r(READ, [''], ['services']),
    // Nodes register themselves and keep their status.
    r(['create', 'get', 'list', 'watch'], [''], ['nodes']),
    r(['update', 'patch'], [''], ['nodes/status']),
    r(['update', 'patch'], [''], ['nodes']),
    r(['create', 'update', 'patch'], [''], ['events']),
    r(READ, [''], ['pods']),
    // Mirror pods of static pods.
    r(['create', 'delete'], [''], ['pods']),
    r(['update', 'patch'], [''], ['pods/status']),
    r(['create'], [''], ['pods/eviction']),
    // Volumes, image pull secrets and environment from secrets and config maps.
    r(READ, [''], ['secrets', 'configmaps']),
    r(['get'], [''], ['persistentvolumeclaims', 'persistentvolumes']),
    r(['get'], [''], ['endpoints']),
    // Certificate rotation.
    r(['create', 'get', 'list', 'watch'], ['certificates.k8s.io'], ['certificatesigningrequests']),
    // Node leases (heartbeats).
    r(['get', 'create', 'update', 'patch', 'delete'], ['coordination.k8s.io'], ['leases']),
    r(['get'], ['storage.k8s.io'], ['volumeattachments']),
    // Projected service-account tokens.
    r(['create'], [''], ['serviceaccounts/token']),
    // Volume expansion on the node.
    r(['get', 'update', 'patch'], [''], ['persistentvolumeclaims/status']),
    r(READ, ['storage.k8s.io'], ['csidrivers']),
    r(['get', 'create', 'update', 'patch', 'delete'], ['storage.k8s.io'], ['csinodes']),
    r(READ, ['node.k8s.io'], ['runtimeclasses']),
  ];
}
