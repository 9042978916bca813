/**
 * Volume binding (Kubernetes' VolumeBinding plugin, reduced): a pod's persistentVolumeClaim
 * volumes decide which nodes it may run on, and claims of WaitForFirstConsumer classes are
 * bound only once the pod has a node.
 *
 * Filter, per node:
 *  - a bound claim: its volume's node affinity must match the node ("volume node affinity
 *    conflict"); a volume that does not exist rejects every node;
 *  - an unbound claim of an Immediate class (or of no known class) waits for the binder: no
 *    node fits ("pod has unbound immediate PersistentVolumeClaims");
 *  - an unbound claim of a WaitForFirstConsumer class fits a node where an Available volume
 *    of its class, size, access and volume modes has a node affinity matching the node, or
 *    where the class can provision (any provisioner but kubernetes.io/no-provisioner); a claim
 *    the scheduler already gave a node (selected-node) fits only that node.
 * Pre-bind, before the pod is bound: each such claim gets the smallest matching volume on the
 * chosen node (spec.claimRef written, as Kubernetes' scheduler does; the binder completes the
 * binding) or, without one, the volume.kubernetes.io/selected-node annotation that starts
 * provisioning. The pod is bound once its claims are (or after BIND_WAIT_MS regardless: the
 * node agent then waits for them, reporting FailedMount).
 */
import { termMatches, type NodeSelectorTerm } from '../../api/resources/core/node-placement.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import type { SharedInformerFactory } from '../../client/informer-factory.js';
import { parseQuantity } from '../../util/quantity.js';
import type { Binder } from './binder.js';
import { FITS, type Filter } from './filters/filter.js';
import type { Pod } from './types.js';

const CLAIMS = { group: '', version: 'v1', resource: 'persistentvolumeclaims' } as const;
const VOLUMES = { group: '', version: 'v1', resource: 'persistentvolumes' } as const;
const CLASSES = { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' } as const;
const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
const BIND_WAIT_MS = 60_000;

export const REASON_NODE_CONFLICT = 'node(s) had volume node affinity conflict';
export const REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind";
export const REASON_UNBOUND_IMMEDIATE = 'pod has unbound immediate PersistentVolumeClaims';
export const REASON_PV_MISSING = 'node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)';

type Dict = Record<string, unknown>;
interface Lookup { getByKey(key: string): KubeObject | undefined; list(): KubeObject[] }

const specOf = (o: KubeObject): Dict => (o.spec ?? {}) as Dict;
const storage = (list: unknown): number => {
  const v = (list as Record<string, string> | undefined)?.storage;
  try { return v === undefined ? 0 : parseQuantity(String(v)); } catch { return 0; }
};

/** The pod's claim names, in volume order. */
export function podClaims(pod: Pod): string[] {
  const vols = ((pod.spec ?? {}) as { volumes?: Array<{ persistentVolumeClaim?: { claimName?: string } }> }).volumes ?? [];
  return vols.map((v) => v.persistentVolumeClaim?.claimName).filter((n): n is string => !!n);
}

function claimClassName(c: KubeObject): string {
  return c.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? String(specOf(c).storageClassName ?? '');
}

function volumeClassName(v: KubeObject): string {
  return v.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] ?? String(specOf(v).storageClassName ?? '');
}

/** The volume's required node affinity matches the node (no affinity: every node). */
export function volumeFitsNode(v: KubeObject, node: KubeObject): boolean {
  const terms = ((specOf(v).nodeAffinity as { required?: { nodeSelectorTerms?: NodeSelectorTerm[] } } | undefined)?.required?.nodeSelectorTerms);
  if (!terms) return true;
  return terms.some((t) => termMatches(t, node));
}

function volumeMatchesClaim(v: KubeObject, c: KubeObject): boolean {
  const vs = specOf(v);
  const cs = specOf(c);
  const ref = vs.claimRef as { namespace?: string; name?: string; uid?: string } | undefined;
  if (ref) {
    // Pre-bound to this claim (by us, or by a user) or to nothing else.
    if (ref.name !== c.metadata?.name || ref.namespace !== c.metadata?.namespace || (ref.uid && ref.uid !== c.metadata?.uid)) return false;
  } else if ((v.status as { phase?: string } | undefined)?.phase !== 'Available') return false;
  if (v.metadata?.deletionTimestamp) return false;
  if (volumeClassName(v) !== claimClassName(c)) return false;
  if ((vs.volumeMode ?? 'Filesystem') !== (cs.volumeMode ?? 'Filesystem')) return false;
  if (storage(vs.capacity) < storage((cs.resources as Dict | undefined)?.requests)) return false;
  const modes = new Set((vs.accessModes as string[] | undefined) ?? []);
  return ((cs.accessModes as string[] | undefined) ?? []).every((m) => modes.has(m));
}

export class VolumeBinding {
  private readonly claims: Lookup;
  private readonly volumes: Lookup;
  private readonly classes: Lookup;
  private readonly listeners: Array<() => void> = [];

  constructor(informers: SharedInformerFactory, private readonly client?: RestClient) {
    const ci = informers.informerFor(CLAIMS);
    const vi = informers.informerFor(VOLUMES);
    const si = informers.informerFor(CLASSES);
    this.claims = ci.indexer;
    this.volumes = vi.indexer;
    this.classes = si.indexer;
    const changed = (): void => { for (const l of this.listeners) l(); };
    for (const i of [ci, vi, si]) i.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
  }

  /** Called when claims, volumes or classes change (pods waiting on them may fit now). */
  onChange(fn: () => void): void { this.listeners.push(fn); }

  private claim(pod: Pod, name: string): KubeObject | undefined {
    return this.claims.getByKey(`${pod.metadata?.namespace ?? 'default'}/${name}`);
  }

  private isDelayed(c: KubeObject): { delayed: boolean; canProvision: boolean } {
    const cls = this.classes.getByKey(claimClassName(c));
    if (!cls || cls.volumeBindingMode !== 'WaitForFirstConsumer') return { delayed: false, canProvision: false };
    return { delayed: true, canProvision: String(cls.provisioner ?? '') !== 'kubernetes.io/no-provisioner' };
  }

  /** Available volumes the claim could be bound to on the node, smallest first. */
  private candidates(c: KubeObject, node: KubeObject): KubeObject[] {
    return this.volumes.list().filter((v) => volumeMatchesClaim(v, c) && volumeFitsNode(v, node))
      .sort((a, b) => storage(specOf(a).capacity) - storage(specOf(b).capacity));
  }

  /** Why the pod's volumes do not fit the node (empty: they do). */
  reasons(pod: Pod, node: KubeObject | undefined): readonly string[] {
    const names = podClaims(pod);
    if (names.length === 0) return FITS;
    if (!node) return [REASON_NODE_CONFLICT];
    for (const name of names) {
      const c = this.claim(pod, name);
      if (!c) return [`persistentvolumeclaim "${name}" not found`];
      if (c.metadata?.deletionTimestamp) return [`persistentvolumeclaim "${name}" is being deleted`];
      const volumeName = String(specOf(c).volumeName ?? '');
      if (volumeName) {
        const v = this.volumes.getByKey(volumeName);
        if (!v) return [REASON_PV_MISSING];
        if (!volumeFitsNode(v, node)) return [REASON_NODE_CONFLICT];
        continue;
      }
      const { delayed, canProvision } = this.isDelayed(c);
      if (!delayed) return [REASON_UNBOUND_IMMEDIATE];
      const selected = c.metadata?.annotations?.[ANN_SELECTED_NODE];
      if (selected && selected !== node.metadata?.name) return [REASON_BIND_CONFLICT];
      if (this.candidates(c, node).length === 0 && !canProvision) return [REASON_BIND_CONFLICT];
    }
    return FITS;
  }

  readonly filter: Filter = { name: 'VolumeBinding', filter: (pod, node) => this.reasons(pod.pod, node.node) };

  /** Binds or starts provisioning the pod's delayed claims for the chosen node, then waits for them to be bound. */
  async preBind(pod: Pod, nodeName: string, node: KubeObject | undefined, signal?: AbortSignal): Promise<void> {
    const client = this.client;
    if (!client) return;
    const ns = pod.metadata?.namespace ?? 'default';
    const waiting: string[] = [];
    for (const name of podClaims(pod)) {
      const c = this.claim(pod, name);
      if (!c || specOf(c).volumeName || !this.isDelayed(c).delayed) continue;
      waiting.push(name);
      const v = node ? this.candidates(c, node)[0] : undefined;
      if (v) {
        if (!specOf(v).claimRef) {
          await client.patch(VOLUMES, v.metadata?.name ?? '', 'merge', {
            metadata: { annotations: { [ANN_BOUND_BY_CONTROLLER]: 'yes' }, resourceVersion: v.metadata?.resourceVersion },
            spec: { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name, uid: c.metadata?.uid, resourceVersion: c.metadata?.resourceVersion } },
          }, signal ? { signal } : {});
        }
      } else if (c.metadata?.annotations?.[ANN_SELECTED_NODE] !== nodeName) {
        await client.patch({ ...CLAIMS, namespace: ns }, name, 'merge', { metadata: { annotations: { [ANN_SELECTED_NODE]: nodeName } } }, signal ? { signal } : {});
      }
    }
    const deadline = Date.now() + BIND_WAIT_MS;
    while (waiting.some((n) => !specOf(this.claim(pod, n) ?? {}).volumeName) && Date.now() < deadline && !signal?.aborted) {
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** A binder that runs preBind first. */
  wrap(inner: Binder, nodeOf: (name: string) => KubeObject | undefined): Binder {
    return {
      bind: async (pod, nodeName, signal) => {
        await this.preBind(pod, nodeName, nodeOf(nodeName), signal);
        await inner.bind(pod, nodeName, signal);
      },
    };
  }
}
