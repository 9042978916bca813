/**
 * Small builders for the bootstrap policy's data: rules, subjects, and the four RBAC kinds with
 * Kubernetes' bootstrap label (`kubernetes.io/bootstrapping: rbac-defaults`) and the annotation
 * `rbac.authorization.kubernetes.io/autoupdate: "true"` that lets reconciliation at start add
 * back what is missing.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { PolicyRule } from '../rule-match.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const RBAC_API_VERSION = `${RBAC_GROUP}/v1`;
export const BOOTSTRAP_LABEL = 'kubernetes.io/bootstrapping';
export const BOOTSTRAP_LABEL_VALUE = 'rbac-defaults';
export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';

export const READ = ['get', 'list', 'watch'] as const;
export const READ_WRITE = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] as const;
/** The write verbs only (edit's rules add them beside view's reads). */
export const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'] as const;

/** The groups rules name ('' is the core group). */
export const G = {
  core: '', apps: 'apps', authentication: 'authentication.k8s.io', authorization: 'authorization.k8s.io',
  autoscaling: 'autoscaling', batch: 'batch', certificates: 'certificates.k8s.io', coordination: 'coordination.k8s.io',
  discovery: 'discovery.k8s.io', events: 'events.k8s.io', extensions: 'extensions', networking: 'networking.k8s.io',
  node: 'node.k8s.io', policy: 'policy', rbac: RBAC_GROUP, storage: 'storage.k8s.io', admissionregistration: 'admissionregistration.k8s.io',
  resource: 'resource.k8s.io',
} as const;

type Strings = readonly string[];

/** A resource rule: verbs on resources of groups, optionally only the named objects. */
export function rule(verbs: Strings, groups: Strings, resources: Strings, resourceNames?: Strings): PolicyRule {
  const r: { verbs: string[]; apiGroups: string[]; resources: string[]; resourceNames?: string[] } = {
    verbs: [...verbs], apiGroups: [...groups], resources: [...resources],
  };
  if (resourceNames?.length) r.resourceNames = [...resourceNames];
  return r;
}

/** A non-resource rule: verbs on URL paths (a trailing `*` matches by prefix). */
export function urlRule(verbs: Strings, urls: Strings): PolicyRule {
  return { verbs: [...verbs], nonResourceURLs: [...urls] };
}

/** Kubernetes' eventsRule(): recording events through either events API. */
export function eventsRule(): PolicyRule {
  return rule(['create', 'update', 'patch'], [G.core, G.events], ['events']);
}

export interface Subject {
  kind: 'User' | 'Group' | 'ServiceAccount';
  name: string;
  apiGroup?: string;
  namespace?: string;
}

export const user = (name: string): Subject => ({ apiGroup: RBAC_GROUP, kind: 'User', name });
export const group = (name: string): Subject => ({ apiGroup: RBAC_GROUP, kind: 'Group', name });
export const serviceAccount = (namespace: string, name: string): Subject => ({ kind: 'ServiceAccount', name, namespace });

function meta(name: string, namespace: string | undefined, labels: Record<string, string> = {}): KubeObject['metadata'] {
  return {
    name, ...(namespace ? { namespace } : {}),
    labels: { [BOOTSTRAP_LABEL]: BOOTSTRAP_LABEL_VALUE, ...labels },
    annotations: { [AUTOUPDATE_ANNOTATION]: 'true' },
  };
}

export interface ClusterRoleOptions {
  /** More labels (aggregate-to-* ones). */
  labels?: Record<string, string>;
  /** An aggregating role: its rules are filled by the clusterrole-aggregation controller. */
  aggregateFrom?: Array<Record<string, string>>;
}

export function clusterRole(name: string, rules: PolicyRule[], opts: ClusterRoleOptions = {}): KubeObject {
  const o: KubeObject = { apiVersion: RBAC_API_VERSION, kind: 'ClusterRole', metadata: meta(name, undefined, opts.labels), rules };
  if (opts.aggregateFrom) o.aggregationRule = { clusterRoleSelectors: opts.aggregateFrom.map((matchLabels) => ({ matchLabels })) };
  return o;
}

export function role(namespace: string, name: string, rules: PolicyRule[]): KubeObject {
  return { apiVersion: RBAC_API_VERSION, kind: 'Role', metadata: meta(name, namespace), rules };
}

export function clusterRoleBinding(name: string, roleName: string, subjects: Subject[]): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION, kind: 'ClusterRoleBinding', metadata: meta(name, undefined),
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: roleName }, ...(subjects.length ? { subjects } : {}),
  };
}

export function roleBinding(namespace: string, name: string, roleName: string, subjects: Subject[]): KubeObject {
  return {
    apiVersion: RBAC_API_VERSION, kind: 'RoleBinding', metadata: meta(name, namespace),
    roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: roleName }, subjects,
  };
}
