/** System-owned metadata on create and update (uid, timestamps, generation, generateName). */
import { randomFillSync, randomUUID } from 'node:crypto';
import type { KubeObject, ObjectMeta, ResourceDefinition } from '../../../api/resources/types.js';
import { deepEqual } from '../../../api/resources/common/validation.js';
import { metaTime } from '../../../api/meta/time.js';

const ALNUM = 'bcdfghjklmnpqrstvwxz2456789';

/** Kubernetes' generateName suffix: 5 random characters from a consonant/digit alphabet. */
export function randomSuffix(n = 5): string {
  let s = '';
  for (let i = 0; i < n; i++) {
    // One random fill serves about 800 names: a fill per name cost 2-3 % of a create.
    if (entropyAt === entropy.length) {
      nameEntropy.fill(entropy);
      entropyAt = 0;
    }
    s += ALNUM[entropy[entropyAt++]! % ALNUM.length];
  }
  return s;
}
const entropy = Buffer.alloc(4096);
let entropyAt = entropy.length;

/**
 * Where randomSuffix's bytes come from. Tests replace `fill` (then call `discard`) to make
 * names collide on purpose.
 */
export const nameEntropy = {
  fill: (b: Buffer): void => { randomFillSync(b); },
  /** Drops the bytes not yet used, so the next name draws from `fill` again. */
  discard(): void { entropyAt = entropy.length; },
};

/** RFC 3339 with second precision, as Kubernetes' metav1.Time serializes. */
export function nowTimestamp(d?: Date): string {
  if (d) return metaTime(d.getTime());
  // "Now" is asked for on every create: format each second once.
  const sec = Math.floor(Date.now() / 1000);
  if (sec !== lastSecond) {
    lastSecond = sec;
    lastStamp = metaTime(sec * 1000);
  }
  return lastStamp;
}
let lastSecond = -1;
let lastStamp = '';

export function generateNameFor(meta: ObjectMeta): string | undefined {
  if (meta.name || !meta.generateName) return meta.name;
  const base = meta.generateName.length > 58 ? meta.generateName.slice(0, 58) : meta.generateName;
  return base + randomSuffix();
}

/** Fills system fields of a new object; clears those clients may not set. */
export function prepareCreateMeta(def: ResourceDefinition, obj: KubeObject): void {
  const meta = (obj.metadata ??= {});
  const name = generateNameFor(meta);
  if (name !== undefined) meta.name = name;
  meta.uid = randomUUID();
  meta.creationTimestamp = nowTimestamp();
  // Checked first: a request body seldom carries these, and deleting an absent key still costs
  // a runtime call.
  if ('resourceVersion' in meta) delete meta.resourceVersion;
  if ('deletionTimestamp' in meta) delete meta.deletionTimestamp;
  if ('deletionGracePeriodSeconds' in meta) delete meta.deletionGracePeriodSeconds;
  if ('selfLink' in meta) delete meta.selfLink;
  if (def.hasGeneration) meta.generation = 1; else if ('generation' in meta) delete meta.generation;
  if (Array.isArray(meta.finalizers) && meta.finalizers.length === 0) delete meta.finalizers;
}

function specPart(o: KubeObject): KubeObject {
  const { metadata: _m, status: _s, ...rest } = o;
  void _m; void _s;
  return rest;
}

/** Copies system fields from the stored object and bumps generation on spec changes. */
export function prepareUpdateMeta(def: ResourceDefinition, obj: KubeObject, old: KubeObject): void {
  const meta = (obj.metadata ??= {}), om = old.metadata ?? {};
  meta.creationTimestamp = om.creationTimestamp;
  if (om.deletionTimestamp) meta.deletionTimestamp = om.deletionTimestamp; else delete meta.deletionTimestamp;
  if (om.deletionGracePeriodSeconds !== undefined) meta.deletionGracePeriodSeconds = om.deletionGracePeriodSeconds; else delete meta.deletionGracePeriodSeconds;
  delete meta.selfLink;
  if (def.hasGeneration) {
    const g = typeof om.generation === 'number' ? om.generation : 1;
    meta.generation = deepEqual(specPart(obj), specPart(old)) ? g : g + 1;
  } else if (om.generation !== undefined) meta.generation = om.generation; else delete meta.generation;
  if (Array.isArray(meta.finalizers) && meta.finalizers.length === 0) delete meta.finalizers;
}
