/**
 * Escalation prevention on the four RBAC resources, as Kubernetes' RBAC storage does it (the
 * policybased storage of pkg/registry/rbac): not a selectable admission plugin but a validating
 * step the chain always runs for creates and updates (patches included) of roles, clusterroles,
 * rolebindings and clusterrolebindings, and for nothing else.
 *
 *  - Role / ClusterRole: allowed with the `escalate` verb on it (asked as Kubernetes asks: the
 *    request's name, '' on create), else only if the user already holds every rule it grants
 *    in its namespace. Setting or changing a ClusterRole's aggregationRule needs full authority.
 *  - RoleBinding / ClusterRoleBinding: allowed with the `bind` verb on the referenced role
 *    (resourceNames: the role's name; in the binding's namespace), else only if the user
 *    already holds every rule of that role.
 *  - system:masters and the server's own writes (no client request) pass; an update that
 *    changes only what the garbage collector changes (ownerReferences, finalizers) passes.
 *
 * Refusals are 403 Forbidden worded as Kubernetes: `clusterrolebindings.rbac.authorization.k8s.io
 * "x" is forbidden: user "u" (groups=["g"]) is attempting to grant RBAC permissions not currently
 * held:\n{...}`. The user's rules come from the store's RBAC index (the authorizer's); a
 * referenced role the index does not know yet is read from the store.
 */
import { errors } from '../../../api/meta/status.js';
import { deepEqual } from '../../../api/patch/json-value.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../../auth/authorizer.js';
import { bindAttributes, escalateAttributes, escalationAllowed, escalationError } from '../../../auth/authorizers/rbac/escalation.js';
import { compileRules, RBAC_GROUP, rbacIndexFor, type RbacIndex, type RoleRef } from '../../../auth/authorizers/rbac/policy-index.js';
import type { PolicyRule } from '../../../auth/authorizers/rbac/rule-match.js';
import type { UserInfo } from '../../../auth/user.js';
import { isStorageError } from '../../../storage/errors.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import type { AdmissionAttributes, AdmissionOperation, AdmissionPlugin } from './types.js';

const RESOURCES = new Set(['roles', 'clusterroles', 'rolebindings', 'clusterrolebindings']);
const FULL_AUTHORITY: readonly PolicyRule[] = [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }, { verbs: ['*'], nonResourceURLs: ['*'] }];

export interface RbacEscalationDeps {
  readonly store: ObjectStore;
  /** The API server's whole authorization chain (escalate and bind are asked of it). */
  readonly authorizer: Authorizer;
}

const rec = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? v as Record<string, unknown> : {});

/** Whether an update changes only ownerReferences and finalizers (Kubernetes' IsOnlyMutatingGCFields). */
function onlyGcFields(obj: KubeObject | undefined, old: KubeObject | undefined): boolean {
  if (!obj || !old) return false;
  const strip = (o: KubeObject): KubeObject => {
    const { ownerReferences: _o, finalizers: _f, managedFields: _m, resourceVersion: _r, generation: _g, ...meta } = o.metadata ?? {};
    return { ...o, metadata: meta };
  };
  return deepEqual(strip(obj), strip(old));
}

function hasAggregationRule(o: KubeObject | undefined): boolean {
  const selectors = rec(o?.aggregationRule).clusterRoleSelectors;
  return Array.isArray(selectors) && selectors.length > 0;
}

async function allowed(authorizer: Authorizer, attrs: AuthorizationAttributes | undefined): Promise<boolean> {
  if (!attrs) return false;
  const r: AuthorizationResult = await authorizer.authorize(attrs);
  return r.decision === 'allow';
}

export function rbacEscalationCheck(deps: RbacEscalationDeps): AdmissionPlugin {
  let index: RbacIndex | undefined;
  const synced = async (): Promise<RbacIndex> => {
    index ??= rbacIndexFor(deps.store);
    if (!index.synced) await index.ready;
    return index;
  };

  /** A role's rules from the index, else from the store (just created); NotFound when neither has it. */
  async function refRules(idx: RbacIndex, ref: RoleRef, namespace: string): Promise<readonly PolicyRule[]> {
    const known = idx.roleRefRules(ref, namespace);
    if (!(known instanceof Error)) return known;
    const resource = ref.kind === 'ClusterRole' ? 'clusterroles' : 'roles';
    try {
      const o = await deps.store.get({ group: RBAC_GROUP, resource, namespace: resource === 'roles' ? namespace : '', name: ref.name });
      return compileRules(o);
    } catch (e) {
      if (isStorageError(e, 'KeyNotFound')) throw errors.notFound({ group: RBAC_GROUP, resource, name: ref.name });
      throw e;
    }
  }

  async function checkRole(a: AdmissionAttributes, user: UserInfo, resource: 'roles' | 'clusterroles'): Promise<void> {
    const obj = a.object!;
    const name = obj.metadata?.name ?? a.name;
    if (await allowed(deps.authorizer, escalateAttributes(user, resource, a.namespace, a.operation === 'CREATE' ? '' : a.name))) return;
    const idx = await synced();
    const why = escalationError(idx, user, a.namespace, compileRules(obj));
    if (why) throw errors.admissionForbidden({ group: RBAC_GROUP, resource, name }, why);
    if (resource === 'clusterroles' && (hasAggregationRule(obj) || hasAggregationRule(a.oldObject))
      && escalationError(idx, user, '', FULL_AUTHORITY) !== undefined) {
      throw errors.admissionForbidden({ group: RBAC_GROUP, resource, name }, 'must have cluster-admin privileges to use the aggregationRule');
    }
  }

  async function checkBinding(a: AdmissionAttributes, user: UserInfo, resource: 'rolebindings' | 'clusterrolebindings'): Promise<void> {
    const obj = a.object!;
    const ref = rec(obj.roleRef);
    const roleRef: RoleRef = { kind: typeof ref.kind === 'string' ? ref.kind : '', name: typeof ref.name === 'string' ? ref.name : '' };
    if (await allowed(deps.authorizer, bindAttributes(user, roleRef, a.namespace))) return;
    const idx = await synced();
    const why = escalationError(idx, user, a.namespace, await refRules(idx, roleRef, a.namespace));
    if (why) throw errors.admissionForbidden({ group: RBAC_GROUP, resource, name: obj.metadata?.name ?? a.name }, why);
  }

  return {
    name: 'RBACEscalation',
    handles(operation: AdmissionOperation, def: ResourceDefinition, subresource: string): boolean {
      return subresource === '' && (operation === 'CREATE' || operation === 'UPDATE') && def.group === RBAC_GROUP && RESOURCES.has(def.plural);
    },
    validate(a: AdmissionAttributes): Promise<void> | void {
      const user = a.request?.user;
      if (!user || !a.object || escalationAllowed(user)) return;
      if (a.operation === 'UPDATE' && onlyGcFields(a.object, a.oldObject)) return;
      const plural = a.def.plural;
      if (plural === 'roles' || plural === 'clusterroles') return checkRole(a, user, plural);
      if (plural === 'rolebindings' || plural === 'clusterrolebindings') return checkBinding(a, user, plural);
    },
  };
}
