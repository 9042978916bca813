/**
 * What a ResourceQuota's status should say, computed from the objects of its namespace; the
 * resourcequota controller supplies the objects (from its informers) and writes the result.
 *
 * Contract: `hard` is exactly spec.hard (values as written). `used` has, for each key of
 * spec.hard, the sum of what the objects the quota covers use of it (src/api/quota/usage.ts),
 * written with `formatAmount`; a key nothing uses is "0". When the objects of a key's resource
 * are not known yet (`objectsOf` returns undefined: its informer is still listing), the key
 * keeps the value status.used already had, or stays absent, so that a controller that cannot
 * see the objects never lowers a usage it cannot check.
 */
import { countedResource, formatAmount, quotaCovers, usageOf } from '../../../../api/quota/usage.js';
import { allResources } from '../../../../api/resources/registry.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ResourceRef } from '../../deps.js';

export type Quantities = Record<string, string>;
export interface QuotaStatus { hard: Quantities; used: Quantities }
/** The objects of a resource in the quota's namespace; undefined while they are not known. */
export type ObjectsOf = (group: string, plural: string) => readonly KubeObject[] | undefined;

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `plural` for the core group, `plural.group` otherwise (as count/ names spell them). */
export function resourceId(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

function quantities(v: unknown): Quantities {
  const out: Quantities = {};
  if (isDict(v)) for (const [k, q] of Object.entries(v)) out[k] = String(q);
  return out;
}

export function specHard(quota: KubeObject): Quantities {
  return quantities(isDict(quota.spec) ? quota.spec.hard : undefined);
}

export function currentStatus(quota: KubeObject): QuotaStatus {
  const s = isDict(quota.status) ? quota.status : {};
  return { hard: quantities(s.hard), used: quantities(s.used) };
}

export function sameQuantities(a: Quantities, b: Quantities): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** The resources (group, plural) whose objects a quota's hard keys count, each with its keys. */
export function countedBy(quota: KubeObject): Array<{ group: string; plural: string; keys: string[] }> {
  const byId = new Map<string, { group: string; plural: string; keys: string[] }>();
  for (const key of Object.keys(specHard(quota))) {
    const r = countedResource(key);
    if (!r) continue;
    const id = resourceId(r.group, r.plural);
    const entry = byId.get(id);
    if (entry) entry.keys.push(key); else byId.set(id, { group: r.group, plural: r.plural, keys: [key] });
  }
  return [...byId.values()];
}

export function desiredStatus(quota: KubeObject, objectsOf: ObjectsOf): QuotaStatus {
  const hard = specHard(quota);
  const before = currentStatus(quota).used;
  const used: Quantities = {};
  for (const { group, plural, keys } of countedBy(quota)) {
    const objects = objectsOf(group, plural);
    if (!objects) {
      for (const k of keys) if (before[k] !== undefined) used[k] = before[k];
      continue;
    }
    const sums = new Map<string, number>(keys.map((k) => [k, 0]));
    for (const obj of objects) {
      if (!quotaCovers(quota, group, plural, obj)) continue;
      const u = usageOf(group, plural, obj);
      for (const k of keys) sums.set(k, (sums.get(k) ?? 0) + (u[k] ?? 0));
    }
    for (const [k, v] of sums) used[k] = formatAmount(k, v);
  }
  return { hard, used };
}

/**
 * How to list and watch a counted resource: its served, preferred version from the resource
 * definitions (so the informer is the one other controllers share), or undefined when no
 * namespaced resource has that name (its usage is 0).
 */
export function countedRef(group: string, plural: string): ResourceRef | undefined {
  const def = allResources().find((d) => d.group === group && d.plural === plural);
  const version = def?.versions[0];
  if (!def || !def.namespaced || !version) return undefined;
  return { group, version, resource: plural };
}
