/**
 * Subresources with their own semantics: scale (autoscaling/v1 Scale), pods/binding and
 * namespaces/finalize. (status is handled by the generic handlers, pods/eviction by eviction.ts.)
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import { selectorString } from '../../../api/resources/common/validation.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { decodeObject } from './codec-adapter.js';
import { answerAfterCommit } from './committed-answer.js';
import { readBody } from './http-io.js';
import { headerOf, parseDryRun, respondObject, respondRaw, successStatus, type Scope } from './scope.js';
import { admissionRequest, applyPatchTo, decodePatch, fieldManagerOf } from './write-handlers.js';
import { patchTypeOf, updateManagedFields } from './patch-dispatch.js';
import { nowTimestamp } from '../registry/object-meta.js';
import { cloneJson } from '../../../util/json-clone.js';

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Obj : {});

function getPath(o: unknown, p: string): unknown {
  let cur: unknown = o;
  for (const k of p.split('.')) cur = rec(cur)[k];
  return cur;
}
function setPath(o: Obj, p: string, v: unknown): void {
  const parts = p.split('.');
  let cur = o;
  for (const k of parts.slice(0, -1)) { if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {}; cur = cur[k] as Obj; }
  cur[parts[parts.length - 1]!] = v;
}

function scaleOf(s: Scope, obj: KubeObject): KubeObject {
  const sc = s.def.subresources!.scale!;
  const spec = rec(obj.spec);
  const sel = s.def.kind === 'ReplicationController'
    ? Object.entries(rec(spec.selector)).map(([k, v]) => `${k}=${String(v)}`).join(',')
    : spec.selector ? selectorString(spec.selector).replace(/^<none>$/, '') : '';
  const m = obj.metadata ?? {};
  const status: Obj = { replicas: Number(getPath(obj, sc.statusReplicasPath) ?? 0) };
  if (sel) status.selector = sel;
  return {
    kind: 'Scale', apiVersion: 'autoscaling/v1',
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp },
    spec: { replicas: Number(getPath(obj, sc.specReplicasPath) ?? 0) },
    status,
  };
}

export async function handleScale(s: Scope, verb: string): Promise<void> {
  const sc = s.def.subresources?.scale;
  if (!sc) throw errors.notFound({ group: s.def.group, resource: `${s.def.plural}/scale`, name: s.name });
  if (verb === 'get') {
    respondRaw(s, 200, scaleOf(s, await s.registry.get(s.def, s.namespace, s.name)));
    return;
  }
  if (verb !== 'update' && verb !== 'patch') throw errors.methodNotAllowed(String(s.req.method), `${s.def.plural}/scale`);
  const dryRun = parseDryRun(s.query);
  const manager = fieldManagerOf(s, false);
  let body: unknown, type: ReturnType<typeof patchTypeOf> | undefined;
  if (verb === 'update') body = decodeObject(headerOf(s.req, 'content-type'), await readBody(s.req));
  else {
    type = patchTypeOf(headerOf(s.req, 'content-type'), 'autoscaling/v1', 'Scale');
    if (type === 'apply') throw errors.methodNotAllowed('PATCH', `${s.def.plural}/scale (apply)`);
    body = decodePatch(type, await readBody(s.req));
  }
  const request = admissionRequest(s, manager);
  const { object } = await s.registry.update(s.def, s.namespace, s.name, async (cur) => {
    if (!cur) throw errors.notFound({ group: s.def.group, resource: s.def.plural, name: s.name });
    const current = scaleOf(s, cur);
    const next = type && type !== 'apply' ? applyPatchTo(type, current, body) : cloneJson(body as KubeObject);
    if (next.kind !== undefined && next.kind !== 'Scale') throw errors.badRequest(`the kind in the data (${String(next.kind)}) does not match the expected kind (Scale)`);
    // Admitted as the Scale it is (deployments/scale), not as a write of the whole object.
    Object.assign(next, { apiVersion: 'autoscaling/v1', kind: 'Scale' });
    const admitting = s.registry.admitSubresource('UPDATE', s.def, 'scale', s, next, current, { dryRun, request });
    if (admitting) await admitting;
    const replicas = rec(next.spec).replicas;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw errors.invalid('Scale', 'autoscaling', s.name, [{ field: 'spec.replicas', type: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0` }]);
    }
    const rv = next.metadata?.resourceVersion;
    if (rv && rv !== cur.metadata?.resourceVersion) throw errors.conflict({ group: s.def.group, resource: s.def.plural, name: s.name });
    setPath(cur as Obj, sc.specReplicasPath, replicas);
    return cur;
  }, { dryRun, allowCreate: false, internal: true, beforeStore: (o, old) => updateManagedFields(o, old, manager, 'Update', 'autoscaling/v1', 'scale') });
  answerAfterCommit(s, 200, () => respondRaw(s, 200, scaleOf(s, object)), () => scaleOf(s, object));
}

/** POST pods/NAME/binding: assigns the pod to a node once. */
export async function handleBinding(s: Scope): Promise<void> {
  const b = decodeObject(headerOf(s.req, 'content-type'), await readBody(s.req));
  const dryRun = parseDryRun(s.query);
  // Admitted as the create of a Binding (pods/binding); the pod's own update is not admitted again.
  b.apiVersion ||= 'v1';
  b.kind ||= 'Binding';
  const admitting = s.registry.admitSubresource('CREATE', s.def, 'binding', s, b, undefined, { dryRun, request: admissionRequest(s) });
  if (admitting) await admitting;
  const target = rec(b.target);
  const node = typeof target.name === 'string' ? target.name : '';
  if (!node) throw errors.invalid('Binding', '', s.name, [{ field: 'target.name', type: 'FieldValueRequired', message: 'Required value' }]);
  if (target.kind !== undefined && target.kind !== '' && target.kind !== 'Node') {
    throw errors.invalid('Binding', '', s.name, [{ field: 'target.kind', type: 'FieldValueNotSupported', message: `Unsupported value: ${JSON.stringify(target.kind)}: supported values: "Node"` }]);
  }
  await s.registry.update(s.def, s.namespace, s.name, (cur) => {
    if (!cur) throw errors.notFound({ resource: 'pods', name: s.name });
    const q = { resource: 'pods', name: s.name };
    if (cur.metadata?.deletionTimestamp) throw errors.conflict(q, `pod ${s.name} is being deleted, cannot be assigned to a host`);
    const spec = rec(cur.spec);
    if (spec.nodeName) throw errors.conflict(q, `pod ${s.name} is already assigned to node "${String(spec.nodeName)}"`);
    const uid = b.metadata?.uid;
    if (uid && uid !== cur.metadata?.uid) throw errors.conflict(q, `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${cur.metadata?.uid ?? ''}`);
    return cur;
  }, { dryRun, allowCreate: false, subresource: '', skipSpecValidation: true, internal: true,
    beforeValidate: (obj) => {
      (obj.spec as Obj).nodeName = node;
      const ann = b.metadata?.annotations;
      if (ann) obj.metadata!.annotations = { ...(obj.metadata!.annotations ?? {}), ...ann };
      const status = rec(obj.status);
      const conds = (Array.isArray(status.conditions) ? status.conditions : []).filter((c) => rec(c).type !== 'PodScheduled');
      conds.push({ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: nowTimestamp() });
      obj.status = { ...status, conditions: conds };
    },
  });
  answerAfterCommit(s, 201, () => respondRaw(s, 201, successStatus()), successStatus);
}

/** PUT namespaces/NAME/finalize: replaces spec.finalizers (the namespace controller's tool). */
export async function handleFinalize(s: Scope): Promise<void> {
  const body = decodeObject(headerOf(s.req, 'content-type'), await readBody(s.req));
  if (body.metadata?.name && body.metadata.name !== s.name) throw errors.badRequest(`the name of the object (${body.metadata.name}) does not match the name on the URL (${s.name})`);
  const finalizers = rec(body.spec).finalizers;
  if (finalizers !== undefined && !Array.isArray(finalizers)) throw errors.badRequest('spec.finalizers must be a list');
  const dryRun = parseDryRun(s.query);
  const rv = body.metadata?.resourceVersion;
  const { object } = await s.registry.update(s.def, s.namespace, s.name, (cur) => {
    if (!cur) throw errors.notFound({ resource: 'namespaces', name: s.name });
    if (rv && rv !== cur.metadata?.resourceVersion) throw errors.conflict({ resource: 'namespaces', name: s.name });
    return cur;
  }, {
    dryRun, allowCreate: false, request: admissionRequest(s),
    beforeValidate: (obj) => { obj.spec = { ...rec(obj.spec), finalizers: [...(finalizers as string[] | undefined ?? [])] }; if (!(finalizers as unknown[] | undefined)?.length) delete (obj.spec as Obj).finalizers; },
  });
  answerAfterCommit(s, 200, () => respondObject(s, 200, object), () => object);
}

export function unsupportedSubresource(s: Scope): ApiError {
  return errors.notFound({ group: s.def.group, resource: `${s.def.plural}/${s.subresource}`, name: s.name });
}
