/**
 * LimitRanger: the LimitRanges of a namespace shape and bound what pods and claims ask for.
 *
 * - Mutating (pod create): every init and regular container that does not request or limit a
 *   resource gets the `defaultRequest` / `default` of the namespace's `Container` items (the
 *   first LimitRange naming a resource wins), and the pod is annotated
 *   `kubernetes.io/limit-ranger: LimitRanger plugin set: cpu request for container c; ...`.
 * - Validating (pod and PersistentVolumeClaim create): `Container` items bound each container
 *   (min ≤ request and limit; limit and request ≤ max; limit/request ≤ maxLimitRequestRatio),
 *   `Pod` items the pod's totals (containers summed, or the largest init container when that
 *   is more), `PersistentVolumeClaim` items what the claim requests. Every broken bound is listed in
 *   one 403: `pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, ...]`.
 *
 * Contract: the LimitRanges are read from the watch cache (resourceVersion 0), once per create
 * (the validating phase reuses what the mutating phase read); a namespace without any costs one
 * cached list. Updates are not checked (Kubernetes does not either: a pod's resources are fixed
 * once it exists).
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import { parseQuantity } from '../../../util/quantity.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';
import { isPod } from './types.js';

export const LIMIT_RANGER_ANNOTATION = 'kubernetes.io/limit-ranger';

type Dict = Record<string, unknown>;
type Quantities = Record<string, string>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): Dict[] => (Array.isArray(v) ? v.filter(isDict) : []);
const quantities = (v: unknown): Quantities => {
  const out: Quantities = {};
  if (isDict(v)) for (const [k, q] of Object.entries(v)) if (typeof q === 'string' || typeof q === 'number') out[k] = String(q);
  return out;
};
const isPvc = (def: ResourceDefinition): boolean => def.group === '' && def.plural === 'persistentvolumeclaims';

function value(q: string): number {
  try { return parseQuantity(q); } catch { return Number.NaN; }
}

/** Items of one type across the namespace's LimitRanges. */
function itemsOf(ranges: readonly KubeObject[], type: string): Dict[] {
  return ranges.flatMap((r) => list((r.spec as Dict | undefined)?.limits)).filter((i) => i.type === type);
}

async function rangesIn(ctx: AdmissionContext, namespace: string): Promise<KubeObject[]> {
  const res = await ctx.store.list({ resource: 'limitranges', group: '', namespace, resourceVersion: '0' });
  return res.items;
}

/** Kubernetes' three checks for one resource of one item; each returns the broken bound or undefined. */
function minBreak(kind: string, name: string, min: string, req: Quantities, lim: Quantities): string | undefined {
  const m = value(min);
  if (req[name] === undefined) return `minimum ${name} usage per ${kind} is ${min}.  No request is specified`;
  if (value(req[name]) < m) return `minimum ${name} usage per ${kind} is ${min}, but request is ${req[name]}`;
  if (lim[name] !== undefined && value(lim[name]) < m) return `minimum ${name} usage per ${kind} is ${min}, but limit is ${lim[name]}`;
  return undefined;
}

function maxBreak(kind: string, name: string, max: string, req: Quantities, lim: Quantities): string | undefined {
  const m = value(max);
  if (lim[name] === undefined) return `maximum ${name} usage per ${kind} is ${max}.  No limit is specified`;
  if (value(lim[name]) > m) return `maximum ${name} usage per ${kind} is ${max}, but limit is ${lim[name]}`;
  if (req[name] !== undefined && value(req[name]) > m) return `maximum ${name} usage per ${kind} is ${max}, but request is ${req[name]}`;
  return undefined;
}

function ratioBreak(kind: string, name: string, ratio: string, req: Quantities, lim: Quantities): string | undefined {
  const r = req[name] === undefined ? 0 : value(req[name]);
  const l = lim[name] === undefined ? 0 : value(lim[name]);
  if (r === 0) return `${name} max limit to request ratio per ${kind} is ${ratio}, but no request is specified or request is 0`;
  if (l === 0) return `${name} max limit to request ratio per ${kind} is ${ratio}, but no limit is specified or limit is 0`;
  if (l / r > value(ratio) + 1e-9) return `${name} max limit to request ratio per ${kind} is ${ratio}, but provided ratio is ${(l / r).toFixed(6)}`;
  return undefined;
}

/** A claim's max bounds what it requests (a claim has no limit to speak of). */
function maxRequestBreak(kind: string, name: string, max: string, req: Quantities): string | undefined {
  if (req[name] === undefined) return `maximum ${name} usage per ${kind} is ${max}.  No request is specified`;
  if (value(req[name]) > value(max)) return `maximum ${name} usage per ${kind} is ${max}, but request is ${req[name]}`;
  return undefined;
}

function checkItem(kind: string, item: Dict, req: Quantities, lim: Quantities, out: string[]): void {
  for (const [name, q] of Object.entries(quantities(item.min))) { const e = minBreak(kind, name, q, req, lim); if (e) out.push(e); }
  for (const [name, q] of Object.entries(quantities(item.max))) {
    const e = kind === 'PersistentVolumeClaim' ? maxRequestBreak(kind, name, q, req) : maxBreak(kind, name, q, req, lim);
    if (e) out.push(e);
  }
  for (const [name, q] of Object.entries(quantities(item.maxLimitRequestRatio))) { const e = ratioBreak(kind, name, q, req, lim); if (e) out.push(e); }
}

function resourcesOf(c: Dict): { req: Quantities; lim: Quantities } {
  const r = isDict(c.resources) ? c.resources : {};
  return { req: quantities(r.requests), lim: quantities(r.limits) };
}

/**
 * A pod's totals per resource: containers summed, or the largest init container when that is
 * more; a resource some container does not set is left out (it has no total).
 */
function podTotals(spec: Dict, which: 'req' | 'lim'): Quantities {
  const containers = list(spec.containers).map((c) => resourcesOf(c)[which]);
  const inits = list(spec.initContainers).map((c) => resourcesOf(c)[which]);
  const names = new Set([...containers, ...inits].flatMap((q) => Object.keys(q)));
  const out: Quantities = {};
  for (const name of names) {
    if (containers.some((q) => q[name] === undefined)) continue;
    const sum = containers.reduce((s, q) => s + value(q[name]!), 0);
    const init = Math.max(0, ...inits.filter((q) => q[name] !== undefined).map((q) => value(q[name]!)));
    out[name] = formatTotal(name, Math.max(sum, init));
  }
  return out;
}

/** A computed total as a quantity: millicores when cpu is not whole, else a plain number. */
function formatTotal(name: string, v: number): string {
  if (name === 'cpu' && !Number.isInteger(v)) return `${Math.round(v * 1000)}m`;
  return String(Math.round(v));
}

function setDefaults(pod: KubeObject, items: readonly Dict[]): void {
  const spec = pod.spec as Dict;
  const defaults: Quantities = {}, defaultRequests: Quantities = {};
  for (const item of items) {
    for (const [k, v] of Object.entries(quantities(item.default))) defaults[k] ??= v;
    for (const [k, v] of Object.entries(quantities(item.defaultRequest))) defaultRequests[k] ??= v;
  }
  const notes: string[] = [];
  for (const [key, label] of [['containers', 'container'], ['initContainers', 'init container']] as const) {
    for (const c of list(spec[key])) {
      const r: Dict = isDict(c.resources) ? c.resources : (c.resources = {});
      const fill = (field: 'limits' | 'requests', from: Quantities): string[] => {
        const have: Dict = isDict(r[field]) ? r[field] : {};
        const set = Object.keys(from).filter((k) => have[k] === undefined).sort();
        for (const k of set) have[k] = from[k];
        if (set.length) r[field] = have;
        return set;
      };
      const requests = fill('requests', defaultRequests);
      const limits = fill('limits', defaults);
      if (requests.length) notes.push(`${requests.join(', ')} request for ${label} ${String(c.name)}`);
      if (limits.length) notes.push(`${limits.join(', ')} limit for ${label} ${String(c.name)}`);
    }
  }
  if (notes.length) {
    const meta = (pod.metadata ??= {});
    meta.annotations = { ...(meta.annotations ?? {}), [LIMIT_RANGER_ANNOTATION]: `LimitRanger plugin set: ${notes.join('; ')}` };
  }
}

function refuse(a: AdmissionAttributes, broken: string[]): void {
  if (!broken.length) return;
  throw errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.name }, broken.length === 1 ? broken[0]! : `[${broken.join(', ')}]`);
}

function validatePod(a: AdmissionAttributes, ranges: readonly KubeObject[]): void {
  const spec = a.object?.spec;
  if (!isDict(spec)) return;
  const broken: string[] = [];
  for (const item of itemsOf(ranges, 'Container')) {
    for (const c of [...list(spec.initContainers), ...list(spec.containers)]) {
      const { req, lim } = resourcesOf(c);
      checkItem('Container', item, req, lim, broken);
    }
  }
  const podItems = itemsOf(ranges, 'Pod');
  if (podItems.length) {
    const req = podTotals(spec, 'req'), lim = podTotals(spec, 'lim');
    for (const item of podItems) checkItem('Pod', item, req, lim, broken);
  }
  refuse(a, broken);
}

function validateClaim(a: AdmissionAttributes, ranges: readonly KubeObject[]): void {
  const spec = a.object?.spec;
  if (!isDict(spec)) return;
  const r = isDict(spec.resources) ? spec.resources : {};
  const broken: string[] = [];
  for (const item of itemsOf(ranges, 'PersistentVolumeClaim')) checkItem('PersistentVolumeClaim', item, quantities(r.requests), quantities(r.limits), broken);
  refuse(a, broken);
}

export function limitRanger(ctx: AdmissionContext): AdmissionPlugin {
  // A pod's create reads the namespace's ranges once: the mutating phase leaves them here for
  // the validating phase of the same object.
  const readFor = new WeakMap<KubeObject, readonly KubeObject[]>();
  return {
    name: 'LimitRanger',
    handles: (op, def, sub) => op === 'CREATE' && sub === '' && (isPod(def) || isPvc(def)),
    async admit(a) {
      if (!isPod(a.def) || !a.object || !isDict(a.object.spec)) return;
      const ranges = await rangesIn(ctx, a.namespace);
      readFor.set(a.object, ranges);
      const items = itemsOf(ranges, 'Container');
      if (items.length) setDefaults(a.object, items);
    },
    async validate(a) {
      const ranges = (a.object && readFor.get(a.object)) ?? await rangesIn(ctx, a.namespace);
      if (!ranges.length) return;
      if (isPod(a.def)) validatePod(a, ranges);
      else validateClaim(a, ranges);
    },
  };
}
