/**
 * Storage key layout of Kubernetes objects.
 *
 * Rule: `<prefix>/<segment>/<namespace>/<name>` for namespaced objects and
 * `<prefix>/<segment>/<name>` for cluster-scoped ones, where <segment> is
 *  - the plural alone for built-in groups: core (''), the dot-less legacy groups (apps, batch,
 *    autoscaling, policy, extensions) and the `*.k8s.io` groups — '/registry/deployments/ns/x',
 *    '/registry/horizontalpodautoscalers/ns/x', '/registry/clusterroles/x';
 *  - `<group>/<plural>` for every other group (custom resources, aggregated APIs) and for
 *    apiextensions.k8s.io and apiregistration.k8s.io, which Kubernetes itself stores that way
 *    ('/registry/apiextensions.k8s.io/customresourcedefinitions/x', '/registry/example.com/widgets/ns/x').
 * Plus the historical renames Kubernetes kept for compatibility of existing etcd data:
 * nodes → 'minions', services → 'services/specs', endpoints → 'services/endpoints',
 * ingresses → 'ingress', podsecuritypolicies → 'podsecuritypolicy'.
 * Keeping this layout means an etcd written by us reads like one written by kube-apiserver.
 */
import type { ObjectRef } from './object-store-types.js';
import { StorageError } from './errors.js';

const RENAMES: Readonly<Record<string, string>> = {
  '/nodes': 'minions',
  '/services': 'services/specs',
  '/endpoints': 'services/endpoints',
  'networking.k8s.io/ingresses': 'ingress',
  'extensions/ingresses': 'ingress',
  'policy/podsecuritypolicies': 'podsecuritypolicy',
  'extensions/podsecuritypolicies': 'podsecuritypolicy',
};

const GROUP_PREFIXED_BUILTINS = new Set(['apiextensions.k8s.io', 'apiregistration.k8s.io']);

function isBuiltinGroup(group: string): boolean {
  if (group === '') return true;
  if (GROUP_PREFIXED_BUILTINS.has(group)) return false;
  return !group.includes('.') || group.endsWith('.k8s.io');
}

/** The path segment(s) of a resource under the prefix, without slashes around it. */
export function resourceSegment(group: string, resource: string): string {
  const renamed = RENAMES[`${group}/${resource}`];
  if (renamed !== undefined) return renamed;
  return isBuiltinGroup(group) ? resource : `${group}/${resource}`;
}

/** Normalizes --kvstore-prefix: leading slash, no trailing slash ('/registry'). */
export function normalizePrefix(prefix: string): string {
  let p = prefix.trim();
  if (!p.startsWith('/')) p = '/' + p;
  while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p === '/' ? '' : p;
}

/** `<prefix>/<segment>/` — every object of the resource lives under it. */
export function resourcePrefix(prefix: string, group: string, resource: string): string {
  return `${prefix}/${resourceSegment(group, resource)}/`;
}

/** The key range to list: one namespace ('<...>/ns/') or the whole resource. */
export function listPrefix(prefix: string, group: string, resource: string, namespace: string): string {
  return listPrefixUnder(resourcePrefix(prefix, group, resource), namespace);
}

/** listPrefix() given the resource's prefix (resourcePrefix()), which callers may keep per resource. */
export function listPrefixUnder(base: string, namespace: string): string {
  return namespace ? `${base}${checkPart(namespace, 'namespace')}/` : base;
}

export function objectKey(prefix: string, ref: ObjectRef): string {
  return objectKeyUnder(resourcePrefix(prefix, ref.group, ref.resource), ref.namespace, ref.name);
}

/** objectKey() given the resource's prefix (resourcePrefix()), which callers may keep per resource. */
export function objectKeyUnder(base: string, namespace: string | undefined, name: string): string {
  const n = checkPart(name, 'name');
  return namespace ? base + checkPart(namespace, 'namespace') + '/' + n : base + n;
}

function checkPart(part: string, what: string): string {
  // Names are validated by the API layer; this guards the key space against traversal and
  // prefix confusion ('a/b' would read as namespace 'a').
  if (part === '' || part === '.' || part === '..' || part.includes('/')) {
    throw new StorageError('InvalidArgument', `invalid ${what} ${JSON.stringify(part)} for a storage key`);
  }
  return part;
}
