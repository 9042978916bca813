/**
 * The daemonset controller's pod writes: creating the pod for one node (template labels plus
 * the revision hash, the daemon tolerations, an affinity pinning it to the node, owned by the
 * DaemonSet), deleting pods, and claiming pods (adopting matching orphans, releasing owned
 * pods that stopped matching the selector).
 *
 * Contract: create/delete never throw; they report how many writes took effect and the first
 * error. "Gone already" (404, or 409 on the uid precondition) counts as deleted. Events name
 * the pods as Kubernetes' pod control does.
 */
import type { Logger } from 'pino';
import type { LabelSelectorObject, Labels } from '../../../../api/meta/label-selector.js';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { keyOf, type ResourceRef, type RestClient } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { claimPods, nonEmptySelectorMatcher } from '../claim-pods.js';
import { newControllerRef, podFromTemplate } from '../controller-utils.js';
import { pinnedAffinity, withDaemonTolerations } from './node-fit.js';
import { REVISION_HASH_LABEL } from './placement.js';

type Dict = Record<string, unknown>;

export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
export const TEMPLATE_GENERATION_LABEL = 'pod-template-generation';

export interface WriteResult { done: number; error?: unknown }

/** The DaemonSet's selector as a matcher; undefined (matching nothing) when missing or empty. */
export function dsSelector(ds: KubeObject): ((labels: Labels) => boolean) | undefined {
  return nonEmptySelectorMatcher(((ds.spec ?? {}) as Dict).selector as LabelSelectorObject | undefined);
}

/** The pod the DaemonSet runs on `node`. */
export function daemonPodFor(ds: KubeObject, node: string, hash: string): KubeObject {
  const template = (((ds.spec ?? {}) as Dict).template ?? {}) as Dict;
  const pod = podFromTemplate(template, ds.metadata?.namespace ?? '', `${ds.metadata?.name ?? ''}-`, newControllerRef(ds, 'apps/v1', 'DaemonSet'));
  const meta = pod.metadata ?? {};
  meta.labels = { ...(meta.labels ?? {}), [REVISION_HASH_LABEL]: hash, [TEMPLATE_GENERATION_LABEL]: String(ds.metadata?.generation ?? 0) };
  const spec = (pod.spec ?? {}) as Dict;
  spec.affinity = pinnedAffinity(spec.affinity as Dict | undefined, node);
  spec.tolerations = withDaemonTolerations(spec);
  pod.spec = spec;
  return pod;
}

function gone(e: unknown): boolean { return isApiError(e) && (e.code === 404 || e.code === 409); }

export class DaemonPodControl {
  constructor(private readonly client: RestClient, private readonly events: EventRecorder, private readonly log: Logger) {}

  private podsIn(ds: KubeObject): ResourceRef { return { ...PODS, namespace: ds.metadata?.namespace ?? '' }; }

  /** Creates one pod per node, all at once; `onFailed` hears of every node whose pod was not created. */
  async create(ds: KubeObject, nodes: readonly string[], hash: string, onFailed: (node: string) => void): Promise<WriteResult> {
    let done = 0; let error: unknown;
    await Promise.all(nodes.map(async (node) => {
      try {
        const created = await this.client.create(this.podsIn(ds), daemonPodFor(ds, node, hash));
        this.events.event(ds, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata?.name ?? ''}`);
        done++;
      } catch (e) {
        onFailed(node);
        this.events.event(ds, 'Warning', 'FailedCreate', `Error creating: ${(e as Error).message}`);
        error ??= e;
      }
    }));
    return { done, ...(error ? { error } : {}) };
  }

  async delete(ds: KubeObject, pods: readonly KubeObject[], onFailed: (pod: KubeObject) => void): Promise<WriteResult> {
    let done = 0; let error: unknown;
    await Promise.all(pods.map(async (p) => {
      try {
        await this.client.delete(this.podsIn(ds), p.metadata?.name ?? '', { preconditions: { uid: p.metadata?.uid ?? '' } });
        this.events.event(ds, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata?.name ?? ''}`);
      } catch (e) {
        onFailed(p);
        if (!gone(e)) {
          this.events.event(ds, 'Warning', 'FailedDelete', `Error deleting: ${(e as Error).message}`);
          error ??= e;
          return;
        }
      }
      done++;
    }));
    return { done, ...(error ? { error } : {}) };
  }

  /**
   * The pods the DaemonSet controls after adopting matching orphans (`canAdopt`: a fresh read,
   * asked at most once) and releasing its pods that stopped matching. A DaemonSet being
   * deleted does neither.
   */
  async claim(ds: KubeObject, candidates: readonly KubeObject[], canAdopt: () => Promise<boolean>): Promise<KubeObject[]> {
    const match = dsSelector(ds);
    const uid = ds.metadata?.uid;
    return claimPods(ds, candidates, (pod) => match?.(pod.metadata?.labels) ?? false, {
      adopt: (pod) => this.setOwners(ds, pod, [...(pod.metadata?.ownerReferences ?? []), newControllerRef(ds, 'apps/v1', 'DaemonSet')], 'adopted'),
      release: async (pod) => { await this.setOwners(ds, pod, (pod.metadata?.ownerReferences ?? []).filter((r) => r.uid !== uid), 'released'); },
    }, canAdopt);
  }

  private async setOwners(ds: KubeObject, pod: KubeObject, refs: unknown[], what: string): Promise<KubeObject | undefined> {
    const patch = { metadata: { ownerReferences: refs.length ? refs : null, uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion } };
    try {
      const res = await this.client.patch(this.podsIn(ds), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ daemonset: keyOf(ds), pod: keyOf(pod) }, `${what} pod`);
      return res;
    } catch (e) {
      if (isApiError(e) && (e.code === 404 || e.code === 409 || e.code === 422)) return undefined;
      throw e;
    }
  }
}
