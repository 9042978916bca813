/**
 * Helpers for serving an old API version by conversion: annotation stashes for fields the
 * storage version lacks, and "views" — definitions in another group (extensions/v1beta1)
 * whose objects live in a storage resource's store (apps/v1, networking.k8s.io/v1).
 *
 * extensions/v1beta1 is meant to be OFF by default (Kubernetes stopped serving it in 1.16) and
 * enabled with --runtime-config=extensions/v1beta1=true (or per resource). Its views carry no
 * categories, so `kubectl get all` does not list objects twice when it is on.
 */
import type { FieldError } from '../../meta/status.js';
import type { KubeObject, ResourceDefinition } from '../types.js';
import { isObject } from './validation.js';

export function clone<T>(v: T): T {
  return structuredClone(v);
}

/** Replaces obj's own fields with those of `next` (definitions' hooks mutate in place). */
export function replaceInPlace(obj: KubeObject, next: KubeObject): void {
  for (const k of Object.keys(obj)) delete obj[k];
  Object.assign(obj, next);
}

/** Moves a JSON value into metadata.annotations[key] (removing the annotation when undefined). */
export function stashAnnotation(obj: KubeObject, key: string, value: unknown): void {
  if (value === undefined) return;
  obj.metadata = { ...(obj.metadata ?? {}) };
  obj.metadata.annotations = { ...(obj.metadata.annotations ?? {}), [key]: typeof value === 'string' ? value : JSON.stringify(value) };
}

/** Takes metadata.annotations[key] out of obj; returns its raw string. */
export function takeAnnotation(obj: KubeObject, key: string): string | undefined {
  const ann = obj.metadata?.annotations;
  if (!ann || !(key in ann)) return undefined;
  const v = ann[key];
  const rest = { ...ann };
  delete rest[key];
  obj.metadata = { ...obj.metadata };
  if (Object.keys(rest).length) obj.metadata.annotations = rest; else delete obj.metadata.annotations;
  return v;
}

export function parseJson(s: string | undefined): unknown {
  if (s === undefined) return undefined;
  try { return JSON.parse(s) as unknown; } catch { return undefined; }
}

/**
 * Old workload API defaulting (extensions/v1beta1, apps/v1beta1): a missing spec.selector is
 * the template's labels, and empty object labels are the template's labels.
 */
export function defaultSelectorAndLabelsFromTemplate(obj: KubeObject): void {
  const spec = obj.spec;
  if (!isObject(spec)) return;
  const tmpl = spec.template;
  const labels = isObject(tmpl) && isObject(tmpl.metadata) && isObject(tmpl.metadata.labels) ? tmpl.metadata.labels as Record<string, string> : undefined;
  if (!labels || !Object.keys(labels).length) return;
  if (spec.selector === undefined || spec.selector === null) spec.selector = { matchLabels: { ...labels } };
  obj.metadata ??= {};
  if (!obj.metadata.labels || !Object.keys(obj.metadata.labels).length) obj.metadata.labels = { ...labels };
}

export interface ViewSpec {
  /** The served group/version (e.g. extensions/v1beta1). */
  readonly group: string;
  readonly version: string;
  /** The definition owning the storage (apps/v1 deployments). */
  readonly base: ResourceDefinition;
  /** Served form → storage form (apiVersion set by the helper). */
  toStorage(obj: KubeObject): KubeObject;
  /** Storage form → served form (apiVersion set by the helper). */
  fromStorage(obj: KubeObject): KubeObject;
  /** Defaults of the old version that differ from the storage version's (served form). */
  defaults?(obj: KubeObject): void;
  /** Subresources served in this view (default: status only when the base has it). */
  readonly subresources?: ResourceDefinition['subresources'];
  /** A delete naming no propagation policy orphans the dependents in this version (see ResourceDefinition). */
  readonly orphanDependentsByDefault?: boolean;
}

/**
 * A definition serving `base`'s objects under another group/version. Defaults, validation and
 * create/update normalization run on the storage form (the base's rules), so both versions
 * enforce the same invariants.
 */
export function defineView(v: ViewSpec): ResourceDefinition {
  const base = v.base;
  const baseApi = base.group ? `${base.group}/${base.storageVersion}` : base.storageVersion;
  const viewApi = `${v.group}/${v.version}`;
  const toS = (o: KubeObject): KubeObject => ({ ...v.toStorage(clone(o)), apiVersion: baseApi, kind: base.kind });
  const fromS = (o: KubeObject): KubeObject => ({ ...v.fromStorage(clone(o)), apiVersion: viewApi, kind: base.kind });
  const viaStorage = (obj: KubeObject, fn: (s: KubeObject) => void): void => {
    const s = toS(obj);
    fn(s);
    replaceInPlace(obj, fromS(s));
  };
  const def: ResourceDefinition = {
    group: v.group, versions: [v.version], storageVersion: v.version,
    kind: base.kind, listKind: base.listKind, plural: base.plural, singular: base.singular,
    shortNames: base.shortNames, categories: undefined, namespaced: base.namespaced, verbs: base.verbs,
    subresources: v.subresources ?? (base.subresources?.status ? { status: true } : undefined),
    hasGeneration: base.hasGeneration,
    ...(v.orphanDependentsByDefault ? { orphanDependentsByDefaultIn: [v.version] } : {}),
    storage: { group: base.group, resource: base.plural, version: base.storageVersion },
    convert(obj, toVersion) {
      if (toVersion === 'storage') return obj.apiVersion === baseApi ? obj : toS(obj);
      return obj.apiVersion === viewApi ? obj : fromS(obj);
    },
    defaults(obj) {
      v.defaults?.(obj);
      if (base.defaults) viaStorage(obj, (s) => base.defaults!(s));
    },
    validate(obj, old): FieldError[] {
      return base.validate ? base.validate(toS(obj), old && toS(old)) : [];
    },
    prepareForCreate(obj) { if (base.prepareForCreate) viaStorage(obj, (s) => base.prepareForCreate!(s)); },
    prepareForUpdate(obj, old) { if (base.prepareForUpdate) { const so = toS(old); viaStorage(obj, (s) => base.prepareForUpdate!(s, so)); } },
    fieldSelectors: base.fieldSelectors,
    tableColumns: base.tableColumns,
  };
  if (base.prepareForStatusUpdate) def.prepareForStatusUpdate = (obj, old, sub, req) => { const so = toS(old); viaStorage(obj, (s) => base.prepareForStatusUpdate!(s, so, sub, req && toS(req))); };
  if (base.validateStatus) def.validateStatus = (obj, old, sub) => base.validateStatus!(toS(obj), toS(old), sub);
  return def;
}
