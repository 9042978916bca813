/**
 * The Node authorizer's graph: which node may reach which object, as Kubernetes' node graph
 * (all edges point towards nodes):
 *
 *   node <- pod <- secret | configmap | pvc | serviceaccount
 *   pvc <- pv <- secret
 *   node <- volumeattachment
 *
 * Kept incrementally: a pod's change replaces only that pod's edges. Each object a pod names
 * keeps a count per node, so "does node N reach secret S" is a map lookup, plus (for secrets
 * and PVs) a hop through the persistent volumes that name them. A mirror pod reaches only its
 * node (it may name nothing: a node must not be able to grant itself access by creating a pod).
 */
import type { KubeObject } from '../../../api/resources/types.js';
import { MIRROR_POD_ANNOTATION } from '../../../api/resources/core/pods.js';
import { podClaimNames, podConfigMapNames, podSecretNames, podServiceAccountName, pvClaim, pvSecretRefs } from './object-references.js';

/** The kinds of object a node may be related to (Kubernetes' vertex names, used in messages). */
export type VertexKind = 'pod' | 'secret' | 'configmap' | 'pvc' | 'pv' | 'serviceAccount' | 'volumeattachment';

type RefKind = 'secret' | 'configmap' | 'pvc' | 'serviceAccount';

interface PodEntry {
  readonly node: string;
  /** `<kind> <namespace>/<name>` of each object the pod names. */
  readonly refs: readonly string[];
}

interface PvEntry {
  /** `namespace/name` of the bound claim. */
  readonly claim: string;
  /** `namespace/name` of the secrets it names. */
  readonly secrets: readonly string[];
}

const refKey = (kind: RefKind, namespace: string, name: string): string => `${kind} ${namespace}/${name}`;

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  let s = index.get(key);
  if (!s) index.set(key, s = new Set());
  s.add(value);
}

function removeFrom<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  const s = index.get(key);
  if (!s) return;
  s.delete(value);
  if (s.size === 0) index.delete(key);
}

export class NodeGraph {
  /** `namespace/name` → the pod's node and references. */
  private readonly pods = new Map<string, PodEntry>();
  /** Object reference key → node → how many of the node's pods name it. */
  private readonly reach = new Map<string, Map<string, number>>();
  private readonly pvs = new Map<string, PvEntry>();
  /** Secret `namespace/name` → names of the volumes naming it. */
  private readonly pvsBySecret = new Map<string, Set<string>>();
  private readonly attachments = new Map<string, string>();

  /** Adds or replaces a pod (a pod without spec.nodeName is not in the graph). */
  setPod(pod: KubeObject): void {
    const ns = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    this.deletePod(ns, name);
    const spec = (pod.spec ?? {}) as { nodeName?: unknown };
    const node = typeof spec.nodeName === 'string' ? spec.nodeName : '';
    if (!node) return;
    const refs: string[] = [];
    if (pod.metadata?.annotations?.[MIRROR_POD_ANNOTATION] === undefined) {
      const sa = podServiceAccountName(pod);
      if (sa) refs.push(refKey('serviceAccount', ns, sa));
      for (const s of podSecretNames(pod)) refs.push(refKey('secret', ns, s));
      for (const c of podConfigMapNames(pod)) refs.push(refKey('configmap', ns, c));
      for (const c of podClaimNames(pod)) refs.push(refKey('pvc', ns, c));
    }
    this.pods.set(`${ns}/${name}`, { node, refs });
    for (const r of refs) {
      let byNode = this.reach.get(r);
      if (!byNode) this.reach.set(r, byNode = new Map());
      byNode.set(node, (byNode.get(node) ?? 0) + 1);
    }
  }

  deletePod(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const old = this.pods.get(key);
    if (!old) return;
    this.pods.delete(key);
    for (const r of old.refs) {
      const byNode = this.reach.get(r);
      const n = byNode?.get(old.node) ?? 0;
      if (n > 1) byNode!.set(old.node, n - 1);
      else {
        byNode?.delete(old.node);
        if (byNode?.size === 0) this.reach.delete(r);
      }
    }
  }

  /** Adds or replaces a persistent volume (an unbound one relates to nothing). */
  setPV(pv: KubeObject): void {
    const name = pv.metadata?.name ?? '';
    this.deletePV(name);
    const claim = pvClaim(pv);
    if (!claim) return;
    const secrets = [...pvSecretRefs(pv)];
    this.pvs.set(name, { claim, secrets });
    for (const s of secrets) addTo(this.pvsBySecret, s, name);
  }

  deletePV(name: string): void {
    const old = this.pvs.get(name);
    if (!old) return;
    this.pvs.delete(name);
    for (const s of old.secrets) removeFrom(this.pvsBySecret, s, name);
  }

  /** Adds or replaces a volume attachment ('' node: related to no node). */
  setVolumeAttachment(name: string, node: string): void {
    if (node) this.attachments.set(name, node); else this.attachments.delete(name);
  }

  deleteVolumeAttachment(name: string): void {
    this.attachments.delete(name);
  }

  /** After a (re)list: exactly these pods (the only time the pod part is rebuilt). */
  replacePods(pods: readonly KubeObject[]): void {
    this.pods.clear();
    this.reach.clear();
    for (const p of pods) this.setPod(p);
  }

  replacePVs(pvs: readonly KubeObject[]): void {
    this.pvs.clear();
    this.pvsBySecret.clear();
    for (const pv of pvs) this.setPV(pv);
  }

  replaceVolumeAttachments(list: ReadonlyArray<{ name: string; node: string }>): void {
    this.attachments.clear();
    for (const a of list) this.setVolumeAttachment(a.name, a.node);
  }

  /** Whether the object is related to the node by a path in the graph. */
  hasPath(node: string, kind: VertexKind, namespace: string, name: string): boolean {
    switch (kind) {
      case 'pod': return this.pods.get(`${namespace}/${name}`)?.node === node;
      case 'volumeattachment': return this.attachments.get(name) === node;
      case 'pv': {
        const pv = this.pvs.get(name);
        return pv !== undefined && this.claimReaches(node, pv.claim);
      }
      case 'secret':
        if (this.reaches(node, refKey('secret', namespace, name))) return true;
        for (const pv of this.pvsBySecret.get(`${namespace}/${name}`) ?? []) {
          if (this.hasPath(node, 'pv', '', pv)) return true;
        }
        return false;
      default:
        return this.reaches(node, refKey(kind, namespace, name));
    }
  }

  /** The node a pod is bound to, as the graph knows it (undefined: not known or not bound). */
  podNode(namespace: string, name: string): string | undefined {
    return this.pods.get(`${namespace}/${name}`)?.node;
  }

  /** Sizes, for tests and debugging. */
  stats(): { pods: number; references: number; pvs: number; attachments: number } {
    return { pods: this.pods.size, references: this.reach.size, pvs: this.pvs.size, attachments: this.attachments.size };
  }

  private reaches(node: string, key: string): boolean {
    return (this.reach.get(key)?.get(node) ?? 0) > 0;
  }

  private claimReaches(node: string, claim: string): boolean {
    const slash = claim.indexOf('/');
    return this.reaches(node, refKey('pvc', claim.slice(0, slash), claim.slice(slash + 1)));
  }
}
