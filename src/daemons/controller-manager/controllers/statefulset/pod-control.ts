/**
 * The statefulset controller's writes: claims and pods (with the events Kubernetes' stateful
 * pod control records), adoption and release of pods, claim ownership for
 * persistentVolumeClaimRetentionPolicy, and ControllerRevisions.
 *
 * Contract: a claim or pod that already exists counts as created (AlreadyExists is not an
 * error); a pod that is already gone counts as deleted. Other errors are recorded as
 * Warning events and thrown, for the sync to be retried.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject, OwnerReference } from '../../../../api/resources/types.js';
import { keyOf, type ResourceRef, type RestClient } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { newControllerRef } from '../controller-utils.js';
import { claimsFor, type Dict } from './identity.js';
import { newRevision, sameData } from './revisions.js';

export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
export const PVCS: ResourceRef = { group: '', version: 'v1', resource: 'persistentvolumeclaims' };
export const REVISIONS: ResourceRef = { group: 'apps', version: 'v1', resource: 'controllerrevisions' };

const code = (e: unknown): number | undefined => (isApiError(e) ? e.code : undefined);
const msg = (e: unknown): string => (e as Error).message ?? String(e);
const ns = (r: ResourceRef, o: KubeObject): ResourceRef => ({ ...r, namespace: o.metadata?.namespace ?? '' });

export class StatefulPodControl {
  constructor(private readonly client: RestClient, private readonly events: EventRecorder, private readonly log: Logger) {}

  /** Creates the claims of `ordinal` that `exists` does not know, then the pod. */
  async createPod(set: KubeObject, pod: KubeObject, ordinal: number, exists: (claim: string) => boolean): Promise<void> {
    await this.createClaims(set, pod, ordinal, exists);
    const name = pod.metadata?.name ?? '';
    try {
      await this.client.create(ns(PODS, set), pod);
    } catch (e) {
      if (code(e) === 409) return;
      this.events.event(set, 'Warning', 'FailedCreate', `create Pod ${name} in StatefulSet ${set.metadata?.name} failed error: ${msg(e)}`);
      throw e;
    }
    this.events.event(set, 'Normal', 'SuccessfulCreate', `create Pod ${name} in StatefulSet ${set.metadata?.name} successful`);
  }

  /** Creates the pod's missing claims (owned by the set under whenDeleted: Delete). */
  async createClaims(set: KubeObject, pod: KubeObject, ordinal: number, exists: (claim: string) => boolean): Promise<void> {
    const policy = (((set.spec ?? {}) as Dict).persistentVolumeClaimRetentionPolicy ?? {}) as Dict;
    for (const claim of claimsFor(set, ordinal)) {
      const name = claim.metadata?.name ?? '';
      if (exists(name)) continue;
      if (policy.whenDeleted === 'Delete') claim.metadata!.ownerReferences = [ownerRef(set, 'apps/v1', 'StatefulSet')];
      try {
        await this.client.create(ns(PVCS, set), claim);
      } catch (e) {
        if (code(e) === 409) continue;
        this.events.event(set, 'Warning', 'FailedCreate', `create Claim ${name} for Pod ${pod.metadata?.name} in StatefulSet ${set.metadata?.name} failed error: ${msg(e)}`);
        throw e;
      }
      this.events.event(set, 'Normal', 'SuccessfulCreate', `create Claim ${name} Pod ${pod.metadata?.name} in StatefulSet ${set.metadata?.name} success`);
    }
  }

  async deletePod(set: KubeObject, pod: KubeObject): Promise<void> {
    const name = pod.metadata?.name ?? '';
    try {
      await this.client.delete(ns(PODS, pod), name, { preconditions: { uid: pod.metadata?.uid ?? '' } });
    } catch (e) {
      if (code(e) === 404 || code(e) === 409) return;
      this.events.event(set, 'Warning', 'FailedDelete', `delete Pod ${name} in StatefulSet ${set.metadata?.name} failed error: ${msg(e)}`);
      throw e;
    }
    this.events.event(set, 'Normal', 'SuccessfulDelete', `delete Pod ${name} in StatefulSet ${set.metadata?.name} successful`);
  }

  /** Adds `owner` (not as controller) to a claim's owners, for whenScaled: Delete. */
  async addClaimOwner(claim: KubeObject, owner: KubeObject, apiVersion: string, kind: string): Promise<void> {
    const refs = claim.metadata?.ownerReferences ?? [];
    if (refs.some((r) => r.uid === owner.metadata?.uid)) return;
    const patch = { metadata: { ownerReferences: [...refs, ownerRef(owner, apiVersion, kind)], resourceVersion: claim.metadata?.resourceVersion } };
    try {
      await this.client.patch(ns(PVCS, claim), claim.metadata?.name ?? '', 'merge', patch);
    } catch (e) {
      if (code(e) !== 404) throw e;
    }
  }

  /** Makes the set the controller of an orphan pod; undefined when the pod changed meanwhile. */
  async adopt(set: KubeObject, pod: KubeObject): Promise<KubeObject | undefined> {
    const patch = { metadata: {
      ownerReferences: [...(pod.metadata?.ownerReferences ?? []), newControllerRef(set, 'apps/v1', 'StatefulSet')],
      uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion,
    } };
    try {
      const res = await this.client.patch(ns(PODS, pod), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ statefulset: keyOf(set), pod: keyOf(pod) }, 'adopted pod');
      return res;
    } catch (e) {
      if ([404, 409, 422].includes(code(e) ?? 0)) return undefined;
      throw e;
    }
  }

  /** Drops the set's owner reference from a pod that stopped matching its selector. */
  async release(set: KubeObject, pod: KubeObject): Promise<void> {
    const refs = (pod.metadata?.ownerReferences ?? []).filter((r) => r.uid !== set.metadata?.uid);
    const patch = { metadata: { ownerReferences: refs.length ? refs : null, uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion } };
    try {
      await this.client.patch(ns(PODS, pod), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ statefulset: keyOf(set), pod: keyOf(pod) }, 'released pod');
    } catch (e) {
      if (![404, 409, 422].includes(code(e) ?? 0)) throw e;
    }
  }

  /**
   * Saves a new revision. On a name collision with different data, the collision count goes
   * up and the hash (so the name) changes; returns the saved revision and the count used.
   */
  async createRevision(set: KubeObject, revision: KubeObject, collisionCount: number): Promise<{ revision: KubeObject; collisionCount: number }> {
    let count = collisionCount; let candidate = revision;
    for (let i = 0; i < 10; i++) {
      try {
        return { revision: await this.client.create(ns(REVISIONS, set), candidate), collisionCount: count };
      } catch (e) {
        if (code(e) !== 409) throw e;
        const existing = await this.client.get(ns(REVISIONS, set), candidate.metadata?.name ?? '');
        if (sameData(existing, candidate) && existing.metadata?.ownerReferences?.some((r) => r.uid === set.metadata?.uid)) return { revision: existing, collisionCount: count };
        count++;
        candidate = newRevision(set, (candidate as Dict).revision as number, count);
      }
    }
    throw new Error(`too many hash collisions creating a revision of StatefulSet ${keyOf(set)}`);
  }

  async renumberRevision(revision: KubeObject, to: number): Promise<KubeObject> {
    return this.client.patch(ns(REVISIONS, revision), revision.metadata?.name ?? '', 'merge', { revision: to });
  }

  async deleteRevision(revision: KubeObject): Promise<void> {
    try {
      await this.client.delete(ns(REVISIONS, revision), revision.metadata?.name ?? '', { preconditions: { uid: revision.metadata?.uid ?? '' } });
    } catch (e) {
      if (code(e) !== 404 && code(e) !== 409) throw e;
    }
  }
}

function ownerRef(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return { apiVersion, kind, name: owner.metadata?.name ?? '', uid: owner.metadata?.uid ?? '' };
}
