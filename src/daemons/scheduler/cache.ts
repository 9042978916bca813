/**
 * The scheduler's view of the cluster: nodes and the pods on them, including pods this
 * scheduler has "assumed" onto a node but whose binding the watch has not yet confirmed.
 *
 * Assumption life cycle (as in Kubernetes):
 *   assume(pod, node)  -> counted on the node at once, so the next pod sees it;
 *   bind fails         -> forget(key): uncounted, the pod is requeued;
 *   bind succeeds      -> finishBinding(key): counted until the watch shows the pod bound
 *                         (addPod confirms it) or until `assumedTtlMs` passes (expire()).
 *
 * Contract: all methods are synchronous and called from the event loop only (informer
 * handlers, the schedule loop, binding callbacks), so no locking is needed. Pods handed in are
 * informer-cached objects and are never modified.
 */
import { NodeInfo, newPodInfo, type PodInfo } from './node-info.js';
import { podKey, type Node, type Pod } from './types.js';

interface PodState {
  info: PodInfo;
  nodeName: string;
  assumed: boolean;
  /** When an assumed pod whose binding finished is dropped if still unconfirmed. */
  deadline?: number;
}

export class SchedulerCache {
  private readonly nodes = new Map<string, NodeInfo>();
  private readonly podStates = new Map<string, PodState>();

  constructor(private readonly assumedTtlMs = 30_000) {}

  /** Nodes that exist (a deleted node's NodeInfo lingers while pods still point at it). */
  listNodes(): NodeInfo[] {
    const out: NodeInfo[] = [];
    for (const ni of this.nodes.values()) if (ni.node) out.push(ni);
    return out;
  }

  nodeCount(): number { return this.listNodes().length; }

  getNode(name: string): NodeInfo | undefined { return this.nodes.get(name); }

  private nodeInfo(name: string): NodeInfo {
    let ni = this.nodes.get(name);
    if (!ni) this.nodes.set(name, ni = new NodeInfo());
    return ni;
  }

  setNode(node: Node): void {
    this.nodeInfo(node.metadata?.name ?? '').setNode(node);
  }

  removeNode(name: string): void {
    const ni = this.nodes.get(name);
    if (!ni) return;
    if (ni.pods.size === 0) this.nodes.delete(name);
    else ni.node = undefined;
  }

  private place(info: PodInfo, nodeName: string): void {
    this.nodeInfo(nodeName).addPod(info);
  }

  private unplace(key: string, nodeName: string): void {
    const ni = this.nodes.get(nodeName);
    if (!ni) return;
    ni.removePod(key);
    if (!ni.node && ni.pods.size === 0) this.nodes.delete(nodeName);
  }

  isAssumed(key: string): boolean { return this.podStates.get(key)?.assumed === true; }

  /** A bound pod seen by the watch (add or update); confirms an assumption. */
  addPod(pod: Pod): void {
    const nodeName = pod.spec?.nodeName ?? '';
    if (!nodeName) return;
    const key = podKey(pod);
    const old = this.podStates.get(key);
    if (old) this.unplace(key, old.nodeName);
    const info = newPodInfo(pod);
    this.place(info, nodeName);
    this.podStates.set(key, { info, nodeName, assumed: false });
  }

  removePod(pod: Pod): void {
    const key = podKey(pod);
    const st = this.podStates.get(key);
    if (!st) return;
    // A uid mismatch means a new pod under the same name replaced the one we hold.
    if (pod.metadata?.uid && st.info.pod.metadata?.uid && pod.metadata.uid !== st.info.pod.metadata.uid && !st.assumed) return;
    this.unplace(key, st.nodeName);
    this.podStates.delete(key);
  }

  assume(pod: Pod, nodeName: string): void {
    const key = podKey(pod);
    const old = this.podStates.get(key);
    if (old) this.unplace(key, old.nodeName);
    const bound: Pod = { ...pod, spec: { ...pod.spec, nodeName } };
    const info = newPodInfo(bound);
    this.place(info, nodeName);
    this.podStates.set(key, { info, nodeName, assumed: true });
  }

  forget(key: string): void {
    const st = this.podStates.get(key);
    if (!st || !st.assumed) return;
    this.unplace(key, st.nodeName);
    this.podStates.delete(key);
  }

  finishBinding(key: string, now: number): void {
    const st = this.podStates.get(key);
    if (st?.assumed) st.deadline = now + this.assumedTtlMs;
  }

  /** Drops assumed pods whose binding finished long ago but never showed up; returns their keys. */
  expire(now: number): string[] {
    const gone: string[] = [];
    for (const [key, st] of this.podStates) {
      if (st.assumed && st.deadline !== undefined && st.deadline <= now) {
        this.unplace(key, st.nodeName);
        this.podStates.delete(key);
        gone.push(key);
      }
    }
    return gone;
  }

  podCount(): number { return this.podStates.size; }
}
