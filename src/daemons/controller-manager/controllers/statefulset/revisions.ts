/**
 * A StatefulSet's ControllerRevisions: each one records a pod template as the patch
 * `{spec: {template: {..., $patch: replace}}}`, is named `<set>-<hash>` (the hash of that
 * data, salted with status.collisionCount) and numbered by `revision`. Pure functions; the
 * writes are in pod-control.ts.
 *
 * Contract: the update revision is the one whose data equals the set's current template; an
 * equal older revision is reused (renumbered to the next number) rather than duplicated. The
 * current revision is the one status.currentRevision names, else the update revision.
 * History beyond spec.revisionHistoryLimit is trimmed oldest first, never touching a
 * revision some pod or the status still uses.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { canonicalJson, controllerRefOf, newControllerRef } from '../controller-utils.js';
import { podRevision, setSpec, setStatus, type Dict } from './identity.js';

export const HASH_LABEL = 'controller.kubernetes.io/hash';
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** The revision data of the set's template. */
export function revisionData(set: KubeObject): Dict {
  return { spec: { template: { ...structuredClone((setSpec(set).template ?? {}) as Dict), $patch: 'replace' } } };
}

/** The pod template a revision records. */
export function templateOf(revision: KubeObject): Dict {
  const t = { ...((((revision as Dict).data as Dict | undefined)?.spec as Dict | undefined)?.template as Dict | undefined ?? {}) };
  delete t.$patch;
  return t;
}

/** FNV-1a (32 bit) of the data and the collision count, spelled in the safe alphabet. */
export function revisionHash(data: Dict, collisionCount: number): string {
  let h = 0x811c9dc5;
  const feed = (b: number): void => { h ^= b; h = Math.imul(h, 0x01000193) >>> 0; };
  for (const b of Buffer.from(canonicalJson(data), 'utf8')) feed(b);
  if (collisionCount > 0) { const c = Buffer.alloc(4); c.writeUInt32LE(collisionCount >>> 0); for (const b of c) feed(b); }
  return [...String(h >>> 0)].map((ch) => SAFE_ALPHABET[ch.charCodeAt(0) % SAFE_ALPHABET.length]).join('');
}

export function revisionNumber(r: KubeObject): number { const n = (r as Dict).revision; return typeof n === 'number' ? n : 0; }

export function sameData(a: KubeObject, b: KubeObject): boolean {
  return canonicalJson((a as Dict).data) === canonicalJson((b as Dict).data);
}

export function byRevision(a: KubeObject, b: KubeObject): number {
  return revisionNumber(a) - revisionNumber(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

export function collisionCountOf(set: KubeObject): number {
  const c = setStatus(set).collisionCount;
  return typeof c === 'number' ? c : 0;
}

/** A new (unsaved) revision of the set's template. */
export function newRevision(set: KubeObject, revision: number, collisionCount: number): KubeObject {
  const data = revisionData(set);
  const hash = revisionHash(data, collisionCount);
  const tplLabels = ((((setSpec(set).template ?? {}) as Dict).metadata as Dict | undefined)?.labels ?? {}) as Record<string, string>;
  return {
    apiVersion: 'apps/v1', kind: 'ControllerRevision',
    metadata: {
      name: `${set.metadata?.name ?? ''}-${hash}`, namespace: set.metadata?.namespace ?? '',
      labels: { ...tplLabels, [HASH_LABEL]: hash },
      ownerReferences: [newControllerRef(set, 'apps/v1', 'StatefulSet')],
    },
    data, revision,
  } as KubeObject;
}

/** The set's own revisions (controlled by it), oldest first. */
export function ownRevisions(set: KubeObject, all: readonly KubeObject[]): KubeObject[] {
  return all.filter((r) => controllerRefOf(r)?.uid === set.metadata?.uid).sort(byRevision);
}

export type UpdateRevisionPlan =
  | { action: 'use'; revision: KubeObject }
  | { action: 'renumber'; revision: KubeObject; to: number }
  | { action: 'create'; revision: KubeObject };

/** What to do to get the update revision, given the set's revisions (oldest first). */
export function planUpdateRevision(set: KubeObject, revisions: readonly KubeObject[]): UpdateRevisionPlan {
  const next = revisions.length ? revisionNumber(revisions[revisions.length - 1]) + 1 : 1;
  const candidate = newRevision(set, next, collisionCountOf(set));
  const equal = revisions.filter((r) => sameData(r, candidate));
  if (!equal.length) return { action: 'create', revision: candidate };
  const latest = equal[equal.length - 1];
  if (latest === revisions[revisions.length - 1]) return { action: 'use', revision: latest };
  return { action: 'renumber', revision: latest, to: next };
}

/** The current revision: the one status.currentRevision names, else the update revision. */
export function currentRevisionOf(set: KubeObject, revisions: readonly KubeObject[], update: KubeObject): KubeObject {
  const name = setStatus(set).currentRevision;
  return revisions.find((r) => r.metadata?.name === name) ?? update;
}

/** Revisions to delete to keep spec.revisionHistoryLimit (10) unused ones. */
export function revisionsToTrim(set: KubeObject, revisions: readonly KubeObject[], pods: readonly KubeObject[], current: string, update: string): KubeObject[] {
  const lim = setSpec(set).revisionHistoryLimit;
  const limit = typeof lim === 'number' && lim >= 0 ? lim : 10;
  const live = new Set([current, update, ...pods.map(podRevision)]);
  const unused = [...revisions].sort(byRevision).filter((r) => !live.has(r.metadata?.name ?? ''));
  return unused.slice(0, Math.max(0, unused.length - limit));
}
