/**
 * Pods as the binder sees them: which ones name a claim (through the pod index pvc-protection
 * also uses, so the shared pod informer carries one index), and which ones are done with it.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { SharedIndexInformer } from '../../deps.js';
import { claimNamesOf, POD_CLAIM_INDEX } from '../pvc-protection.js';
import type { BinderCore } from './binder-core.js';
import { nameOf } from './volume-helpers.js';

/** Adds the claim index to the shared pod informer unless another controller already did. */
export function indexPodsByClaim(pods: SharedIndexInformer): void {
  try {
    pods.addIndexers({ [POD_CLAIM_INDEX]: (p) => claimNamesOf(p).map((n) => `${p.metadata?.namespace ?? ''}/${n}`) });
  } catch (e) {
    if (!/already exists/.test((e as Error).message)) throw e;
  }
}

/** Pods whose volumes name the claim `namespace/name`. */
export function podsUsingClaimKey(core: BinderCore, key: string): KubeObject[] {
  return core.podInformer.indexer.byIndex(POD_CLAIM_INDEX, key);
}

export function podsUsingClaim(core: BinderCore, claim: KubeObject): KubeObject[] {
  return podsUsingClaimKey(core, `${claim.metadata?.namespace ?? ''}/${nameOf(claim)}`);
}

interface ContainerStatus { state?: { terminated?: unknown; waiting?: unknown } }

/** Finished, or deleted with no container running any more (Kubernetes' IsPodTerminated). */
export function podIsTerminated(pod: KubeObject): boolean {
  const status = (pod.status ?? {}) as { phase?: string; containerStatuses?: ContainerStatus[] };
  if (status.phase === 'Failed' || status.phase === 'Succeeded') return true;
  if (!pod.metadata?.deletionTimestamp) return false;
  return (status.containerStatuses ?? []).every((c) => c.state?.terminated != null || c.state?.waiting != null);
}
