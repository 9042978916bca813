/**
 * OwnerReferencesPermissionEnforcement (validating, CREATE and UPDATE), as Kubernetes' gc
 * admission plugin: ownerReferences are what the garbage collector deletes by, so
 *
 *  - changing an object's ownerReferences on update needs `delete` on the object (its
 *    resource and subresource as written); a create may set them freely (the creator could
 *    have not created it);
 *  - setting blockOwnerDeletion=true on a reference (new, or false/unset before) needs
 *    `update` on the owner's `finalizers` subresource (the owner's resource from its
 *    apiVersion and kind; namespaced owners in the object's namespace), since it holds up the
 *    owner's foreground deletion.
 *
 * Refusals are 403 in Kubernetes' words, including its `<reason>, <error>` tail. pods/status
 * is exempt (its strategy keeps ownerReferences). Writes the server makes itself (no client
 * request) are not checked.
 */
import { findByKind } from '../../../api/resources/registry.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { AuthorizationAttributes, AuthorizationResult, Authorizer } from '../../../auth/authorizer.js';
import { errors } from '../../../api/meta/status.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';

export const OWNER_REFERENCES_PERMISSION_ENFORCEMENT = 'OwnerReferencesPermissionEnforcement';

interface OwnerRef {
  apiVersion?: unknown; kind?: unknown; name?: unknown; uid?: unknown; controller?: unknown; blockOwnerDeletion?: unknown;
}

function refsOf(o: KubeObject | undefined): OwnerRef[] {
  const refs = (o?.metadata as { ownerReferences?: unknown } | undefined)?.ownerReferences;
  return Array.isArray(refs) ? refs.filter((r): r is OwnerRef => typeof r === 'object' && r !== null) : [];
}

/** Field by field, as Go compares the struct (an unset pointer differs from false). */
function sameRef(a: OwnerRef, b: OwnerRef): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name && a.uid === b.uid
    && a.controller === b.controller && a.blockOwnerDeletion === b.blockOwnerDeletion;
}

export function isChangingOwnerReferences(object: KubeObject | undefined, old: KubeObject | undefined): boolean {
  const now = refsOf(object);
  if (!old) return now.length > 0;
  const before = refsOf(old);
  if (now.length !== before.length) return true;
  return now.some((r, i) => !sameRef(r, before[i]!));
}

/** References that block owner deletion now and did not before (matched by uid). */
export function newBlockingRefs(object: KubeObject | undefined, old: KubeObject | undefined): OwnerRef[] {
  const blocking = refsOf(object).filter((r) => r.blockOwnerDeletion === true);
  if (!blocking.length || !old) return blocking;
  const before = new Map(refsOf(old).map((r) => [r.uid, r]));
  return blocking.filter((r) => before.get(r.uid)?.blockOwnerDeletion !== true);
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Go prints a nil error as `<nil>`; Kubernetes' messages end with it. */
const tail = (r: AuthorizationResult): string => `${r.reason}, <nil>`;

export function ownerReferencesPermissionEnforcement(ctx: AdmissionContext): AdmissionPlugin {
  const authorizer = ctx.authorizer;
  if (!authorizer) throw new Error(`${OWNER_REFERENCES_PERMISSION_ENFORCEMENT}: missing authorizer`);
  return {
    name: OWNER_REFERENCES_PERMISSION_ENFORCEMENT,
    handles: (operation, def, subresource) => (operation === 'CREATE' || operation === 'UPDATE')
      && !(def.group === '' && def.plural === 'pods' && subresource === 'status'),
    validate(a) {
      const user = a.request?.user;
      if (!user || !isChangingOwnerReferences(a.object, a.oldObject)) return undefined;
      return check(authorizer, a);
    },
  };
}

async function check(authorizer: Authorizer, a: AdmissionAttributes): Promise<void> {
  const user = a.request!.user;
  const version = a.request!.version;
  const forbid = (why: string): Error => {
    const m = a.object?.metadata as { name?: string; generateName?: string } | undefined;
    return errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.name || m?.name || m?.generateName || 'Unknown' }, why);
  };
  if (a.operation !== 'CREATE') {
    const attrs: AuthorizationAttributes = {
      user, verb: 'delete', isResourceRequest: true, path: '', namespace: a.namespace, apiGroup: a.def.group,
      apiVersion: version, resource: a.def.plural, subresource: a.subresource, name: a.name,
    };
    const r = await authorizer.authorize(attrs);
    if (r.decision !== 'allow') throw forbid(`cannot set an ownerRef on a resource you can't delete: ${tail(r)}`);
  }
  for (const ref of newBlockingRefs(a.object, a.oldObject)) {
    const apiVersion = str(ref.apiVersion), kind = str(ref.kind);
    const parts = apiVersion.split('/');
    if (parts.length > 2) throw forbid(`cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${apiVersion} Kind ${kind}: unexpected GroupVersion string: ${apiVersion}`);
    const [group, ver] = parts.length === 2 ? [parts[0]!, parts[1]!] : ['', parts[0]!];
    const owner = findByKind(group, kind, ver);
    if (!owner) throw forbid(`cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${apiVersion} Kind ${kind}: no matches for kind "${kind}" in version "${apiVersion}"`);
    const attrs: AuthorizationAttributes = {
      user, verb: 'update', isResourceRequest: true, path: '', namespace: owner.namespaced ? a.namespace : '',
      apiGroup: group, apiVersion: ver, resource: owner.plural, subresource: 'finalizers', name: str(ref.name),
    };
    const r = await authorizer.authorize(attrs);
    if (r.decision !== 'allow') throw forbid(`cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: ${tail(r)}`);
  }
}
