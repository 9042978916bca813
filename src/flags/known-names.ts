/** Enumerations that several options check against (from the reference unless noted). */

/** The reference's 32 controller names (--controllers also takes OUR_CONTROLLER_NAMES). */
export const CONTROLLER_NAMES: readonly string[] = [
  'attachdetach', 'bootstrapsigner', 'clusterrole-aggregation', 'cronjob', 'csrapproving',
  'csrcleaner', 'csrsigning', 'daemonset', 'deployment', 'disruption', 'endpoint',
  'garbagecollector', 'horizontalpodautoscaling', 'job', 'namespace', 'nodeipam', 'nodelifecycle',
  'persistentvolume-binder', 'persistentvolume-expander', 'podgc', 'pv-protection', 'pvc-protection',
  'replicaset', 'replicationcontroller', 'resourcequota', 'route', 'service', 'serviceaccount',
  'serviceaccount-token', 'statefulset', 'tokencleaner', 'ttl',
];

/**
 * Controllers beyond the reference's list (ours; Kubernetes has them): accepted by
 * --controllers and on by default.
 */
export const OUR_CONTROLLER_NAMES = ['root-ca-cert-publisher', 'endpointslice'] as const;

/** Controllers that "*" does not switch on. */
export const CONTROLLERS_OFF_BY_DEFAULT: readonly string[] = ['bootstrapsigner', 'tokencleaner'];

/**
 * Resolves a --controllers list to the set of enabled controller names:
 * "name" enables, "-name" disables (wins over "*"), "*" enables every on-by-default controller.
 */
export function enabledControllers(list: readonly string[]): string[] {
  const star = list.includes('*');
  return [...CONTROLLER_NAMES, ...OUR_CONTROLLER_NAMES].filter((name) => {
    if (list.includes(`-${name}`)) return false;
    if (list.includes(name)) return true;
    return star && !CONTROLLERS_OFF_BY_DEFAULT.includes(name);
  });
}

export const ADMISSION_PLUGINS: readonly string[] = [
  'AlwaysAdmit', 'AlwaysDeny', 'AlwaysPullImages', 'DefaultStorageClass', 'DefaultTolerationSeconds',
  'DenyEscalatingExec', 'DenyExecOnPrivileged', 'EventRateLimit', 'ExtendedResourceToleration',
  'ImagePolicyWebhook', 'InitialResources', 'Initializers', 'LimitPodHardAntiAffinityTopology',
  'LimitRanger', 'MutatingAdmissionWebhook', 'NamespaceAutoProvision', 'NamespaceExists',
  'NamespaceLifecycle', 'NodeRestriction', 'OwnerReferencesPermissionEnforcement',
  'PersistentVolumeClaimResize', 'PersistentVolumeLabel', 'PodNodeSelector', 'PodPreset',
  'PodSecurity', 'PodSecurityPolicy', 'PodTolerationRestriction', 'Priority', 'ResourceQuota', 'SecurityContextDeny',
  'ServiceAccount', 'StorageObjectInUseProtection', 'ValidatingAdmissionWebhook',
];

export const APISERVER_AUTHORIZATION_MODES: readonly string[] = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'Webhook', 'RBAC', 'Node'];
export const NODEAGENT_AUTHORIZATION_MODES: readonly string[] = ['AlwaysAllow', 'Webhook'];

export const TLS_VERSIONS: readonly string[] = ['VersionTLS10', 'VersionTLS11', 'VersionTLS12', 'VersionTLS13'];

/** Node's tls.SecureContextOptions.minVersion for each --tls-min-version value. */
export const TLS_VERSION_TO_NODE: Readonly<Record<string, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'>> = {
  VersionTLS10: 'TLSv1', VersionTLS11: 'TLSv1.1', VersionTLS12: 'TLSv1.2', VersionTLS13: 'TLSv1.3',
};

/**
 * Go crypto/tls cipher-suite constant names (what --tls-cipher-suites takes) mapped to the
 * OpenSSL names Node's `ciphers` option understands. TLS 1.3 suites keep their names.
 */
export const TLS_CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
};

/** Eviction signals the node agent understands. */
export const EVICTION_SIGNALS: readonly string[] = [
  'memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available',
];
