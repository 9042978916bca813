/**
 * The garbage collector's owner graph: every observed object that matters (it has owner
 * references, or someone references it) by uid, and for each owner uid the uids of the
 * objects that reference it. Owners are referenced by uid only, so an owner we have not
 * observed (not watched, or not listed yet) still has its dependents recorded.
 *
 * Example: pod p1 {ownerReferences: [rs-uid]} → nodes {p1}, dependents {rs-uid: {p1}}; when
 * the ReplicaSet is observed, nodes gains rs-uid; when it is deleted, nodes loses rs-uid but
 * dependents still answers "who pointed at rs-uid" (p1), which is what background deletion needs.
 *
 * Contract: mutated only by informer handlers (synchronously), read by workers between their
 * awaits; a node is a snapshot and is replaced, never changed in place.
 */
import type { KubeObject, OwnerReference } from '../../../../api/resources/types.js';
import type { ServedResource } from './discovery.js';

export const ORPHAN_FINALIZER = 'orphan';
export const FOREGROUND_FINALIZER = 'foregroundDeletion';

export interface GraphNode {
  uid: string;
  resource: ServedResource;
  namespace: string;
  name: string;
  resourceVersion: string;
  owners: readonly OwnerReference[];
  finalizers: readonly string[];
  deleting: boolean;
}

export function nodeOf(resource: ServedResource, obj: KubeObject): GraphNode | undefined {
  const m = obj.metadata;
  if (!m?.uid) return undefined;
  return {
    uid: m.uid, resource, namespace: m.namespace ?? '', name: m.name ?? '', resourceVersion: m.resourceVersion ?? '',
    owners: m.ownerReferences ?? [], finalizers: m.finalizers ?? [], deleting: Boolean(m.deletionTimestamp),
  };
}

export function isDeletingDependents(n: GraphNode | undefined): boolean {
  return Boolean(n?.deleting && n.finalizers.includes(FOREGROUND_FINALIZER));
}

export function describe(n: GraphNode): string {
  const r = n.resource.ref;
  return `${r.resource}${r.group ? '.' + r.group : ''} ${n.namespace ? n.namespace + '/' : ''}${n.name}`;
}

export class OwnerGraph {
  private readonly nodes = new Map<string, GraphNode>();
  private readonly dependents = new Map<string, Set<string>>();

  get size(): number { return this.nodes.size; }
  get(uid: string): GraphNode | undefined { return this.nodes.get(uid); }

  /** Stores the node; returns the previous snapshot. */
  upsert(n: GraphNode): GraphNode | undefined {
    const old = this.nodes.get(n.uid);
    if (old) this.unlink(old);
    this.nodes.set(n.uid, n);
    for (const r of n.owners) {
      let s = this.dependents.get(r.uid);
      if (!s) this.dependents.set(r.uid, s = new Set());
      s.add(n.uid);
    }
    return old;
  }

  remove(uid: string): GraphNode | undefined {
    const old = this.nodes.get(uid);
    if (!old) return undefined;
    this.unlink(old);
    this.nodes.delete(uid);
    return old;
  }

  private unlink(n: GraphNode): void {
    for (const r of n.owners) {
      const s = this.dependents.get(r.uid);
      if (!s) continue;
      s.delete(n.uid);
      if (s.size === 0) this.dependents.delete(r.uid);
    }
  }

  /** Observed objects referencing `ownerUid`. */
  dependentsOf(ownerUid: string): GraphNode[] {
    return [...(this.dependents.get(ownerUid) ?? [])].map((u) => this.nodes.get(u)).filter((n): n is GraphNode => n !== undefined);
  }

  /** Dependents whose reference to the owner has blockOwnerDeletion set. */
  blockingDependentsOf(ownerUid: string): GraphNode[] {
    return this.dependentsOf(ownerUid).filter((d) => d.owners.some((r) => r.uid === ownerUid && r.blockOwnerDeletion === true));
  }
}
