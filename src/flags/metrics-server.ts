/**
 * `corectl metrics-server` options: metrics-server's own (the metrics.k8s.io API from the node
 * agents' resource metrics), with --coreconfig in place of --kubeconfig and the few of ours that
 * register it with the aggregator (not in the reference: Kubernetes ships metrics-server apart).
 */
import { G, HELP_VERSION_GATES, OURS_LOGGING } from './common-options.js';
import { CONTROL_PLANE_GATES } from './feature-gates.js';
import { parseDaemonArgs, type CrossRule, type DaemonFlagSet, type ParseResult } from './parser.js';
import type { ConfigOf, OptionSpec } from './option-spec.js';

const M = { metrics: 'Metrics' } as const;

export const METRICS_SERVER_OPTIONS = [
  ...HELP_VERSION_GATES,
  { name: 'coreconfig', type: 'string', group: G.client, description: 'coreconfig file with the API server location and credentials (also presented to the node agents).' },
  { name: 'master', type: 'string', group: G.client, description: 'API server address; overrides the coreconfig file.' },
  { name: 'secure-port', type: 'int', default: '4443', group: G.secure, description: 'HTTPS port of the metrics API (0 picks a free one).' },
  { name: 'bind-address', type: 'string', default: '0.0.0.0', group: G.secure, description: 'Address the metrics API listens on.' },
  { name: 'tls-cert-file', type: 'string', group: G.secure, description: 'Serving certificate; default a self-signed one made at start (its certificate is the APIService\'s caBundle).' },
  { name: 'tls-private-key-file', type: 'string', group: G.secure, description: 'Key of --tls-cert-file.' },
  { name: 'metric-resolution', type: 'duration', default: '15s', group: M.metrics, description: 'How often the node agents are scraped; CPU usage is the rate between the last two scrapes.' },
  { name: 'kubelet-insecure-tls', type: 'bool', group: M.metrics, description: 'Do not verify the node agents\' serving certificates (else they are verified with the coreconfig\'s CA or --kubelet-certificate-authority).' },
  { name: 'kubelet-certificate-authority', type: 'string', group: M.metrics, description: 'CA file verifying the node agents\' serving certificates.' },
  { name: 'kubelet-preferred-address-types', type: 'stringSlice', default: 'InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP', group: M.metrics, description: 'Node address types to reach a node agent at, in order of preference.' },
  { name: 'advertise-address', type: 'string', group: G.ours, ours: true, description: 'IP the API server reaches this metrics server at (published in the kube-system/metrics-server Endpoints); default the first non-loopback IPv4 address.' },
  { name: 'register-apiservice', type: 'bool', default: 'true', group: G.ours, ours: true, description: 'Create the kube-system/metrics-server Service and Endpoints and the v1beta1.metrics.k8s.io APIService pointing at this server.' },
  ...OURS_LOGGING,
] as const satisfies readonly OptionSpec[];

export type MetricsServerConfig = ConfigOf<typeof METRICS_SERVER_OPTIONS>;

const RULES: CrossRule<MetricsServerConfig>[] = [
  { option: 'secure-port', check: (c) => (c.securePort < 0 || c.securePort > 65535 ? `--secure-port must be in [0,65535], got ${c.securePort}` : undefined) },
  { option: 'metric-resolution', check: (c) => (c.metricResolution < 1000 ? '--metric-resolution must be at least 1s' : undefined) },
  { option: 'tls-cert-file', check: (c) => (!!c.tlsCertFile !== !!c.tlsPrivateKeyFile ? '--tls-cert-file and --tls-private-key-file go together' : undefined) },
];

export const METRICS_SERVER_FLAGS: DaemonFlagSet<MetricsServerConfig> = {
  daemon: 'metrics-server',
  summary: 'Serves the metrics.k8s.io API (kubectl top, the autoscaler) from the node agents\' resource metrics, behind the API server\'s aggregation layer (not in the reference; metrics-server\'s options, --coreconfig for --kubeconfig).',
  options: METRICS_SERVER_OPTIONS,
  gates: CONTROL_PLANE_GATES,
  rules: RULES,
  groups: [G.generic, G.client, G.secure, M.metrics, G.gates, G.logging, G.ours],
};

export function parseMetricsServerArgs(argv: readonly string[]): ParseResult<MetricsServerConfig> {
  return parseDaemonArgs(METRICS_SERVER_FLAGS, argv);
}
