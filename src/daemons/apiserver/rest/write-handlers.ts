/**
 * CREATE (POST), UPDATE (PUT) and PATCH of objects and their status subresource.
 * Every path: decode → (patch) → convert to the storage form → registry (defaults,
 * validation, admission, store). Nothing is written unless every step succeeds.
 */
import { mediaTypeOf } from '../../../api/codec/body.js';
import { decodeJsonText, JSON_MEDIA_TYPE } from '../../../api/codec/json.js';
import { ApiError, errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { asObject, decodeObject, decodeValue } from './codec-adapter.js';
import { checkFields, checkSharedFields, parseFieldValidation } from './field-validation.js';
import { readBody } from './http-io.js';
import { applyConfiguration, applyNonApplyPatch, patchTypeOf, updateManagedFields, type PatchType } from './patch-dispatch.js';
import { fromRequest, headerOf, outputFormat, parseDryRun, servedApiVersion, toServed, type Scope } from './scope.js';
import type { WriteOptions } from '../registry/resource-registry.js';
import type { AdmissionRequestInfo } from '../admission/types.js';
import type { WrittenJson } from '../../../storage/object-store-types.js';
import { answerCommitted } from './committed-answer.js';
import { queryBool } from '../request-info.js';

/** fieldManager from the query, else derived from the User-Agent like Kubernetes does. */
export function fieldManagerOf(s: Scope, required: boolean): string | undefined {
  const fm = s.query.get('fieldManager');
  if (fm !== null && fm !== '') {
    if (fm.length > 128) throw errors.badRequest(`fieldManager: Too long: may not be more than 128 bytes`);
    if (!/^[\x20-\x7e]+$/.test(fm)) throw errors.badRequest(`fieldManager: Invalid value: ${JSON.stringify(fm)}: must be made of printable ASCII characters`);
    return fm;
  }
  if (required) throw new ApiError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    { group: 'meta.k8s.io', kind: 'PatchOptions', causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }] });
  const ua = headerOf(s.req, 'user-agent');
  if (!ua) return undefined;
  const slash = ua.indexOf('/');
  const first = (slash < 0 ? ua : ua.slice(0, slash)).trim();
  return first ? first.slice(0, 128) : undefined;
}

/** What admission (webhooks) is told of this request: who asks, in which version, with which field manager; where warnings go. */
export function admissionRequest(s: Scope, fieldManager?: string): AdmissionRequestInfo {
  // Audited requests collect the plugins' audit annotations on their audit record.
  const auditAnnotations = s.ctx.audit?.annotationSink();
  return { user: s.ctx.user, version: s.version, warnings: s.warnings, fieldManager, ...(auditAnnotations ? { auditAnnotations } : {}) };
}

function managedFieldsHook(s: Scope, manager: string | undefined, operation: 'Update' | 'Apply', subresource: string): WriteOptions['beforeStore'] {
  return (obj, old) => updateManagedFields(obj, old, manager, operation, servedApiVersion(s), subresource || undefined);
}

/** A CSR records who asked for it (the authenticated user), whatever the body says. */
function recordRequestor(s: Scope, obj: KubeObject): void {
  const spec = (typeof obj.spec === 'object' && obj.spec !== null ? obj.spec : (obj.spec = {})) as Record<string, unknown>;
  const u = s.ctx.user;
  spec.username = u.name;
  if (u.uid) spec.uid = u.uid; else delete spec.uid;
  spec.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) spec.extra = u.extra; else delete spec.extra;
}

function checkNamespace(s: Scope, obj: KubeObject): void {
  const meta = (obj.metadata ??= {});
  if (!s.def.namespaced) { delete meta.namespace; return; }
  if (meta.namespace && meta.namespace !== s.namespace) {
    throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  meta.namespace = s.namespace;
}

function writeSubresource(s: Scope): string {
  if (s.subresource === '' || s.subresource === 'status' || s.def.subresources?.statusLike?.includes(s.subresource)) return s.subresource;
  throw errors.methodNotAllowed(String(s.req.method), `${s.def.plural}/${s.subresource}`);
}

/** What create and update read alike: output format, the body and its decoded object (field-checked), dryRun, field manager. */
async function readWrite(s: Scope): Promise<{ fmt: ReturnType<typeof outputFormat>; body: Buffer; raw: KubeObject; dryRun: boolean; manager: ReturnType<typeof fieldManagerOf> }> {
  const fmt = outputFormat(s);
  const body = await readBody(s.req);
  const contentType = headerOf(s.req, 'content-type');
  const ct = mediaTypeOf(contentType);
  let raw: KubeObject;
  let text: string | undefined;
  if ((ct === '' || ct === JSON_MEDIA_TYPE) && body.length > 0) {
    // JSON: the text is decoded once, for the parser and for the duplicate-key check alike.
    text = body.toString('utf8');
    raw = asObject(decodeJsonText(body, text));
  } else {
    raw = decodeObject(contentType, body, s.def.kind);
  }
  s.ctx.audit?.noteObject(raw.metadata);
  const warnings = checkFields(parseFieldValidation(s.query.get('fieldValidation')), raw, servedApiVersion(s), s.def.kind, text, s.def);
  if (warnings.length) s.warnings.push(...warnings);
  return { fmt, body, raw, dryRun: parseDryRun(s.query), manager: fieldManagerOf(s, false) };
}

/** The body decoded again (a retried write), its unknown fields dropped as the first decoding's were. */
function decodeAgain(s: Scope, body: Buffer): KubeObject {
  const o = decodeObject(headerOf(s.req, 'content-type'), body, s.def.kind);
  checkFields('Ignore', o, servedApiVersion(s), s.def.kind, undefined, s.def);
  return o;
}

/**
 * Whether a create's metadata.resourceVersion makes Kubernetes' storage refuse it: a number
 * other than 0 (what does not parse as one, "-1" say, is ignored there and cleared).
 */
function resourceVersionSetOnCreate(rv: unknown): boolean {
  return typeof rv === 'string' && /^[0-9]{1,20}$/.test(rv) && BigInt(rv) !== 0n && BigInt(rv) <= MAX_UINT64;
}

const MAX_UINT64 = (1n << 64n) - 1n;

/**
 * Kubernetes' storage.ErrResourceVersionSetOnCreate, a plain error its handlers answer as 500
 * with no reason (clients see this message).
 */
function errResourceVersionSetOnCreate(): ApiError {
  const e = new ApiError(500, '', 'resourceVersion should not be set on objects to be created');
  delete e.status.reason; // Go's omitempty: an empty reason is not sent
  return e;
}

export async function handleCreate(s: Scope): Promise<void> {
  if (s.def.namespaced && !s.namespace) throw errors.methodNotAllowed('POST', s.def.plural);
  const { fmt, body, raw, dryRun, manager } = await readWrite(s);
  const target = (decoded: KubeObject): KubeObject => {
    checkNamespace(s, decoded);
    const o = fromRequest(s, decoded);
    if (s.def.group === 'certificates.k8s.io' && s.def.kind === 'CertificateSigningRequest') recordRequestor(s, o);
    return o;
  };
  // Read before the registry clears it; refused where Kubernetes' storage refuses it, right
  // before the write (after validation and admission), and not for a dry run, which its
  // storage never sees.
  const rvSet = !dryRun && resourceVersionSetOnCreate(raw.metadata?.resourceVersion);
  const managed = managedFieldsHook(s, manager, 'Update', '');
  // The object was decoded for this request only: the registry may use it without a copy, and a
  // generateName retry decodes the body again.
  let written: WrittenJson | undefined;
  const created = await s.registry.create(s.def, target(raw), {
    dryRun, inputOwned: true, freshInput: () => target(decodeAgain(s, body)),
    beforeStore: rvSet ? () => { throw errResourceVersionSetOnCreate(); } : managed,
    onWritten: (w) => { written = w; },
    request: admissionRequest(s, manager),
  });
  answerCommitted(s, 201, created, fmt, written);
}

/** The desired object of a PUT, in def form, from the decoded body (`raw`, which it takes over). */
function updateTarget(s: Scope, raw: KubeObject): KubeObject {
  checkNamespace(s, raw);
  raw.metadata!.name = s.name;
  return fromRequest(s, raw);
}

export async function handleUpdate(s: Scope): Promise<void> {
  const subresource = writeSubresource(s);
  const { fmt, body, raw, dryRun, manager } = await readWrite(s);
  const bodyName = raw.metadata?.name;
  if (bodyName && bodyName !== s.name) throw errors.badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${s.name})`);
  const obj = updateTarget(s, raw);
  // The registry takes what `mutate` returns without a copy, so every call hands out a new
  // object: the one decoded above first, then (on a retried write) the body decoded again.
  let fresh: KubeObject | undefined = obj;
  let written: WrittenJson | undefined;
  const mutate = (): KubeObject => {
    const o = fresh ?? updateTarget(s, decodeAgain(s, body));
    fresh = undefined;
    return o;
  };
  const { object, created } = await s.registry.update(s.def, s.namespace, s.name, mutate, {
    subresource, dryRun, allowCreate: subresource === '' ? undefined : false,
    beforeStore: managedFieldsHook(s, manager, 'Update', subresource),
    mutateReadsCurrent: true, mutateReturnsFresh: true, onWritten: (w) => { written = w; },
    request: admissionRequest(s, manager),
  });
  answerCommitted(s, created ? 201 : 200, object, fmt, written);
}

/** Applies a decoded json/merge/strategic patch to the served form of `current`. */
export function applyPatchTo(type: Exclude<PatchType, 'apply'>, current: KubeObject, patch: unknown): KubeObject {
  const out = applyNonApplyPatch(type, current, patch);
  if (typeof out !== 'object' || out === null || Array.isArray(out)) throw errors.badRequest('the patch did not produce an object');
  return out as KubeObject;
}

export function decodePatch(type: PatchType, body: Buffer): unknown {
  if (body.length === 0) throw errors.badRequest('the request body is empty');
  const ct = type === 'apply' ? 'application/yaml' : 'application/json';
  const v = decodeValue(ct, body);
  if (type === 'json' && !Array.isArray(v)) throw errors.badRequest('the server rejected our request due to an error in our request: json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  if (type !== 'json' && (typeof v !== 'object' || v === null || Array.isArray(v))) throw errors.badRequest(`the body of the ${type} patch must be a JSON object`);
  return v;
}

export async function handlePatch(s: Scope): Promise<void> {
  const subresource = writeSubresource(s);
  const fmt = outputFormat(s);
  const apiVersion = servedApiVersion(s);
  const type = patchTypeOf(headerOf(s.req, 'content-type'), apiVersion, s.def.kind);
  const policy = parseFieldValidation(s.query.get('fieldValidation'));
  const dryRun = parseDryRun(s.query);
  const manager = fieldManagerOf(s, type === 'apply');
  if (type !== 'apply' && s.query.get('force') !== null) throw errors.badRequest('force: Forbidden: may not be specified for non-apply patch');
  const force = queryBool(s.query.get('force')) === true;
  const patch = decodePatch(type, await readBody(s.req));
  let written: WrittenJson | undefined;
  if (type === 'apply') s.warnings.push(...checkFields(policy, patch, apiVersion, s.def.kind, undefined, s.def));
  const { object, created } = await s.registry.update(s.def, s.namespace, s.name, (cur) => {
    let patched: KubeObject;
    if (type === 'apply') {
      if (!cur) {
        const meta = (patch as KubeObject).metadata;
        if (s.def.namespaced && meta?.namespace && meta.namespace !== s.namespace) throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      patched = applyConfiguration(cur ? toServed(s, cur) : undefined, patch, { manager: manager!, force, apiVersion, kind: s.def.kind, subresource: subresource || undefined });
      if (!cur) { checkNamespace(s, patched); patched.metadata!.name ??= s.name; }
    } else {
      if (!cur) throw errors.notFound({ group: s.def.group, resource: s.def.plural, name: s.name });
      // The patched object shares what the patch left alone with `cur`: pruned as a copy.
      const checked = checkSharedFields(policy, applyPatchTo(type, toServed(s, cur), patch), apiVersion, s.def.kind, s.def);
      s.warnings.push(...checked.warnings);
      patched = checked.object;
    }
    const meta = (patched.metadata ??= {});
    if (s.def.namespaced && meta.namespace && meta.namespace !== s.namespace) throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    if (meta.name && meta.name !== s.name) throw errors.badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${s.name})`);
    return fromRequest(s, patched);
  }, {
    // json, merge and strategic patches and server-side apply never modify the object they
    // patch (toServed copies its top level), so `cur` needs no private copy.
    mutateReadsCurrent: true,
    subresource, dryRun, allowCreate: type === 'apply' && subresource === '',
    // Server-side apply records its own ownership; other patches are Update operations.
    beforeStore: type === 'apply' ? undefined : managedFieldsHook(s, manager, 'Update', subresource),
    onWritten: (w) => { written = w; },
    request: admissionRequest(s, manager),
  });
  answerCommitted(s, created ? 201 : 200, object, fmt, written);
}
