/**
 * The API server's options (reference: "API server: options"), ours at the end.
 * Defaults are command-line text; absent means the type's zero value (the reference's '-').
 */
import { G, HELP_VERSION_GATES, OURS_LOGGING } from './common-options.js';
import { ADMISSION_PLUGINS, APISERVER_AUTHORIZATION_MODES, TLS_VERSIONS } from './known-names.js';
import { CONTROL_PLANE_GATES } from './feature-gates.js';
import { parseDaemonArgs, type DaemonFlagSet, type ParseResult } from './parser.js';
import type { ConfigOf, OptionSpec } from './option-spec.js';
import { APISERVER_RULES } from './rules-apiserver.js';

/** The reference's per-group preferred storage versions (group names without domain suffix). */
export const DEFAULT_STORAGE_VERSIONS = 'admission/v1beta1,admissionregistration/v1beta1,apps/v1,authentication/v1,' +
  'authorization/v1,autoscaling/v1,batch/v1,certificates/v1beta1,componentconfig/v1alpha1,events/v1beta1,' +
  'extensions/v1beta1,imagepolicy/v1alpha1,deploytool/v1alpha1,networking/v1,policy/v1beta1,rbac/v1,' +
  'scheduling/v1alpha1,settings/v1alpha1,storage/v1,v1';

const AUDIT_BATCH = (backend: 'log' | 'webhook', throttleDefault?: 'true') => [
  { name: `audit-${backend}-batch-buffer-size`, type: 'int', default: '10000', group: G.audit, description: `Events buffered before batching (${backend} backend, batch mode).` },
  { name: `audit-${backend}-batch-max-size`, type: 'int', default: '400', group: G.audit, description: `Largest batch (${backend} backend, batch mode).` },
  { name: `audit-${backend}-batch-max-wait`, type: 'duration', default: '30s', group: G.audit, description: `Longest wait before an unfilled batch is written (${backend} backend).` },
  { name: `audit-${backend}-batch-throttle-burst`, type: 'int', default: '15', group: G.audit, description: `Batches allowed at once when the throttle was idle (${backend} backend).` },
  { name: `audit-${backend}-batch-throttle-enable`, type: 'bool', default: throttleDefault, group: G.audit, description: `Throttle batch writes (${backend} backend).` },
  { name: `audit-${backend}-batch-throttle-qps`, type: 'float32', default: '10', group: G.audit, description: `Average batches per second when throttled (${backend} backend).` },
] as const;

export const APISERVER_OPTIONS = [
  ...HELP_VERSION_GATES,
  { name: 'admission-control-config-file', type: 'string', group: G.admission, description: 'File configuring admission plugins.' },
  { name: 'advertise-address', type: 'ip', group: G.generic, description: 'Address announced to cluster members; falls back to --bind-address, then the default interface.' },
  { name: 'allow-privileged', type: 'bool', default: 'false', group: G.generic, description: 'Let containers run privileged.' },
  { name: 'anonymous-auth', type: 'bool', default: 'true', group: G.authn, description: 'Treat requests no authenticator rejected as system:anonymous.' },
  { name: 'apiserver-count', type: 'int', default: '1', group: G.generic, description: 'How many API servers run in the cluster (positive).' },
  ...AUDIT_BATCH('log'),
  { name: 'audit-log-format', type: 'string', default: 'json', oneOf: ['json', 'legacy'], group: G.audit, description: 'json (structured) or legacy (one text line per event); needs gate AdvancedAuditing.' },
  { name: 'audit-log-maxage', type: 'int', group: G.audit, description: 'Days old audit files are kept (by the timestamp in their names).' },
  { name: 'audit-log-maxbackup', type: 'int', group: G.audit, description: 'How many old audit files are kept.' },
  { name: 'audit-log-maxsize', type: 'int', group: G.audit, description: 'Size in megabytes at which the audit file rotates.' },
  { name: 'audit-log-mode', type: 'string', default: 'blocking', oneOf: ['blocking', 'batch'], group: G.audit, description: 'blocking: responses wait for the write; batch: buffered, asynchronous.' },
  { name: 'audit-log-path', type: 'string', group: G.audit, description: 'Audit every request to this file; "-" means standard output.' },
  { name: 'audit-policy-file', type: 'string', group: G.audit, description: 'Audit policy; required for auditing under AdvancedAuditing.' },
  ...AUDIT_BATCH('webhook', 'true'),
  { name: 'audit-webhook-config-file', type: 'string', group: G.audit, description: 'coreconfig-format file naming the audit webhook; needs gate AdvancedAuditing.' },
  { name: 'audit-webhook-initial-backoff', type: 'duration', default: '10s', group: G.audit, description: 'Wait before the first retry of a failed webhook request.' },
  { name: 'audit-webhook-mode', type: 'string', default: 'batch', oneOf: ['blocking', 'batch'], group: G.audit, description: 'blocking or batch, as for the log backend.' },
  { name: 'authentication-token-webhook-cache-ttl', type: 'duration', default: '2m0s', group: G.authn, description: 'How long token-webhook answers are cached.' },
  { name: 'authentication-token-webhook-config-file', type: 'string', group: G.authn, description: 'coreconfig-format file of a remote bearer-token authenticator.' },
  { name: 'authorization-mode', type: 'string', default: 'AlwaysAllow', listOf: APISERVER_AUTHORIZATION_MODES, group: G.authz, description: 'Comma-separated, ordered authorizers: AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node.' },
  { name: 'authorization-policy-file', type: 'string', group: G.authz, description: 'CSV policy for mode ABAC.' },
  { name: 'authorization-webhook-cache-authorized-ttl', type: 'duration', default: '5m0s', group: G.authz, description: 'How long "allowed" webhook answers are cached.' },
  { name: 'authorization-webhook-cache-unauthorized-ttl', type: 'duration', default: '30s', group: G.authz, description: 'How long "denied" webhook answers are cached.' },
  { name: 'authorization-webhook-config-file', type: 'string', group: G.authz, description: 'coreconfig-format file for mode Webhook.' },
  { name: 'vendor-container-registry-config', type: 'string', group: G.generic, description: 'A cloud vendor\'s container-registry configuration file.' },
  { name: 'basic-auth-file', type: 'string', group: G.authn, description: 'File of users for HTTP basic authentication on the secure port.' },
  { name: 'bind-address', type: 'ip', default: '0.0.0.0', group: G.secure, description: 'Listen address of --secure-port; 0.0.0.0 or :: for all interfaces.' },
  { name: 'cert-dir', type: 'string', default: '/var/run/core', group: G.secure, description: 'Where the generated TLS pair lives; unused when cert and key files are given.' },
  { name: 'client-ca-file', type: 'string', group: G.authn, description: 'CA bundle; a client certificate it signed authenticates as its CommonName.' },
  { name: 'cloud-config', type: 'string', group: G.generic, description: 'Cloud-provider configuration file.' },
  { name: 'cloud-provider', type: 'string', group: G.generic, description: 'Cloud provider; empty for none.' },
  { name: 'contention-profiling', type: 'bool', group: G.debug, description: 'Also profile lock contention (needs --profiling).' },
  { name: 'cors-allowed-origins', type: 'stringSlice', group: G.generic, description: 'Allowed CORS origins (regular expressions); empty leaves CORS off.' },
  { name: 'default-watch-cache-size', type: 'int', default: '100', group: G.storage, description: 'Watch cache size for resources without their own; 0 disables it for them.' },
  { name: 'delete-collection-workers', type: 'int', default: '1', group: G.storage, description: 'Workers deleting collections (namespace cleanup).' },
  { name: 'deserialization-cache-size', type: 'int', group: G.storage, description: 'Decoded JSON objects kept in memory.' },
  { name: 'disable-admission-plugins', type: 'stringSlice', oneOf: ADMISSION_PLUGINS, group: G.admission, description: 'Default-on admission plugins to switch off (order irrelevant).' },
  { name: 'enable-admission-plugins', type: 'stringSlice', oneOf: ADMISSION_PLUGINS, group: G.admission, description: 'Admission plugins to switch on besides the defaults (order irrelevant).' },
  { name: 'enable-aggregator-routing', type: 'bool', group: G.generic, description: 'Aggregator proxies to endpoint IPs instead of the service IP.' },
  { name: 'enable-bootstrap-token-auth', type: 'bool', group: G.authn, description: 'Accept bootstrap-token secrets in the system namespace for TLS bootstrapping.' },
  { name: 'enable-garbage-collector', type: 'bool', default: 'true', group: G.generic, description: 'Generic garbage collection; keep equal to the controller manager\'s setting.' },
  { name: 'enable-logs-handler', type: 'bool', default: 'true', group: G.generic, description: 'Serve the server\'s logs at /logs.' },
  { name: 'enable-api-docs-ui', type: 'bool', group: G.generic, description: 'Serve an API documentation UI at /api-docs-ui.' },
  { name: 'endpoint-reconciler-type', type: 'string', default: 'master-count', oneOf: ['master-count', 'lease', 'none'], group: G.generic, description: 'How the master service endpoints are kept: master-count, lease or none.' },
  { name: 'kvstore-cafile', type: 'string', group: G.storage, description: 'CA file for TLS to the key-value store.' },
  { name: 'kvstore-certfile', type: 'string', group: G.storage, description: 'Client certificate for TLS to the key-value store.' },
  { name: 'kvstore-compaction-interval', type: 'duration', default: '5m0s', group: G.storage, description: 'How often old revisions are compacted; 0 never.' },
  { name: 'kvstore-count-metric-poll-period', type: 'duration', default: '1m0s', group: G.storage, description: 'How often object counts per resource are refreshed; 0 never.' },
  { name: 'kvstore-keyfile', type: 'string', group: G.storage, description: 'Client key for TLS to the key-value store.' },
  { name: 'kvstore-prefix', type: 'string', default: '/registry', group: G.storage, description: 'Key prefix of every stored object.' },
  { name: 'kvstore-servers', type: 'stringSlice', group: G.storage, description: 'Key-value store servers (scheme://ip:port); empty uses the embedded store in --data-dir.' },
  { name: 'kvstore-servers-overrides', type: 'stringSlice', syntax: 'kvstore-overrides', group: G.storage, description: 'Per-resource servers: group/resource#http://ip:port;http://ip:port.' },
  { name: 'event-ttl', type: 'duration', default: '1h0m0s', group: G.storage, description: 'How long events are kept.' },
  { name: 'experimental-encryption-provider-config', type: 'string', group: G.storage, description: 'Encryption-at-rest provider configuration file.' },
  { name: 'external-hostname', type: 'string', group: G.generic, description: 'Host name used in externally visible URLs.' },
  { name: 'http2-max-streams-per-connection', type: 'int', group: G.secure, description: 'HTTP/2 streams offered per connection; 0 uses the library default.' },
  { name: 'nodeagent-certificate-authority', type: 'string', group: G.nodeagentClient, description: 'CA file for verifying node agents.' },
  { name: 'nodeagent-client-certificate', type: 'string', group: G.nodeagentClient, description: 'Client certificate for TLS to node agents.' },
  { name: 'nodeagent-client-key', type: 'string', group: G.nodeagentClient, description: 'Client key for TLS to node agents.' },
  { name: 'nodeagent-https', type: 'bool', default: 'true', group: G.nodeagentClient, description: 'Talk to node agents over HTTPS.' },
  { name: 'nodeagent-preferred-address-types', type: 'stringSlice', default: 'Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP', group: G.nodeagentClient, description: 'Node address types to try, in order, when contacting node agents.' },
  { name: 'nodeagent-read-only-port', type: 'uint', default: '10255', deprecated: 'it will be removed; node agents are reached on their secure port', group: G.nodeagentClient, description: 'Node agent read-only port.' },
  { name: 'nodeagent-timeout', type: 'duration', default: '5s', group: G.nodeagentClient, description: 'Time limit of calls to node agents.' },
  { name: 'core-service-node-port', type: 'int', group: G.generic, description: 'Non-zero makes the master service a NodePort service on this port.' },
  { name: 'master-service-namespace', type: 'string', default: 'default', deprecated: 'it will be removed; the master service lives in "default"', group: G.generic, description: 'Namespace the master services are injected from.' },
  { name: 'max-connection-bytes-per-sec', type: 'int', group: G.generic, description: 'Non-zero throttles each long-running connection to this many bytes per second.' },
  { name: 'max-mutating-requests-inflight', type: 'int', default: '200', group: G.generic, description: 'Concurrent mutating requests before rejecting; 0 unlimited.' },
  { name: 'max-requests-inflight', type: 'int', default: '400', group: G.generic, description: 'Concurrent read requests before rejecting; 0 unlimited.' },
  { name: 'min-request-timeout', type: 'int', default: '1800', group: G.generic, description: 'Seconds a watch stays open at least (randomised above this).' },
  { name: 'oidc-ca-file', type: 'string', group: G.authn, description: 'CA for the OpenID issuer; default the host roots.' },
  { name: 'oidc-client-id', type: 'string', group: G.authn, description: 'OpenID client ID; needed with --oidc-issuer-url.' },
  { name: 'oidc-groups-claim', type: 'string', group: G.authn, description: 'Claim carrying the user\'s groups.' },
  { name: 'oidc-groups-prefix', type: 'string', group: G.authn, description: 'Prefix added to every group name.' },
  { name: 'oidc-issuer-url', type: 'string', group: G.authn, description: 'HTTPS URL of the OpenID issuer; enables OIDC tokens.' },
  { name: 'oidc-signing-algs', type: 'stringSlice', default: 'RS256', group: G.authn, description: 'JOSE algorithms accepted in the token\'s alg header.' },
  { name: 'oidc-username-claim', type: 'string', default: 'sub', group: G.authn, description: 'Claim used as the user name.' },
  { name: 'oidc-username-prefix', type: 'string', group: G.authn, description: 'Prefix of user names; "-" for none; default the issuer URL except for email.' },
  { name: 'profiling', type: 'bool', default: 'true', group: G.debug, description: 'Serve profiles at /debug/pprof/.' },
  { name: 'proxy-client-cert-file', type: 'string', group: G.authn, description: 'Certificate the server presents when proxying to extension servers and webhooks.' },
  { name: 'proxy-client-key-file', type: 'string', group: G.authn, description: 'Key of --proxy-client-cert-file.' },
  { name: 'repair-malformed-updates', type: 'bool', default: 'true', group: G.generic, description: 'Repair update requests that would fail validation (for example an empty UID).' },
  { name: 'request-timeout', type: 'duration', default: '1m0s', group: G.generic, description: 'Default request time limit.' },
  { name: 'requestheader-allowed-names', type: 'stringSlice', group: G.authn, description: 'Client certificate common names allowed to assert users in headers; empty: any.' },
  { name: 'requestheader-client-ca-file', type: 'string', group: G.authn, description: 'CA that must sign a proxy\'s client certificate before its headers are trusted.' },
  { name: 'requestheader-extra-headers-prefix', type: 'stringSlice', group: G.authn, description: 'Header prefixes carrying extra user attributes (X-Remote-Extra-).' },
  { name: 'requestheader-group-headers', type: 'stringSlice', group: G.authn, description: 'Headers carrying groups (X-Remote-Group).' },
  { name: 'requestheader-username-headers', type: 'stringSlice', group: G.authn, description: 'Headers carrying the user name (X-Remote-User).' },
  { name: 'runtime-config', type: 'mapStringString', bareKeys: true, syntax: 'runtime-config', group: G.api, description: 'Switch APIs: api/all, api/legacy, <version>, <group>/<version> or <group>/<version>/<resource> = true|false.' },
  { name: 'secure-port', type: 'int', default: '6443', group: G.secure, description: 'HTTPS port; 0 switches it off.' },
  { name: 'service-account-api-audiences', type: 'stringSlice', group: G.authn, description: 'Audiences a service-account token must name one of.' },
  { name: 'service-account-issuer', type: 'string', group: G.authn, description: 'Issuer put into the iss claim of issued tokens.' },
  { name: 'service-account-key-file', type: 'stringArray', group: G.authn, description: 'PEM keys verifying service-account tokens (repeatable); default --tls-private-key-file.' },
  { name: 'service-account-lookup', type: 'bool', default: 'true', group: G.authn, description: 'Check that a service-account token still exists in the store.' },
  { name: 'service-account-signing-key-file', type: 'string', group: G.authn, description: 'Private key signing issued tokens; needs gate TokenRequest.' },
  { name: 'service-cluster-ip-range', type: 'ipNet', default: '10.0.0.0/24', group: G.generic, description: 'CIDR service cluster IPs come from; must not overlap pod ranges.' },
  { name: 'service-node-port-range', type: 'portRange', default: '30000-32767', group: G.generic, description: 'NodePort range, inclusive at both ends.' },
  { name: 'storage-backend', type: 'string', oneOf: ['kvstore3', 'kvstore2'], group: G.storage, description: 'Store protocol: kvstore3 (default when empty) or kvstore2 (accepted here, refused by the storage layer).' },
  { name: 'storage-media-type', type: 'string', default: 'application/vnd.kubernetes.protobuf', group: G.storage, description: 'Media type objects are stored in.' },
  { name: 'storage-versions', type: 'string', default: DEFAULT_STORAGE_VERSIONS, syntax: 'storage-versions', group: G.storage, description: 'group/version per group to store in (version alone for core); group1=group2/version for moved objects.' },
  { name: 'target-ram-mb', type: 'int', group: G.storage, description: 'Memory budget in MB used to size caches.' },
  { name: 'tls-cert-file', type: 'string', group: G.secure, description: 'Serving certificate (chain appended); a self-signed pair is made in --cert-dir when absent.' },
  { name: 'tls-cipher-suites', type: 'stringSlice', syntax: 'tls-cipher-suites', group: G.secure, description: 'Allowed cipher suites, Go crypto/tls names; default the library\'s list.' },
  { name: 'tls-min-version', type: 'string', oneOf: TLS_VERSIONS, group: G.secure, description: 'Lowest TLS version: VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13.' },
  { name: 'tls-private-key-file', type: 'string', group: G.secure, description: 'Key of --tls-cert-file.' },
  { name: 'tls-sni-cert-key', type: 'namedCertKey', group: G.secure, description: 'cert,key[:name,*.name]; per-SNI serving pair; repeatable.' },
  { name: 'token-auth-file', type: 'string', group: G.authn, description: 'Static bearer-token file.' },
  { name: 'watch-cache', type: 'bool', default: 'true', group: G.storage, description: 'Serve watches from the watch cache.' },
  { name: 'watch-cache-sizes', type: 'stringSlice', syntax: 'watch-cache-sizes', group: G.storage, description: 'Per-resource cache sizes: resource[.group]#size.' },
  ...OURS_LOGGING,
  { name: 'data-dir', type: 'string', default: '/var/lib/core', group: G.ours, ours: true, description: 'Directory of the embedded LevelDB store (used when --kvstore-servers is empty).' },
  { name: 'logs-dir', type: 'string', default: '/var/log', group: G.ours, ours: true, description: 'Directory /logs/ lists and serves (with --enable-logs-handler); the daemon itself logs to stderr, so point it where that output is kept (corectl server: <data-dir>/logs).' },
  { name: 'nodeagent-allow-loopback', type: 'bool', default: 'false', group: G.ours, ours: true, description: 'Also connect to node agents at loopback addresses (a cluster on one machine\'s loopback interface); link-local and unspecified node addresses are always refused.' },
] as const satisfies readonly OptionSpec[];

export type ApiserverConfig = ConfigOf<typeof APISERVER_OPTIONS>;

const CLOUD = 'no cloud provider is built in';

/** The reference's options this API server does not act on yet (see DaemonFlagSet.notActedOn). */
export const APISERVER_NOT_ACTED_ON: Readonly<Record<string, string>> = {
  'cloud-config': CLOUD,
  'cloud-provider': CLOUD,
  'vendor-container-registry-config': CLOUD,
  'contention-profiling': 'Node.js has no lock contention profile',
  'deserialization-cache-size': 'there is no deserialization cache: reads are served from the stored bytes',

  'external-hostname': 'no externalized URLs are generated',
  'master-service-namespace': 'the kubernetes service always lives in default',
  'nodeagent-read-only-port': 'the API server never calls the node agent\'s read-only port',
  'storage-media-type': 'objects are stored as JSON',
  'target-ram-mb': 'cache sizes do not depend on it',

};

export const APISERVER_FLAGS: DaemonFlagSet<ApiserverConfig> = {
  daemon: 'apiserver',
  summary: 'Validates and stores API objects and serves the REST API that every other component uses.',
  options: APISERVER_OPTIONS,
  gates: CONTROL_PLANE_GATES,
  rules: APISERVER_RULES,
  groups: [G.generic, G.secure, G.storage, G.authn, G.authz, G.admission, G.audit, G.api, G.nodeagentClient, G.gates, G.logging, G.debug, G.ours],
  notActedOn: APISERVER_NOT_ACTED_ON,
};

export function parseApiserverArgs(argv: readonly string[]): ParseResult<ApiserverConfig> {
  return parseDaemonArgs(APISERVER_FLAGS, argv);
}
