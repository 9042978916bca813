/**
 * Empties a terminating namespace: for every namespaced resource the server serves (pods
 * first, the rest once no pod is left), deletes the whole collection (or each object when
 * deletecollection is not offered), then counts
 * what is left and which finalizers hold it. The result becomes the namespace's deletion
 * conditions (the same five types Kubernetes reports).
 */
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ResourceRef, RestClient } from '../../deps.js';
import { discoverResources, hasVerbs, type ServedResource } from '../garbagecollector/discovery.js';

export interface NamespaceCondition { type: string; status: 'True' | 'False'; reason: string; message: string; lastTransitionTime?: string }

export interface DeletionResult {
  /** Objects still present (being finalized or gracefully terminating). */
  remaining: number;
  /** Longest remaining grace period among terminating pods, in seconds (for the recheck). */
  estimateSeconds: number;
  conditions: NamespaceCondition[];
}

/** Resources that are not deleted with their namespace's content (served through other paths). */
const SKIPPED = new Set(['events.k8s.io/events']);

/** Kubernetes' spelling in condition messages: `resource.group` (core: `configmaps.`). */
function resKey(r: ServedResource): string { return `${r.ref.resource}.${r.ref.group}`; }

/**
 * DELETE on the collection: the server deletes every object it lists. Background, as
 * Kubernetes' namespace controller: no version's orphaning default may leave dependents behind.
 */
async function deleteCollection(client: RestClient, ref: ResourceRef): Promise<void> {
  await client.request({ ...ref, method: 'DELETE', body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' }, bodyContentType: 'application/json' });
}

async function deleteEach(client: RestClient, ref: ResourceRef): Promise<void> {
  const list = await client.list(ref);
  for (const o of list.items ?? []) {
    try {
      await client.delete(ref, o.metadata?.name ?? '', { propagationPolicy: 'Background', preconditions: { uid: o.metadata?.uid ?? '' } });
    } catch (e) {
      if (!(isApiError(e) && (e.code === 404 || e.code === 409))) throw e;
    }
  }
}

function cond(type: string, bad: boolean, okReason: string, badReason: string, badMessage: string): NamespaceCondition {
  return bad ? { type, status: 'True', reason: badReason, message: badMessage } : { type, status: 'False', reason: okReason, message: okMessage(type) };
}

function okMessage(type: string): string {
  switch (type) {
    case 'NamespaceDeletionDiscoveryFailure': return 'All resources successfully discovered';
    case 'NamespaceDeletionGroupVersionParsingFailure': return 'All legacy kube types successfully parsed';
    case 'NamespaceDeletionContentFailure': return 'All content successfully deleted, may be waiting on finalization';
    case 'NamespaceContentRemaining': return 'All content successfully removed';
    default: return 'All content-preserving finalizers finished';
  }
}

/** One pass over the namespace's content. Never throws for a single resource's failure. */
export async function deleteNamespaceContent(client: RestClient, namespace: string, signal?: AbortSignal): Promise<DeletionResult> {
  let resources: ServedResource[] = [];
  let discoveryFailed: string[] = [];
  let discoveryError = '';
  try {
    const d = await discoverResources(client, signal);
    resources = d.resources.filter((r) => r.namespaced && hasVerbs(r, 'list', 'delete') && !SKIPPED.has(`${r.ref.group}/${r.ref.resource}`));
    discoveryFailed = d.failed;
  } catch (e) {
    discoveryError = (e as Error).message;
  }
  const deleteFailures: string[] = [];
  const remainingByResource = new Map<string, number>();
  const finalizerCounts = new Map<string, number>();
  let estimateSeconds = 0;
  const deleteAndCount = async (r: ServedResource): Promise<void> => {
    const ref = { ...r.ref, namespace };
    try {
      if (r.verbs.includes('deletecollection')) await deleteCollection(client, ref); else await deleteEach(client, ref);
    } catch (e) {
      if (!(isApiError(e) && e.code === 404)) deleteFailures.push(`${resKey(r)}: ${(e as Error).message}`);
    }
    let items: KubeObject[];
    try {
      items = (await client.list(ref)).items ?? []; // protobuf omits an empty list
    } catch (e) {
      deleteFailures.push(`${resKey(r)}: ${(e as Error).message}`);
      return;
    }
    if (!items.length) return;
    remainingByResource.set(resKey(r), items.length);
    for (const o of items) {
      for (const f of o.metadata?.finalizers ?? []) finalizerCounts.set(f, (finalizerCounts.get(f) ?? 0) + 1);
      const grace = o.metadata?.deletionGracePeriodSeconds;
      if (typeof grace === 'number') estimateSeconds = Math.max(estimateSeconds, grace);
    }
  };
  // Pods go first and everything else only once they are gone (Kubernetes' ordered namespace
  // deletion): policies, secrets and config still apply to pods that are shutting down.
  const pods = resources.find((r) => r.ref.group === '' && r.ref.resource === 'pods');
  if (pods) await deleteAndCount(pods);
  if (!pods || (!remainingByResource.has(resKey(pods)) && deleteFailures.length === 0)) {
    await Promise.all(resources.filter((r) => r !== pods).map(deleteAndCount));
  }
  const remaining = [...remainingByResource.values()].reduce((a, b) => a + b, 0);
  const discoveryMsg = discoveryError || (discoveryFailed.length ? `Discovery failed for some groups, ${discoveryFailed.length} failing: ${discoveryFailed.sort().join(', ')}` : '');
  const conditions: NamespaceCondition[] = [
    cond('NamespaceDeletionDiscoveryFailure', discoveryMsg !== '', 'ResourcesDiscovered', 'DiscoveryFailed', discoveryMsg),
    cond('NamespaceDeletionGroupVersionParsingFailure', false, 'ParsedGroupVersions', 'GroupVersionParsingFailed', ''),
    cond('NamespaceDeletionContentFailure', deleteFailures.length > 0, 'ContentDeleted', 'ContentDeletionFailed',
      `Failed to delete all resource types, ${deleteFailures.length} remaining: ${deleteFailures.sort().join(', ')}`),
    cond('NamespaceContentRemaining', remaining > 0, 'ContentRemoved', 'SomeResourcesRemain',
      `Some resources are remaining: ${[...remainingByResource.entries()].sort().map(([k, n]) => `${k} has ${n} resource instances`).join(', ')}`),
    cond('NamespaceFinalizersRemaining', finalizerCounts.size > 0, 'ContentHasNoFinalizers', 'SomeFinalizersRemain',
      `Some content in the namespace has finalizers remaining: ${[...finalizerCounts.entries()].sort().map(([f, n]) => `${f} in ${n} resource instances`).join(', ')}`),
  ];
  // Discovery or deletion failures mean we cannot know the namespace is empty.
  const unsure = discoveryMsg !== '' || deleteFailures.length > 0;
  return { remaining: unsure ? Math.max(1, remaining) : remaining, estimateSeconds, conditions };
}
