/**
 * The denominator of a percentage budget: the summed scale of the controllers of the budget's
 * pods, each controller counted once.
 *
 * A pod's controller (its ownerReference with controller: true) is resolved in this order:
 * a ReplicationController; a ReplicaSet owned by a Deployment → the Deployment; a ReplicaSet not
 * owned by a Deployment; a StatefulSet (all from the informer caches, any served version of
 * their group, the uid must match); else the `scale` subresource of whatever the reference
 * names (discovery maps its kind to a resource). Its spec.replicas is the scale.
 *
 * Pods without a controller are "unmanaged": skipped, and returned so the caller can warn (as
 * Kubernetes does since 1.26). A controller that cannot be found, or a kind without a scale
 * subresource, throws: the budget cannot be computed.
 */
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject, OwnerReference } from '../../../../api/resources/types.js';
import type { RestClient, SharedIndexInformer } from '../../deps.js';
import { controllerRefOf } from '../controller-utils.js';
import { groupOf, groupVersionResources, type ApiResource } from '../garbagecollector/discovery.js';

/** A controller and its desired replicas. */
export interface ScaledController { uid: string; replicas: number }

export interface ControllerCaches {
  replicationControllers: SharedIndexInformer;
  replicaSets: SharedIndexInformer;
  deployments: SharedIndexInformer;
  statefulSets: SharedIndexInformer;
}

/** Looks up the scale subresource of the object a reference names; undefined when it is not there. */
export type ScaleLookup = (ref: OwnerReference, namespace: string) => Promise<ScaledController | undefined>;

const APPS = ['apps', 'extensions'];

function refersTo(ref: OwnerReference | undefined, kind: string, groups: readonly string[]): ref is OwnerReference {
  return !!ref && ref.kind === kind && groups.includes(groupOf(ref.apiVersion));
}

function replicasOf(o: KubeObject): number {
  const r = (o.spec as { replicas?: unknown } | undefined)?.replicas;
  return typeof r === 'number' ? r : 1;
}

/** The cached object the reference names (same uid), if any. */
function cached(inf: SharedIndexInformer, namespace: string, ref: OwnerReference): KubeObject | undefined {
  const o = inf.indexer.get(namespace, ref.name);
  return o && o.metadata?.uid === ref.uid ? o : undefined;
}

function scaled(o: KubeObject): ScaledController { return { uid: o.metadata?.uid ?? '', replicas: replicasOf(o) }; }

/** The controller of one pod from the caches, or undefined when none of the built-in kinds fits. */
function fromCaches(c: ControllerCaches, ref: OwnerReference, namespace: string): ScaledController | undefined {
  if (refersTo(ref, 'ReplicationController', [''])) {
    const rc = cached(c.replicationControllers, namespace, ref);
    if (rc) return scaled(rc);
  }
  if (refersTo(ref, 'ReplicaSet', APPS)) {
    const rs = cached(c.replicaSets, namespace, ref);
    if (rs) {
      const owner = controllerRefOf(rs);
      if (refersTo(owner, 'Deployment', APPS)) {
        const d = cached(c.deployments, namespace, owner);
        if (d) return scaled(d);
      }
      // A ReplicaSet whose Deployment is missing is left to the scale lookup, as Kubernetes does.
      if (owner?.kind !== 'Deployment') return scaled(rs);
    }
  }
  if (refersTo(ref, 'StatefulSet', ['apps'])) {
    const ss = cached(c.statefulSets, namespace, ref);
    if (ss) return scaled(ss);
  }
  return undefined;
}

/**
 * The expected pod count for these pods and the names of those without a controller.
 * Throws `found no controllers for pod "<name>"` (or the scale lookup's error).
 */
export async function expectedScale(pods: readonly KubeObject[], caches: ControllerCaches, lookup: ScaleLookup):
  Promise<{ expected: number; unmanaged: string[] }> {
  // By the top-level controller's uid (a Deployment counts once for all its ReplicaSets).
  const scales = new Map<string, number>();
  const resolved = new Set<string>();
  const unmanaged: string[] = [];
  for (const pod of pods) {
    const ref = controllerRefOf(pod);
    if (!ref) { unmanaged.push(pod.metadata?.name ?? ''); continue; }
    if (resolved.has(ref.uid)) continue;
    const namespace = pod.metadata?.namespace ?? '';
    const found = fromCaches(caches, ref, namespace) ?? await lookup(ref, namespace);
    if (!found) throw new Error(`found no controllers for pod ${JSON.stringify(pod.metadata?.name ?? '')}`);
    scales.set(found.uid, found.replicas);
    resolved.add(ref.uid);
  }
  let expected = 0;
  for (const n of scales.values()) expected += n;
  return { expected, unmanaged };
}

/** How long a group version's discovery document is reused. */
const DISCOVERY_TTL_MS = 60_000;

/**
 * A ScaleLookup through the API: discovery (cached per group version for a minute) maps the
 * reference's kind to its resource, then GET <resource>/<name>/scale.
 */
export function apiScaleLookup(client: RestClient, signal: AbortSignal, now: () => number = Date.now): ScaleLookup {
  const docs = new Map<string, { at: number; resources: ApiResource[] }>();
  const resourcesOf = async (group: string, version: string): Promise<ApiResource[]> => {
    const key = `${group}/${version}`;
    const hit = docs.get(key);
    if (hit && now() - hit.at < DISCOVERY_TTL_MS) return hit.resources;
    const resources = await groupVersionResources(client, group, version, signal);
    docs.set(key, { at: now(), resources });
    return resources;
  };
  return async (ref, namespace) => {
    const group = groupOf(ref.apiVersion);
    const version = ref.apiVersion.slice(ref.apiVersion.indexOf('/') + 1);
    let resources: ApiResource[];
    try {
      resources = await resourcesOf(group, version);
    } catch (e) {
      throw new Error(`no resource of kind ${ref.kind} in ${ref.apiVersion}: ${(e as Error).message}`);
    }
    const top = resources.find((r) => r.kind === ref.kind && !r.name.includes('/'));
    if (!top) throw new Error(`no resource of kind ${ref.kind} in ${ref.apiVersion}`);
    let scale: KubeObject;
    try {
      scale = await client.get({ group, version, resource: top.name, namespace }, ref.name, { subresource: 'scale', signal });
    } catch (e) {
      if (!isApiError(e) || e.code !== 404) throw e;
      // 404: the object is missing, or its resource has no scale subresource; the latter is an error.
      if (!resources.some((r) => r.name === `${top.name}/scale`)) throw new Error(`${top.name}${group ? `.${group}` : ''} does not implement the scale subresource`);
      return undefined;
    }
    if (scale.metadata?.uid !== ref.uid) return undefined;
    const replicas = (scale.spec as { replicas?: unknown } | undefined)?.replicas;
    return { uid: ref.uid, replicas: typeof replicas === 'number' ? replicas : 0 };
  };
}
