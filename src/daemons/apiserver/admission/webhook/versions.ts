/**
 * Which resource and kind a webhook is called for, and the object in that version.
 *
 * A request addresses one definition at one served version; an admission object is in that
 * definition's storage form ("def form"). With matchPolicy Equivalent a webhook whose rules
 * name another version or group of the same stored objects (apps/v1 and extensions/v1beta1
 * deployments, core and events.k8s.io events, the served versions of a multi-version resource)
 * is called for that one instead, with the object converted to it, as Kubernetes converts to
 * the webhook's version. Subresources keep their name; scale is always autoscaling/v1 Scale,
 * other subresources with their own object (binding, eviction) are called as requested.
 */
import { allResources } from '../../../../api/resources/registry.js';
import type { KubeObject, ResourceDefinition } from '../../../../api/resources/types.js';

export interface GroupVersionKind { readonly group: string; readonly version: string; readonly kind: string }
export interface GroupVersionResource { readonly group: string; readonly version: string; readonly resource: string }

/** A resource at one served version: what a rule is matched against and what the webhook is told. */
export interface Target {
  readonly def: ResourceDefinition;
  readonly version: string;
  readonly resource: GroupVersionResource;
  readonly kind: GroupVersionKind;
  /** The subresource's object is the stored object (main resource, status): converted between targets. */
  readonly convertsObject: boolean;
}

const SCALE_KIND: GroupVersionKind = { group: 'autoscaling', version: 'v1', kind: 'Scale' };

/** Subresources whose object is the resource's own (status, and status-like ones such as CSR approval). */
function objectIsStored(def: ResourceDefinition, subresource: string): boolean {
  return subresource === '' || subresource === 'status' || !!def.subresources?.statusLike?.includes(subresource);
}

function parseApiVersion(apiVersion: unknown): { group: string; version: string } {
  const s = typeof apiVersion === 'string' ? apiVersion : '';
  const slash = s.indexOf('/');
  return slash < 0 ? { group: '', version: s } : { group: s.slice(0, slash), version: s.slice(slash + 1) };
}

/** The kind of a subresource's own object (Binding, Eviction), read from the object. */
function kindOfObject(obj: KubeObject | undefined): GroupVersionKind {
  const gv = parseApiVersion(obj?.apiVersion);
  return { group: gv.group, version: gv.version, kind: typeof obj?.kind === 'string' ? obj.kind : '' };
}

export function targetOf(def: ResourceDefinition, version: string, subresource: string, object?: KubeObject): Target {
  const stored = objectIsStored(def, subresource);
  const kind = stored ? { group: def.group, version, kind: def.kind } : subresource === 'scale' ? SCALE_KIND : kindOfObject(object);
  return { def, version, resource: { group: def.group, version, resource: def.plural }, kind, convertsObject: stored };
}

/** Which stored objects a definition serves: its storage resource's (views share their base's). */
function storageKey(def: ResourceDefinition): string {
  return def.storage ? `${def.storage.group}/${def.storage.resource}` : `${def.group}/${def.plural}`;
}

/**
 * The other served (definition, version) pairs of the same stored objects, with their kinds:
 * the definition's other versions first, then other definitions in registry order.
 */
export function equivalentTargets(def: ResourceDefinition, version: string, subresource: string,
  served: (def: ResourceDefinition, version: string) => boolean, object?: KubeObject): Target[] {
  const key = storageKey(def);
  const defs = [def, ...allResources().filter((d) => d !== def && storageKey(d) === key)];
  const out: Target[] = [];
  for (const d of defs) {
    for (const v of d.versions) {
      if ((d === def && v === version) || !served(d, v)) continue;
      if (subresource === 'scale' && !d.subresources?.scale) continue;
      if (subresource === 'status' && !d.subresources?.status) continue;
      out.push(targetOf(d, v, subresource, object));
    }
  }
  return out;
}

/** The object of `from`'s definition (def form) in the storage resource's form. */
function toCanonical(def: ResourceDefinition, obj: KubeObject): KubeObject {
  return def.storage && def.convert ? def.convert(obj, 'storage') : obj;
}

/** A def-form object of `def` as the target serves it, with kind and apiVersion set (top level copied). */
export function toTargetVersion(def: ResourceDefinition, obj: KubeObject, t: Target): KubeObject {
  if (!t.convertsObject) return obj;
  const d = t.def;
  let out = d === def ? obj : toCanonical(def, obj);
  if (d.convert && (d.storage || t.version !== d.storageVersion)) out = d.convert(out, t.version);
  const { apiVersion: _a, kind: _k, ...rest } = out;
  void _a; void _k;
  return { kind: d.kind, apiVersion: t.kind.group ? `${t.kind.group}/${t.version}` : t.version, ...rest };
}

/** Back from the target's version to `def`'s def form. */
export function fromTargetVersion(def: ResourceDefinition, obj: KubeObject, t: Target): KubeObject {
  if (!t.convertsObject) return obj;
  const d = t.def;
  const inOwnForm = d.convert && t.version !== d.storageVersion ? d.convert(obj, d.storageVersion) : obj;
  if (d === def) return inOwnForm;
  const canonical = d.storage && d.convert ? d.convert(obj, 'storage') : inOwnForm;
  return def.storage && def.convert ? def.convert(canonical, def.storageVersion) : canonical;
}
