/**
 * apiextensions.k8s.io/v1 CustomResourceDefinition: Kubernetes' defaults and validation (name
 * = plural.group, names, scope, versions with exactly one storage version, a structural schema
 * per version, printer columns, subresources, conversion, stored versions, the approval
 * annotation of protected groups). Status (conditions, acceptedNames) is written by the API
 * server's CRD loop through the status subresource.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import { defineResource } from '../common/define.js';
import { createdAtColumn, rec } from '../common/table-util.js';
import { cloneJson } from '../../../util/json-clone.js';
import { dns1035Label, dns1123Subdomain, immutable, isObject } from '../common/validation.js';
import { validateClientConfig } from '../common/webhook-client-config.js';
import type { KubeObject } from '../types.js';
import { CRD_DEFINITION, CRD_LIST_DEFINITION, crdOpenApiSchemas } from './crd-openapi.js';
import { CRD_CLEANUP_FINALIZER, CRD_GROUP, conditionTrue, crdSpec, crdVersions, namesOf, type CrdNames } from './crd-spec.js';
import { validateSchema } from '../../crd/validate-schema.js';
import type { JSONSchemaProps } from '../../crd/schema-types.js';

const PRINTER_TYPES = ['boolean', 'date', 'integer', 'number', 'string'];
const PRINTER_FORMATS = ['byte', 'date', 'date-time', 'double', 'float', 'int32', 'int64', 'password'];
const APPROVAL_ANNOTATION = 'api-approved.kubernetes.io';

type Obj = Record<string, unknown>;

function defaultNames(names: Obj): void {
  if (typeof names.kind === 'string' && names.kind) {
    if (!names.singular) names.singular = names.kind.toLowerCase();
    if (!names.listKind) names.listKind = `${names.kind}List`;
  }
}

function validateNames(n: CrdNames, at: string, errs: FieldError[]): void {
  const label = (v: string, f: string, prefix = ''): void => {
    const p = dns1035Label(prefix ? v.toLowerCase() : v);
    if (v && p.length) errs.push(fieldErrors.invalid(f, v, prefix + p.join(',')));
  };
  label(n.plural, `${at}.plural`);
  label(n.singular, `${at}.singular`);
  label(n.kind, `${at}.kind`, 'may have mixed case, but should otherwise match: ');
  label(n.listKind, `${at}.listKind`, 'may have mixed case, but should otherwise match: ');
  n.shortNames.forEach((s, i) => label(s, `${at}.shortNames[${i}]`));
  if (n.kind && n.kind === n.listKind) errs.push(fieldErrors.invalid(`${at}.listKind`, n.listKind, 'kind and listKind may not be the same'));
  n.categories.forEach((c, i) => label(c, `${at}.categories[${i}]`));
}

/** A simple JSON path as Kubernetes allows in printer columns and scale paths: `.a.b`. */
function validSimplePath(p: string): boolean {
  return /^(\.[^.[\]]+|\[[^\]]+\])+$/.test(p) || /^\.?[A-Za-z_]/.test(p) && !p.includes('..');
}

function validateColumns(v: Obj, at: string, errs: FieldError[]): void {
  const cols = v.additionalPrinterColumns;
  if (cols === undefined) return;
  if (!Array.isArray(cols)) { errs.push(fieldErrors.typeInvalid(at, cols, 'must be a list')); return; }
  cols.forEach((raw, i) => {
    const c = rec(raw), f = `${at}[${i}]`;
    if (!c.name) errs.push(fieldErrors.required(`${f}.name`));
    if (!c.type) errs.push(fieldErrors.required(`${f}.type`, `must be one of ${PRINTER_TYPES.join(',')}`));
    else if (!PRINTER_TYPES.includes(String(c.type))) errs.push(fieldErrors.invalid(`${f}.type`, c.type, `must be one of ${PRINTER_TYPES.join(',')}`));
    if (c.format && !PRINTER_FORMATS.includes(String(c.format))) errs.push(fieldErrors.invalid(`${f}.format`, c.format, `must be one of ${PRINTER_FORMATS.join(',')}`));
    if (!c.jsonPath) errs.push(fieldErrors.required(`${f}.JSONPath`));
    else if (!validSimplePath(String(c.jsonPath))) errs.push(fieldErrors.invalid(`${f}.JSONPath`, c.jsonPath, 'must be a simple json path as defined in https://kubernetes.io/docs/reference/kubectl/jsonpath'));
  });
}

function validateSubresources(v: Obj, at: string, errs: FieldError[]): void {
  const sub = v.subresources;
  if (sub === undefined) return;
  const scale = rec(sub).scale;
  if (!isObject(scale)) return;
  const spec = String(scale.specReplicasPath ?? ''), status = String(scale.statusReplicasPath ?? '');
  const sel = scale.labelSelectorPath;
  if (!spec) errs.push(fieldErrors.required(`${at}.scale.specReplicasPath`));
  else if (!spec.startsWith('.spec.') || !validSimplePath(spec)) errs.push(fieldErrors.invalid(`${at}.scale.specReplicasPath`, spec, 'should be a json path under .spec'));
  if (!status) errs.push(fieldErrors.required(`${at}.scale.statusReplicasPath`));
  else if (!status.startsWith('.status.') || !validSimplePath(status)) errs.push(fieldErrors.invalid(`${at}.scale.statusReplicasPath`, status, 'should be a json path under .status'));
  if (typeof sel === 'string' && sel && !((sel.startsWith('.spec.') || sel.startsWith('.status.')) && validSimplePath(sel))) {
    errs.push(fieldErrors.invalid(`${at}.scale.labelSelectorPath`, sel, 'should be a json path under either .spec or .status'));
  }
}

function validateConversion(spec: Obj, errs: FieldError[]): void {
  const c = spec.conversion;
  if (c === undefined) return;
  const conv = rec(c);
  const strategy = conv.strategy;
  if (!strategy) errs.push(fieldErrors.required('spec.conversion.strategy'));
  else if (strategy !== 'None' && strategy !== 'Webhook') errs.push(fieldErrors.notSupported('spec.conversion.strategy', strategy, ['None', 'Webhook']));
  if (strategy === 'Webhook') {
    const wh = rec(conv.webhook);
    const cc = wh.clientConfig;
    if (!isObject(cc)) errs.push(fieldErrors.required('spec.conversion.webhook.clientConfig', 'required when strategy is set to Webhook'));
    else validateClientConfig(cc, 'spec.conversion.webhook.clientConfig', errs);
    const reviews = wh.conversionReviewVersions;
    if (!Array.isArray(reviews) || reviews.length === 0) errs.push(fieldErrors.required('spec.conversion.webhook.conversionReviewVersions'));
    else if (!reviews.some((r) => r === 'v1' || r === 'v1beta1')) errs.push(fieldErrors.invalid('spec.conversion.webhook.conversionReviewVersions', reviews, 'must include at least one of v1, v1beta1'));
  } else if (conv.webhook !== undefined) {
    errs.push(fieldErrors.forbidden('spec.conversion.webhook', 'should not be set when strategy is not set to Webhook'));
  }
}

/** Kubernetes reserves *.k8s.io and *.kubernetes.io for APIs it reviews. */
function isProtectedGroup(group: string): boolean {
  return group === 'k8s.io' || group.endsWith('.k8s.io') || group === 'kubernetes.io' || group.endsWith('.kubernetes.io');
}

function validateSpec(obj: KubeObject, old: KubeObject | undefined): FieldError[] {
  const errs: FieldError[] = [];
  const spec = crdSpec(obj);
  const group = String(spec.group ?? '');
  if (!group) errs.push(fieldErrors.required('spec.group'));
  else {
    const p = dns1123Subdomain(group);
    if (p.length) errs.push(fieldErrors.invalid('spec.group', group, p.join(',')));
    else if (group.split('.').length < 2) errs.push(fieldErrors.invalid('spec.group', group, 'should be a domain with at least one dot'));
  }
  if (!spec.scope) errs.push(fieldErrors.required('spec.scope'));
  else if (spec.scope !== 'Cluster' && spec.scope !== 'Namespaced') errs.push(fieldErrors.notSupported('spec.scope', spec.scope, ['Cluster', 'Namespaced']));

  const names = namesOf(spec.names);
  for (const k of ['plural', 'singular', 'kind', 'listKind'] as const) if (!names[k]) errs.push(fieldErrors.required(`spec.names.${k}`));
  validateNames(names, 'spec.names', errs);

  const rawVersions = Array.isArray(spec.versions) ? spec.versions : [];
  const versions = crdVersions(obj);
  const seen = new Set<string>();
  let unique = true;
  versions.forEach((v, i) => {
    const at = `spec.versions[${i}]`;
    if (seen.has(v.name)) unique = false;
    seen.add(v.name);
    const p = dns1035Label(v.name);
    if (p.length) errs.push(fieldErrors.invalid(`${at}.name`, v.name, p.join(',')));
    const raw = rec(rawVersions[i]);
    if (!v.schema) errs.push(fieldErrors.required(`${at}.schema.openAPIV3Schema`, 'schemas are required'));
    else errs.push(...validateSchema(v.schema as JSONSchemaProps, `${at}.schema.openAPIV3Schema`, { statusSubresource: v.subresources.status }));
    validateSubresources(raw, `${at}.subresources`, errs);
    validateColumns(raw, `${at}.additionalPrinterColumns`, errs);
    if (!v.deprecated && v.deprecationWarning !== undefined) errs.push(fieldErrors.invalid(`${at}.deprecationWarning`, v.deprecationWarning, 'can only be set for deprecated versions'));
  });
  if (!unique) errs.push(fieldErrors.invalid('spec.versions', '', 'must contain unique version names'));
  if (versions.filter((v) => v.storage).length !== 1) errs.push(fieldErrors.invalid('spec.versions', '', 'must have exactly one version marked as storage version'));
  if (spec.preserveUnknownFields === true) errs.push(fieldErrors.invalid('spec.preserveUnknownFields', true, 'cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead'));
  validateConversion(spec, errs);

  const approval = obj.metadata?.annotations?.[APPROVAL_ANNOTATION];
  if (group && isProtectedGroup(group) && !approval && !(old && !old.metadata?.annotations?.[APPROVAL_ANNOTATION])) {
    errs.push(fieldErrors.required(`metadata.annotations[${APPROVAL_ANNOTATION}]`, `protected groups must have approval annotation "${APPROVAL_ANNOTATION}", see https://github.com/kubernetes/enhancements/pull/1111`));
  }

  const nameField = obj.metadata?.name;
  if (names.plural && group && nameField && nameField !== `${names.plural}.${group}`) {
    errs.push(fieldErrors.invalid('metadata.name', nameField, 'must be spec.names.plural+"."+spec.group'));
  }
  validateStoredVersions(obj, errs);

  if (old) {
    const o = crdSpec(old);
    immutable(errs, 'spec.group', spec.group, o.group);
    immutable(errs, 'spec.names.plural', names.plural, namesOf(o.names).plural);
    if (conditionTrue(old, 'Established')) {
      immutable(errs, 'spec.scope', spec.scope, o.scope);
      immutable(errs, 'spec.names.kind', names.kind, namesOf(o.names).kind);
    }
  }
  return errs;
}

/** status.storedVersions: not empty, holds the storage version, names only declared versions. */
function validateStoredVersions(obj: KubeObject, errs: FieldError[]): void {
  const stored = rec(obj.status).storedVersions;
  const list = Array.isArray(stored) ? stored.map(String) : [];
  if (!list.length) { errs.push(fieldErrors.invalid('status.storedVersions', list, 'must have at least one stored version')); return; }
  const versions = crdVersions(obj);
  for (const v of versions) if (v.storage && !list.includes(v.name)) errs.push(fieldErrors.invalid('status.storedVersions', list, `must have the storage version ${v.name}`));
  list.forEach((s, i) => {
    if (!versions.some((v) => v.name === s)) {
      errs.push(fieldErrors.invalid(`status.storedVersions[${i}]`, s, `missing from spec.versions; ${s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in ${s} and removes ${s} from status.storedVersions`));
    }
  });
}

/** Keeps the storage version in status.storedVersions (Kubernetes' strategy does on create and update). */
function recordStorageVersion(obj: KubeObject): void {
  const storage = crdVersions(obj).find((v) => v.storage)?.name;
  const status = (obj.status = rec(obj.status));
  const stored = Array.isArray(status.storedVersions) ? status.storedVersions.map(String) : [];
  if (storage && !stored.includes(storage)) stored.push(storage);
  status.storedVersions = stored;
}

export const customresourcedefinitions = defineResource({
  group: CRD_GROUP, versions: ['v1'], kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false,
  shortNames: ['crd', 'crds'], categories: ['api-extensions'],
  subresources: { status: true },
  defaults(obj) {
    const spec = (obj.spec = rec(obj.spec));
    if (isObject(spec.names)) defaultNames(spec.names);
    spec.conversion ??= { strategy: 'None' };
    if (isObject(spec.conversion) && !spec.conversion.strategy) spec.conversion.strategy = 'None';
    if (isObject(spec.conversion) && spec.conversion.strategy === 'Webhook') {
      const wh = rec(spec.conversion.webhook);
      const cc = wh.clientConfig;
      if (isObject(cc) && isObject(cc.service)) cc.service.port ??= 443;
    }
  },
  validateSpec: validateSpec,
  prepareForCreate(obj) {
    obj.status = { storedVersions: [] };
    recordStorageVersion(obj);
    const meta = (obj.metadata ??= {});
    const finalizers = meta.finalizers ?? [];
    if (!finalizers.includes(CRD_CLEANUP_FINALIZER)) meta.finalizers = [...finalizers, CRD_CLEANUP_FINALIZER];
  },
  prepareForUpdate(obj, old) {
    obj.status = old.status === undefined ? {} : cloneJson(old.status as Obj);
    recordStorageVersion(obj);
  },
  hasGeneration: true,
  openApi: { names: () => ({ kind: CRD_DEFINITION, list: CRD_LIST_DEFINITION }), schemas: (_version, flavor) => crdOpenApiSchemas(flavor) },
  noAge: true,
  columns: [createdAtColumn],
});
