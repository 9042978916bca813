/**
 * Name, label and object-metadata validation with Kubernetes' wording (apimachinery
 * validation): clients and tests match on these messages.
 */
import { fieldErrors, type FieldError } from '../../meta/status.js';
import type { KubeObject } from '../types.js';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

export const msg = {
  label: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  subdomain: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  dns1035: "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
  qualifiedName: "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
  labelValue: "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
  configKey: "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
};

/**
 * What a valid value gets from the checks below: one shared, frozen empty list (a name check
 * runs several times per write; callers only read the result).
 */
const NONE: string[] = Object.freeze([]) as unknown as string[];

/** Returns problems (empty when valid). */
export function dns1123Label(v: string): string[] {
  return lengthAndPattern(v, 63, DNS1123_LABEL, msg.label);
}
export function dns1123Subdomain(v: string): string[] {
  return lengthAndPattern(v, 253, DNS1123_SUBDOMAIN, msg.subdomain);
}
export function dns1035Label(v: string): string[] {
  return lengthAndPattern(v, 63, DNS1035_LABEL, msg.dns1035);
}
/** The two checks of a name format: at most `max` characters, and the format's pattern. */
function lengthAndPattern(v: string, max: number, pattern: RegExp, patternMessage: string): string[] {
  const tooLong = v.length > max;
  const mismatch = !pattern.test(v);
  if (!tooLong && !mismatch) return NONE;
  const out: string[] = [];
  if (tooLong) out.push(`must be no more than ${max} characters`);
  if (mismatch) out.push(patternMessage);
  return out;
}
/** Names of path segments (RBAC roles etc. allow ':' and uppercase). */
export function pathSegmentName(v: string): string[] {
  if (v === '.' || v === '..') return [`may not be '${v}'`];
  if (v.includes('/')) return ["may not contain '/'"];
  if (v.includes('%')) return ["may not contain '%'"];
  return [];
}
export function qualifiedName(v: string): string[] {
  if (v.length <= 63 && !v.includes('/') && QUALIFIED_NAME.test(v)) return NONE;
  const parts = v.split('/');
  let name = v;
  const out: string[] = [];
  if (parts.length > 2) return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"];
  if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix === '') out.push('prefix part must be non-empty');
    else for (const p of dns1123Subdomain(prefix)) out.push('prefix part ' + p);
  }
  if (name === '') out.push('name part must be non-empty');
  else {
    if (name.length > 63) out.push('name part must be no more than 63 characters');
    if (!QUALIFIED_NAME.test(name)) out.push(msg.qualifiedName);
  }
  return out;
}
export function labelValue(v: string): string[] {
  return lengthAndPattern(v, 63, LABEL_VALUE, msg.labelValue);
}
export function configMapKey(v: string): string[] {
  const dots = v === '.' ? "must not be '.'" : v === '..' ? "must not be '..'" : v.startsWith('..') ? "must not start with '..'" : undefined;
  const out = lengthAndPattern(v, 253, CONFIG_KEY, msg.configKey);
  if (dots === undefined) return out;
  return [...out, dots];
}

export function pushAll(errs: FieldError[], field: string, value: unknown, problems: string[]): void {
  for (const p of problems) errs.push(fieldErrors.invalid(field, value, p));
}

export function validateLabels(labels: unknown, field: string, errs: FieldError[]): void {
  if (labels === undefined || labels === null) return;
  if (typeof labels !== 'object' || Array.isArray(labels)) { errs.push(fieldErrors.typeInvalid(field, labels, 'must be a map of strings')); return; }
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    pushAll(errs, field, k, qualifiedName(k));
    if (typeof v !== 'string') errs.push(fieldErrors.typeInvalid(`${field}[${k}]`, v, 'must be a string'));
    else pushAll(errs, field, v, labelValue(v));
  }
}

const TOTAL_ANNOTATION_SIZE = 256 * 1024;
export function validateAnnotations(ann: unknown, field: string, errs: FieldError[]): void {
  if (ann === undefined || ann === null) return;
  if (typeof ann !== 'object' || Array.isArray(ann)) { errs.push(fieldErrors.typeInvalid(field, ann, 'must be a map of strings')); return; }
  let size = 0;
  for (const [k, v] of Object.entries(ann as Record<string, unknown>)) {
    pushAll(errs, field, k.toLowerCase(), qualifiedName(k.toLowerCase()));
    if (typeof v !== 'string') errs.push(fieldErrors.typeInvalid(`${field}[${k}]`, v, 'must be a string'));
    else size += k.length + v.length;
  }
  if (size > TOTAL_ANNOTATION_SIZE) errs.push(fieldErrors.tooLong(field, TOTAL_ANNOTATION_SIZE));
}

export type NameValidator = (name: string) => string[];

/** Validates metadata common to every object (name, namespace, labels, annotations, finalizers). */
export function validateObjectMeta(obj: KubeObject, namespaced: boolean, nameValidator: NameValidator = dns1123Subdomain): FieldError[] {
  const errs: FieldError[] = [];
  const m = obj.metadata ?? {};
  if (!m.name) {
    errs.push(fieldErrors.required('metadata.name', 'name or generateName is required'));
  } else {
    pushAll(errs, 'metadata.name', m.name, nameValidator(m.name));
  }
  if (namespaced) {
    if (!m.namespace) errs.push(fieldErrors.required('metadata.namespace'));
    else pushAll(errs, 'metadata.namespace', m.namespace, dns1123Label(m.namespace));
  } else if (m.namespace) {
    errs.push(fieldErrors.forbidden('metadata.namespace', 'not allowed on this type'));
  }
  validateLabels(m.labels, 'metadata.labels', errs);
  validateAnnotations(m.annotations, 'metadata.annotations', errs);
  if (m.finalizers !== undefined) {
    if (!Array.isArray(m.finalizers)) errs.push(fieldErrors.typeInvalid('metadata.finalizers', m.finalizers, 'must be a list of strings'));
    else m.finalizers.forEach((f, i) => {
      if (typeof f !== 'string') errs.push(fieldErrors.typeInvalid(`metadata.finalizers[${i}]`, f, 'must be a string'));
      else pushAll(errs, `metadata.finalizers[${i}]`, f, qualifiedName(f));
    });
  }
  if (m.ownerReferences !== undefined) {
    if (!Array.isArray(m.ownerReferences)) errs.push(fieldErrors.typeInvalid('metadata.ownerReferences', m.ownerReferences, 'must be a list'));
    else {
      let controllers = 0;
      m.ownerReferences.forEach((r, i) => {
        const f = `metadata.ownerReferences[${i}]`;
        if (!r || typeof r !== 'object') { errs.push(fieldErrors.typeInvalid(f, r, 'must be an object')); return; }
        if (!r.apiVersion) errs.push(fieldErrors.invalid(`${f}.apiVersion`, r.apiVersion ?? '', 'version must not be empty'));
        if (!r.kind) errs.push(fieldErrors.invalid(`${f}.kind`, r.kind ?? '', 'kind must not be empty'));
        if (!r.name) errs.push(fieldErrors.invalid(`${f}.name`, r.name ?? '', 'name must not be empty'));
        if (!r.uid) errs.push(fieldErrors.invalid(`${f}.uid`, r.uid ?? '', 'uid must not be empty'));
        if (r.controller) controllers++;
      });
      if (controllers > 1) errs.push(fieldErrors.invalid('metadata.ownerReferences', m.ownerReferences, 'Only one reference can have Controller set to true'));
    }
  }
  return errs;
}

/** Checks metadata fields that may not change on update. */
export function validateObjectMetaUpdate(obj: KubeObject, old: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const m = obj.metadata ?? {}, o = old.metadata ?? {};
  if (m.name !== o.name) errs.push(fieldErrors.invalid('metadata.name', m.name, 'field is immutable'));
  if ((m.namespace ?? '') !== (o.namespace ?? '')) errs.push(fieldErrors.invalid('metadata.namespace', m.namespace, 'field is immutable'));
  if (m.uid !== o.uid) errs.push(fieldErrors.invalid('metadata.uid', m.uid, 'field is immutable'));
  if (m.creationTimestamp !== o.creationTimestamp) errs.push(fieldErrors.invalid('metadata.creationTimestamp', m.creationTimestamp, 'field is immutable'));
  return errs;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ao = a as Record<string, unknown>, bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined), bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => deepEqual(ao[k], bo[k]));
}

export function immutable(errs: FieldError[], field: string, a: unknown, b: unknown): void {
  if (!deepEqual(a, b)) errs.push(fieldErrors.invalid(field, a ?? null, 'field is immutable'));
}

/**
 * Label selector check (matchLabels/matchExpressions), as Kubernetes' ValidateLabelSelector;
 * `allowInvalidValues` skips the label-value check of expression values (Kubernetes relaxes it
 * on update when the stored object already has such values).
 */
export function validateLabelSelector(sel: unknown, field: string, errs: FieldError[], opts: { allowInvalidValues?: boolean } = {}): void {
  if (sel === undefined || sel === null) return;
  if (!isObject(sel)) { errs.push(fieldErrors.typeInvalid(field, sel, 'must be an object')); return; }
  validateLabels(sel.matchLabels, `${field}.matchLabels`, errs);
  if (sel.matchExpressions !== undefined) {
    if (!Array.isArray(sel.matchExpressions)) { errs.push(fieldErrors.typeInvalid(`${field}.matchExpressions`, sel.matchExpressions, 'must be a list')); return; }
    sel.matchExpressions.forEach((e: unknown, i: number) => {
      const f = `${field}.matchExpressions[${i}]`;
      if (!isObject(e)) { errs.push(fieldErrors.typeInvalid(f, e, 'must be an object')); return; }
      const op = e.operator;
      if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(String(op))) errs.push(fieldErrors.notSupported(`${f}.operator`, op, ['In', 'NotIn', 'Exists', 'DoesNotExist']));
      const vals = Array.isArray(e.values) ? e.values : [];
      if ((op === 'In' || op === 'NotIn') && vals.length === 0) errs.push(fieldErrors.required(`${f}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\''));
      if ((op === 'Exists' || op === 'DoesNotExist') && vals.length > 0) errs.push(fieldErrors.forbidden(`${f}.values`, 'may not be specified when `operator` is \'Exists\' or \'DoesNotExist\''));
      if (typeof e.key !== 'string') errs.push(fieldErrors.required(`${f}.key`));
      else pushAll(errs, `${f}.key`, e.key, qualifiedName(e.key));
      // Each value is a label value (Kubernetes' ValidateLabelSelectorRequirement).
      vals.forEach((v: unknown, j: number) => {
        if (typeof v !== 'string') errs.push(fieldErrors.typeInvalid(`${f}.values[${j}]`, v, 'must be a string'));
        else if (!opts.allowInvalidValues) pushAll(errs, `${f}.values[${j}]`, v, labelValue(v));
      });
    });
  }
}

/** Does a structured LabelSelector match these labels? (empty selector matches everything) */
export function selectorMatches(sel: unknown, labels: Record<string, string> | undefined): boolean {
  if (!isObject(sel)) return false;
  const l = labels ?? {};
  const ml = isObject(sel.matchLabels) ? sel.matchLabels as Record<string, string> : {};
  for (const [k, v] of Object.entries(ml)) if (l[k] !== v) return false;
  const me = Array.isArray(sel.matchExpressions) ? sel.matchExpressions as Array<Record<string, unknown>> : [];
  for (const e of me) {
    const key = String(e.key), vals = Array.isArray(e.values) ? e.values.map(String) : [];
    const has = Object.prototype.hasOwnProperty.call(l, key);
    switch (e.operator) {
      case 'In': if (!has || !vals.includes(l[key]!)) return false; break;
      case 'NotIn': if (has && vals.includes(l[key]!)) return false; break;
      case 'Exists': if (!has) return false; break;
      case 'DoesNotExist': if (has) return false; break;
      default: return false;
    }
  }
  return true;
}

/** A LabelSelector rendered as kubectl shows it ('app=x,tier in (a,b)'). */
export function selectorString(sel: unknown): string {
  if (!isObject(sel)) return '<none>';
  const parts: string[] = [];
  const ml = isObject(sel.matchLabels) ? sel.matchLabels as Record<string, string> : {};
  for (const k of Object.keys(ml).sort()) parts.push(`${k}=${ml[k]}`);
  const me = Array.isArray(sel.matchExpressions) ? sel.matchExpressions as Array<Record<string, unknown>> : [];
  for (const e of me) {
    const vals = Array.isArray(e.values) ? [...e.values.map(String)].sort().join(',') : '';
    switch (e.operator) {
      case 'In': parts.push(`${String(e.key)} in (${vals})`); break;
      case 'NotIn': parts.push(`${String(e.key)} notin (${vals})`); break;
      case 'Exists': parts.push(String(e.key)); break;
      case 'DoesNotExist': parts.push(`!${String(e.key)}`); break;
    }
  }
  return parts.length ? parts.join(',') : '<none>';
}
