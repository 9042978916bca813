/**
 * The controller manager's options (reference: "Controller manager: options"), ours at the end.
 * CONNECTION_AND_ELECTION rows are shared with our scheduler.
 */
import { G, HELP_VERSION_GATES, OURS_LOGGING } from './common-options.js';
import { TLS_VERSIONS } from './known-names.js';
import { CONTROL_PLANE_GATES } from './feature-gates.js';
import { parseDaemonArgs, type DaemonFlagSet, type ParseResult } from './parser.js';
import type { ConfigOf, OptionSpec } from './option-spec.js';
import { CONTROLLER_MANAGER_RULES } from './rules-controller-manager.js';

/** API server connection and leader election (also taken by the scheduler). */
export const CONNECTION_AND_ELECTION = [
  { name: 'core-api-burst', type: 'int32', default: '30', group: G.client, description: 'Burst of requests to the API server.' },
  { name: 'core-api-content-type', type: 'string', default: 'application/vnd.kubernetes.protobuf', group: G.client, description: 'Content type of requests sent to the API server.' },
  { name: 'core-api-qps', type: 'float32', default: '20', group: G.client, description: 'Sustained requests per second to the API server.' },
  { name: 'coreconfig', type: 'string', group: G.client, description: 'coreconfig file with the API server location and credentials.' },
  { name: 'master', type: 'string', group: G.client, description: 'API server address; overrides the coreconfig file.' },
  { name: 'leader-elect', type: 'bool', default: 'true', group: G.leader, description: 'Take a leader lease before running (for replicated deployments).' },
  { name: 'leader-elect-lease-duration', type: 'duration', default: '15s', group: G.leader, description: 'How long others wait after the last renewal before taking over.' },
  { name: 'leader-elect-renew-deadline', type: 'duration', default: '10s', group: G.leader, description: 'The leader steps down if it cannot renew within this; at most the lease duration.' },
  { name: 'leader-elect-resource-lock', type: 'string', default: 'endpoints', oneOf: ['endpoints', 'configmaps', 'leases'], group: G.leader, description: 'Lock object kind: endpoints, configmaps or leases.' },
  { name: 'leader-elect-retry-period', type: 'duration', default: '2s', group: G.leader, description: 'Wait between attempts to acquire or renew.' },
  { name: 'bind-address', type: 'ip', default: '0.0.0.0', group: G.secure, description: 'Listen address of --secure-port; 0.0.0.0 or :: for all interfaces.' },
  { name: 'profiling', type: 'bool', default: 'true', group: G.debug, description: 'Serve profiles at /debug/pprof/.' },
] as const;

const TLS_SERVING = [
  { name: 'cert-dir', type: 'string', default: '/var/run/core', group: G.secure, description: 'Where the generated TLS pair lives; unused when cert and key files are given.' },
  { name: 'http2-max-streams-per-connection', type: 'int', group: G.secure, description: 'HTTP/2 streams offered per connection; 0 uses the library default.' },
  { name: 'secure-port', type: 'int', group: G.secure, description: 'HTTPS port with authentication and authorization; 0 switches it off.' },
  { name: 'tls-cert-file', type: 'string', group: G.secure, description: 'Serving certificate (chain appended); a self-signed pair is made in --cert-dir when absent.' },
  { name: 'tls-cipher-suites', type: 'stringSlice', syntax: 'tls-cipher-suites', group: G.secure, description: 'Allowed cipher suites, Go crypto/tls names; default the library\'s list.' },
  { name: 'tls-min-version', type: 'string', oneOf: TLS_VERSIONS, group: G.secure, description: 'Lowest TLS version: VersionTLS10 to VersionTLS13.' },
  { name: 'tls-private-key-file', type: 'string', group: G.secure, description: 'Key of --tls-cert-file.' },
  { name: 'tls-sni-cert-key', type: 'namedCertKey', group: G.secure, description: 'cert,key[:name,*.name]; per-SNI serving pair; repeatable.' },
] as const;

export const CONTROLLER_MANAGER_OPTIONS = [
  ...HELP_VERSION_GATES,
  ...CONNECTION_AND_ELECTION,
  ...TLS_SERVING,
  { name: 'address', type: 'ip', default: '0.0.0.0', deprecated: 'use --bind-address with --secure-port', group: G.insecure, description: 'Address of the insecure --port listener.' },
  { name: 'port', type: 'int', default: '10252', deprecated: 'use --secure-port', group: G.insecure, description: 'Insecure, unauthenticated HTTP port; 0 switches it off.' },
  { name: 'allocate-node-cidrs', type: 'bool', group: G.nodes, description: 'Allocate pod CIDRs to nodes (and set them on the cloud provider).' },
  { name: 'attach-detach-reconcile-sync-period', type: 'duration', default: '1m0s', group: G.volumes, description: 'Period of the attach/detach reconciler; above 1s.' },
  { name: 'vendor-container-registry-config', type: 'string', group: G.generic, description: 'A cloud vendor\'s container-registry configuration file.' },
  { name: 'cidr-allocator-type', type: 'string', default: 'RangeAllocator', group: G.nodes, description: 'CIDR allocator kind.' },
  { name: 'cloud-config', type: 'string', group: G.generic, description: 'Cloud-provider configuration file.' },
  { name: 'cloud-provider', type: 'string', group: G.generic, description: 'Cloud provider; empty for none.' },
  { name: 'cluster-cidr', type: 'string', group: G.nodes, description: 'Pod CIDR of the cluster; needs --allocate-node-cidrs.' },
  { name: 'cluster-name', type: 'string', default: 'core', group: G.generic, description: 'Instance prefix of the cluster.' },
  { name: 'cluster-signing-cert-file', type: 'string', default: '/etc/core/ca/ca.pem', group: G.certs, description: 'CA certificate issuing cluster-scoped certificates.' },
  { name: 'cluster-signing-key-file', type: 'string', default: '/etc/core/ca/ca.key', group: G.certs, description: 'RSA or ECDSA key of that CA.' },
  { name: 'concurrent-deployment-syncs', type: 'int32', default: '5', group: G.controllers, description: 'Deployment workers.' },
  { name: 'concurrent-endpoint-syncs', type: 'int32', default: '5', group: G.controllers, description: 'Endpoint workers.' },
  { name: 'concurrent-gc-syncs', type: 'int32', default: '20', group: G.controllers, description: 'Garbage-collector workers.' },
  { name: 'concurrent-namespace-syncs', type: 'int32', default: '10', group: G.controllers, description: 'Namespace workers.' },
  { name: 'concurrent-replicaset-syncs', type: 'int32', default: '5', group: G.controllers, description: 'Replica set workers.' },
  { name: 'concurrent-resource-quota-syncs', type: 'int32', default: '5', group: G.controllers, description: 'Resource quota workers.' },
  { name: 'concurrent-service-syncs', type: 'int32', default: '1', group: G.controllers, description: 'Service workers.' },
  { name: 'concurrent-serviceaccount-token-syncs', type: 'int32', default: '5', group: G.controllers, description: 'Service-account token workers.' },
  { name: 'concurrent_rc_syncs', type: 'int32', default: '5', group: G.controllers, description: 'Replication controller workers (underscores in the name; dashes work too).' },
  { name: 'configure-cloud-routes', type: 'bool', default: 'true', group: G.nodes, description: 'Program allocated node CIDRs as cloud routes.' },
  { name: 'contention-profiling', type: 'bool', group: G.debug, description: 'Also profile lock contention (needs --profiling).' },
  { name: 'controller-start-interval', type: 'duration', group: G.controllers, description: 'Pause between starting controllers.' },
  { name: 'controllers', type: 'stringSlice', default: '*', syntax: 'controllers', group: G.controllers, description: '"*" all on-by-default controllers, "name" on, "-name" off (bootstrapsigner and tokencleaner are off by default; root-ca-cert-publisher and endpointslice are ours, beyond the reference, and on by default).' },
  { name: 'deployment-controller-sync-period', type: 'duration', default: '30s', group: G.controllers, description: 'Deployment resync period.' },
  { name: 'disable-attach-detach-reconcile-sync', type: 'bool', group: G.volumes, description: 'Stop the attach/detach reconciler (volumes may drift from pods).' },
  { name: 'enable-dynamic-provisioning', type: 'bool', default: 'true', group: G.volumes, description: 'Provision volumes dynamically where supported.' },
  { name: 'enable-garbage-collector', type: 'bool', default: 'true', group: G.controllers, description: 'Generic garbage collection; keep equal to the API server\'s setting.' },
  { name: 'enable-hostpath-provisioner', type: 'bool', group: G.volumes, description: 'Provision host-path volumes without a cloud (single-node testing only).' },
  { name: 'enable-taint-manager', type: 'bool', default: 'true', group: G.nodes, description: 'Evict pods that do not tolerate NoExecute taints of their node.' },
  { name: 'experimental-cluster-signing-duration', type: 'duration', default: '8760h0m0s', group: G.certs, description: 'Validity of signed certificates.' },
  { name: 'external-cloud-volume-plugin', type: 'string', group: G.volumes, description: 'Volume plugin used with --cloud-provider=external.' },
  { name: 'flex-volume-plugin-dir', type: 'string', default: '/usr/libexec/core/nodeagent-plugins/volume/exec/', group: G.volumes, description: 'Directory of third-party flex volume plugins.' },
  { name: 'horizontal-pod-autoscaler-downscale-delay', type: 'duration', default: '5m0s', group: G.autoscaler, description: 'Minimum time between downscales.' },
  { name: 'horizontal-pod-autoscaler-sync-period', type: 'duration', default: '30s', group: G.autoscaler, description: 'Autoscaler sync period.' },
  { name: 'horizontal-pod-autoscaler-tolerance', type: 'float', default: '0.1', group: G.autoscaler, description: 'Smallest ratio change (from 1.0) that triggers scaling.' },
  { name: 'horizontal-pod-autoscaler-upscale-delay', type: 'duration', default: '3m0s', group: G.autoscaler, description: 'Minimum time between upscales.' },
  { name: 'horizontal-pod-autoscaler-use-rest-clients', type: 'bool', default: 'true', group: G.autoscaler, description: 'Read metrics through the aggregated REST APIs (needed for custom metrics).' },
  { name: 'insecure-experimental-approve-all-kubelet-csrs-for-group', type: 'string', group: G.certs, description: 'No effect; kept for compatibility.' },
  { name: 'large-cluster-size-threshold', type: 'int32', default: '50', group: G.nodes, description: 'Clusters with at most this many nodes use a secondary eviction rate of 0.' },
  { name: 'min-resync-period', type: 'duration', default: '12h0m0s', group: G.controllers, description: 'Informer resync is random between this and twice this.' },
  { name: 'namespace-sync-period', type: 'duration', default: '5m0s', group: G.controllers, description: 'Namespace lifecycle resync period.' },
  { name: 'node-cidr-mask-size', type: 'int32', default: '24', group: G.nodes, description: 'Prefix length of node pod CIDRs.' },
  { name: 'node-eviction-rate', type: 'float32', default: '0.1', group: G.nodes, description: 'Nodes per second drained on failure while the zone is healthy.' },
  { name: 'node-monitor-grace-period', type: 'duration', default: '40s', group: G.nodes, description: 'Silence allowed from a running node before it is unhealthy.' },
  { name: 'node-monitor-period', type: 'duration', default: '5s', group: G.nodes, description: 'Node status check period.' },
  { name: 'node-startup-grace-period', type: 'duration', default: '1m0s', group: G.nodes, description: 'Silence allowed from a starting node before it is unhealthy.' },
  { name: 'pod-eviction-timeout', type: 'duration', default: '5m0s', group: G.nodes, description: 'Grace before pods of a failed node are deleted.' },
  { name: 'pv-recycler-increment-timeout-nfs', type: 'int32', default: '30', group: G.volumes, description: 'Seconds per Gi added to an NFS scrubber pod deadline.' },
  { name: 'pv-recycler-minimum-timeout-hostpath', type: 'int32', default: '60', group: G.volumes, description: 'Minimum deadline of a host-path recycler pod (testing).' },
  { name: 'pv-recycler-minimum-timeout-nfs', type: 'int32', default: '300', group: G.volumes, description: 'Minimum deadline of an NFS recycler pod.' },
  { name: 'pv-recycler-pod-template-filepath-hostpath', type: 'string', group: G.volumes, description: 'Pod template for host-path recycling (testing).' },
  { name: 'pv-recycler-pod-template-filepath-nfs', type: 'string', group: G.volumes, description: 'Pod template for NFS recycling.' },
  { name: 'pv-recycler-timeout-increment-hostpath', type: 'int32', default: '30', group: G.volumes, description: 'Seconds per Gi added to a host-path scrubber pod deadline (testing).' },
  { name: 'pvclaimbinder-sync-period', type: 'duration', default: '15s', group: G.volumes, description: 'Volume and claim binder sync period.' },
  { name: 'resource-quota-sync-period', type: 'duration', default: '5m0s', group: G.controllers, description: 'Quota usage resync period.' },
  { name: 'root-ca-file', type: 'string', group: G.certs, description: 'CA bundle put into service-account token secrets and the kube-root-ca.crt ConfigMaps; when unset, the coreconfig\'s certificate authority.' },
  { name: 'route-reconciliation-period', type: 'duration', default: '10s', group: G.nodes, description: 'Cloud route reconcile period.' },
  { name: 'secondary-node-eviction-rate', type: 'float32', default: '0.01', group: G.nodes, description: 'Nodes per second drained while the zone is unhealthy.' },
  { name: 'service-account-private-key-file', type: 'string', group: G.certs, description: 'Key signing service-account tokens.' },
  { name: 'service-cluster-ip-range', type: 'string', group: G.nodes, description: 'Service CIDR; needs --allocate-node-cidrs.' },
  { name: 'terminated-pod-gc-threshold', type: 'int32', default: '12500', group: G.controllers, description: 'Terminated pods kept before collection; 0 or less disables it.' },
  { name: 'unhealthy-zone-threshold', type: 'float32', default: '0.55', group: G.nodes, description: 'Fraction of not-Ready nodes (at least 3) making a zone unhealthy.' },
  { name: 'use-service-account-credentials', type: 'bool', group: G.certs, description: 'Run each controller with its own service-account credentials.' },
  ...OURS_LOGGING,
] as const satisfies readonly OptionSpec[];

export type ControllerManagerConfig = ConfigOf<typeof CONTROLLER_MANAGER_OPTIONS>;

const CLOUD = 'no cloud provider is built in';
const RECYCLER = 'the Recycle reclaim policy (deprecated in Kubernetes) is not built';

/** The reference's options this controller manager does not act on (see DaemonFlagSet.notActedOn). */
export const CONTROLLER_MANAGER_NOT_ACTED_ON: Readonly<Record<string, string>> = {
  'cloud-config': CLOUD,
  'cloud-provider': CLOUD,
  'vendor-container-registry-config': CLOUD,
  'cluster-name': 'it only names cloud resources; ' + CLOUD,
  'concurrent-service-syncs': 'the service controller manages cloud load balancers; ' + CLOUD,
  'configure-cloud-routes': CLOUD,
  'route-reconciliation-period': CLOUD,
  'external-cloud-volume-plugin': CLOUD,
  'contention-profiling': 'Node.js has no lock contention profile',
  'flex-volume-plugin-dir': 'no FlexVolume plugins are loaded',
  'insecure-experimental-approve-all-kubelet-csrs-for-group': 'it has no effect in Kubernetes either (kept for compatibility)',
  'pv-recycler-increment-timeout-nfs': RECYCLER,
  'pv-recycler-minimum-timeout-hostpath': RECYCLER,
  'pv-recycler-minimum-timeout-nfs': RECYCLER,
  'pv-recycler-pod-template-filepath-hostpath': RECYCLER,
  'pv-recycler-pod-template-filepath-nfs': RECYCLER,
  'pv-recycler-timeout-increment-hostpath': RECYCLER,
};

export const CONTROLLER_MANAGER_FLAGS: DaemonFlagSet<ControllerManagerConfig> = {
  daemon: 'controller-manager',
  summary: 'Runs the core control loops that move cluster state toward the desired state.',
  options: CONTROLLER_MANAGER_OPTIONS,
  gates: CONTROL_PLANE_GATES,
  rules: CONTROLLER_MANAGER_RULES,
  groups: [G.generic, G.client, G.leader, G.controllers, G.nodes, G.volumes, G.autoscaler, G.certs, G.secure, G.insecure, G.gates, G.logging, G.debug, G.ours],
  notActedOn: CONTROLLER_MANAGER_NOT_ACTED_ON,
};

export function parseControllerManagerArgs(argv: readonly string[]): ParseResult<ControllerManagerConfig> {
  return parseDaemonArgs(CONTROLLER_MANAGER_FLAGS, argv);
}
