/**
 * The shared step of the pvc-protection and pv-protection controllers: an object of theirs
 * carries its protection finalizer while it lives; once it is being deleted the finalizer comes
 * off when nothing uses it any more, which lets the API server finish the deletion.
 *
 * Contract: `syncProtection` writes at most once, an update carrying the cached object's
 * resourceVersion (a 409 is thrown, so the caller's queue retries with a fresher cache; a 404,
 * the object gone, ends it). `inUse` is asked only for an object being deleted that still
 * carries the finalizer. Other finalizers are never touched.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ResourceRef, RestClient } from '../deps.js';

const finalizersOf = (o: KubeObject): string[] => o.metadata?.finalizers ?? [];

/** Work to do: the finalizer missing on a live object, or present on one being deleted. */
export function needsProtectionWork(obj: KubeObject, finalizer: string): boolean {
  return Boolean(obj.metadata?.deletionTimestamp) === finalizersOf(obj).includes(finalizer);
}

export interface ProtectionTarget {
  readonly client: RestClient;
  /** The object's resource, with its namespace for namespaced objects. */
  readonly ref: ResourceRef;
  readonly finalizer: string;
  readonly log: Logger;
  /** How the object is named in log lines, e.g. { claim: 'ns/name' }. */
  readonly logAs: Record<string, string>;
}

export async function syncProtection(t: ProtectionTarget, obj: KubeObject, inUse: () => Promise<boolean>): Promise<void> {
  const finalizers = finalizersOf(obj);
  const has = finalizers.includes(t.finalizer);
  if (obj.metadata?.deletionTimestamp) {
    if (!has) return;
    if (await inUse()) {
      t.log.debug(t.logAs, 'being deleted but still in use');
      return;
    }
    await writeFinalizers(t, obj, finalizers.filter((f) => f !== t.finalizer));
    t.log.info(t.logAs, 'no longer in use: removed its protection finalizer');
    return;
  }
  if (has) return;
  await writeFinalizers(t, obj, [...finalizers, t.finalizer]);
  t.log.debug(t.logAs, 'added the protection finalizer');
}

async function writeFinalizers(t: ProtectionTarget, obj: KubeObject, finalizers: string[]): Promise<void> {
  try {
    await t.client.update(t.ref, { ...obj, metadata: { ...obj.metadata, finalizers } });
  } catch (e) {
    // Gone meanwhile: nothing left to protect.
    if (isApiError(e) && e.code === 404) return;
    throw e;
  }
}
