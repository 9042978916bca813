/**
 * Typed reading of a CustomResourceDefinition (apiextensions.k8s.io/v1) object: its names,
 * versions, per-version schema, subresources and printer columns, and its status conditions.
 * The CRD resource (validation) and the custom-resource definitions built from it read a CRD
 * through these, never through ad hoc casts.
 */
import type { KubeObject } from '../types.js';
import { isObject } from '../common/validation.js';
import { rec } from '../common/table-util.js';

export const CRD_GROUP = 'apiextensions.k8s.io';
/** Kubernetes' finalizer on every CRD: its custom resources are deleted before the CRD goes. */
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

export interface CrdNames {
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  shortNames: string[];
  categories: string[];
}

export interface CrdPrinterColumn {
  name: string;
  type: string;
  format?: string;
  description?: string;
  priority?: number;
  jsonPath: string;
}

export interface CrdScale { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string }

export interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  /** schema.openAPIV3Schema (a JSONSchemaProps object); undefined when absent. */
  schema?: Record<string, unknown>;
  subresources: { status: boolean; scale?: CrdScale };
  columns: CrdPrinterColumn[];
}

export interface CrdCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

type Obj = Record<string, unknown>;
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export function crdSpec(crd: KubeObject): Obj {
  return rec(crd.spec);
}

export function crdGroup(crd: KubeObject): string {
  return String(crdSpec(crd).group ?? '');
}

export function crdNamespaced(crd: KubeObject): boolean {
  return crdSpec(crd).scope === 'Namespaced';
}

export function namesOf(v: unknown): CrdNames {
  const n = rec(v);
  return {
    plural: String(n.plural ?? ''), singular: String(n.singular ?? ''), kind: String(n.kind ?? ''), listKind: String(n.listKind ?? ''),
    shortNames: strs(n.shortNames), categories: strs(n.categories),
  };
}

/** spec.names. */
export function crdNames(crd: KubeObject): CrdNames {
  return namesOf(crdSpec(crd).names);
}

/** status.acceptedNames (what is served: names the naming check accepted). */
export function acceptedNames(crd: KubeObject): CrdNames {
  return namesOf(rec(crd.status).acceptedNames);
}

function scaleOf(v: unknown): CrdScale | undefined {
  if (!isObject(v)) return undefined;
  const out: CrdScale = { specReplicasPath: String(v.specReplicasPath ?? ''), statusReplicasPath: String(v.statusReplicasPath ?? '') };
  if (typeof v.labelSelectorPath === 'string' && v.labelSelectorPath) out.labelSelectorPath = v.labelSelectorPath;
  return out;
}

function columnOf(v: unknown): CrdPrinterColumn {
  const c = rec(v);
  const out: CrdPrinterColumn = { name: String(c.name ?? ''), type: String(c.type ?? ''), jsonPath: String(c.jsonPath ?? '') };
  if (typeof c.format === 'string' && c.format) out.format = c.format;
  if (typeof c.description === 'string') out.description = c.description;
  if (typeof c.priority === 'number') out.priority = c.priority;
  return out;
}

/** spec.versions as declared. */
export function crdVersions(crd: KubeObject): CrdVersion[] {
  const list = crdSpec(crd).versions;
  if (!Array.isArray(list)) return [];
  return list.map((raw) => {
    const v = rec(raw);
    const sub = rec(v.subresources);
    const schema = rec(v.schema).openAPIV3Schema;
    const out: CrdVersion = {
      name: String(v.name ?? ''), served: v.served === true, storage: v.storage === true,
      subresources: { status: isObject(sub.status) },
      columns: Array.isArray(v.additionalPrinterColumns) ? v.additionalPrinterColumns.map(columnOf) : [],
    };
    const scale = scaleOf(sub.scale);
    if (scale) out.subresources.scale = scale;
    if (isObject(schema)) out.schema = schema;
    if (v.deprecated === true) out.deprecated = true;
    if (typeof v.deprecationWarning === 'string') out.deprecationWarning = v.deprecationWarning;
    return out;
  });
}

export function storageVersionOf(crd: KubeObject): string | undefined {
  return crdVersions(crd).find((v) => v.storage)?.name;
}

export function conditionsOf(crd: KubeObject): CrdCondition[] {
  const c = rec(crd.status).conditions;
  return Array.isArray(c) ? c.filter(isObject) as unknown as CrdCondition[] : [];
}

export function conditionTrue(crd: KubeObject, type: string): boolean {
  return conditionsOf(crd).some((c) => c.type === type && c.status === 'True');
}

/**
 * `conditions` with one condition set: lastTransitionTime moves only when the status changes,
 * as Kubernetes' SetCRDCondition does.
 */
export function withCondition(conditions: readonly CrdCondition[], next: CrdCondition, now: string): CrdCondition[] {
  const out = conditions.filter((c) => c.type !== next.type);
  const prev = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = prev && prev.status === next.status && prev.lastTransitionTime ? prev.lastTransitionTime : now;
  const i = conditions.findIndex((c) => c.type === next.type);
  const entry = { ...next, lastTransitionTime };
  if (i < 0) out.push(entry); else out.splice(i, 0, entry);
  return out;
}
