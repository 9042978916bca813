/**
 * The garbage collector: watches every served resource (except events), keeps the owner graph
 * (garbagecollector/graph.ts) and works uids off one queue:
 *  - background deletion: an object whose owners are all absent is deleted (absent: no object
 *    with that uid, checked by a fresh read before acting, or an owner in another namespace,
 *    which a namespaced dependent cannot have, or a namespaced owner of a cluster-scoped one);
 *  - an object with a live owner among absent ones only loses the references to the absent ones;
 *  - foreground deletion: an owner being deleted with the `foregroundDeletion` finalizer gets
 *    its dependents deleted, and loses the finalizer (so the server deletes it) once no
 *    dependent with blockOwnerDeletion remains;
 *  - orphaning: an owner being deleted with the `orphan` finalizer has the references to it
 *    removed from its dependents, then loses the finalizer.
 *
 * Contract: one uid is processed by one worker at a time; no decision to delete rests on the
 * cache alone (owners missing from the cache are read from the server first); every delete and
 * update carries the object's uid (and resourceVersion for updates) as precondition.
 * Resources are discovered at start and again every 30 s, as Kubernetes does: resource types
 * that appear later (custom resources) get their own informer, which stops when the type goes.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject, OwnerReference } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, SharedIndexInformer, WorkQueue, type ResourceRef, type RestClient } from '../deps.js';
import { listerWatcherFor } from '../../../client/reflector.js';
import { canonicalJson } from './controller-utils.js';
import { discoverResources, groupOf, hasVerbs, type ServedResource } from './garbagecollector/discovery.js';
import { abortableSleep } from '../../../util/abort.js';
import {
  describe, FOREGROUND_FINALIZER, isDeletingDependents, nodeOf, ORPHAN_FINALIZER, OwnerGraph, type GraphNode,
} from './garbagecollector/graph.js';

/** Never collected nor watched (Kubernetes' default ignored resources). */
const IGNORED = new Set(['/events', 'events.k8s.io/events']);

/** How often the served resource types are discovered again (Kubernetes' GC resync period). */
const REDISCOVERY_MS = 30_000;

/** What an owner reference points at, as far as deletion is concerned. */
type OwnerState = 'absent' | 'solid' | 'waiting';

function typeKey(r: ServedResource): string {
  return `${r.ref.group}/${r.ref.resource}`;
}

function waitForAbort(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => { if (signal.aborted) resolve(); else signal.addEventListener('abort', () => resolve(), { once: true }); });
}


export class GarbageCollector implements Controller {
  readonly name = 'garbagecollector';
  readonly graph = new OwnerGraph();
  private queue!: WorkQueue;
  private client!: RestClient;
  private log!: Logger;
  /** `group/Kind` → served resource, to read owners we do not have in the graph. */
  private readonly byKind = new Map<string, ServedResource>();
  /** Resource types watched since start (`group/resource`). */
  private readonly monitored = new Set<string>();
  /** Informers of types found after start, stoppable one by one. */
  private readonly added = new Map<string, AbortController>();

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    if (!ctx.config.enableGarbageCollector) {
      ctx.log.info('--enable-garbage-collector=false: the garbage collector does not run');
      await waitForAbort(ctx.signal);
      return;
    }
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    const resources = await this.discover(ctx.signal);
    if (!resources) return;
    const informers = resources.map((r) => {
      this.monitored.add(typeKey(r));
      const inf = ctx.informers.informerFor(r.ref);
      this.watchWith(inf, r);
      return inf;
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all(informers.map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    this.log.info({ resources: resources.length, objects: this.graph.size }, 'garbage collector synced');
    await Promise.all([
      this.queue.runWorkers(ctx.config.concurrentGcSyncs, (uid) => this.process(uid), ctx.signal),
      this.rediscoverEvery(REDISCOVERY_MS, ctx.signal),
    ]);
  }

  private watchWith(inf: SharedIndexInformer, r: ServedResource): void {
    inf.addEventHandler({
      onAdd: (o) => this.observe(r, o),
      onUpdate: (_old, o) => this.observe(r, o),
      onDelete: (x) => this.forget(deletedObject(x)),
    });
  }

  /** Watches resource types that appeared since the last look, and stops watching gone ones. */
  private async rediscoverEvery(ms: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await abortableSleep(ms, signal);
      if (signal.aborted) return;
      await this.rediscover(signal).catch((e: unknown) => this.log.warn({ err: (e as Error).message }, 'resource rediscovery failed'));
    }
  }

  /** One look at the served types (exposed for tests). */
  async rediscover(signal: AbortSignal): Promise<void> {
    const { usable, failed } = await this.discoverOnce(signal);
    const now = new Set(usable.map(typeKey));
    for (const r of usable) {
      const key = typeKey(r);
      if (this.monitored.has(key) || this.added.has(key)) continue;
      const stop = new AbortController();
      const inf = new SharedIndexInformer({ lw: listerWatcherFor(this.client, r.ref, {}), ref: r.ref, log: this.log.child({ informer: key }) });
      this.watchWith(inf, r);
      this.added.set(key, stop);
      void inf.run(AbortSignal.any([signal, stop.signal]));
      this.log.info({ resource: key }, 'garbage collector watches a new resource type');
    }
    // A type that went away (its CRD was deleted) is no longer watched; failed groups are kept.
    for (const [key, stop] of this.added) {
      const group = key.slice(0, key.indexOf('/'));
      if (now.has(key) || failed.some((f) => f.startsWith(`${group}/`))) continue;
      stop.abort();
      this.added.delete(key);
      this.log.info({ resource: key }, 'garbage collector stopped watching a resource type that is no longer served');
    }
  }

  /** The served types the collector can watch and delete; every served kind is remembered for owner lookups. */
  private async discoverOnce(signal: AbortSignal): Promise<{ usable: ServedResource[]; failed: string[] }> {
    const d = await discoverResources(this.client, signal);
    for (const r of d.resources) this.byKind.set(`${r.ref.group}/${r.kind}`, r);
    return { usable: d.resources.filter((r) => hasVerbs(r, 'list', 'watch', 'delete') && !IGNORED.has(typeKey(r))), failed: d.failed };
  }

  /** Discovery with backoff until it works (or we stop): nothing can be collected without it. */
  private async discover(signal: AbortSignal): Promise<ServedResource[] | undefined> {
    for (let wait = 500; !signal.aborted; wait = Math.min(wait * 2, 30_000)) {
      try {
        const { usable, failed } = await this.discoverOnce(signal);
        if (failed.length) this.log.warn({ groups: failed }, 'discovery failed for some groups; their objects are not collected');
        return usable;
      } catch (e) {
        this.log.warn({ err: (e as Error).message, retryMs: wait }, 'resource discovery failed');
        await abortableSleep(wait, signal);
      }
    }
    return undefined;
  }

  private observe(r: ServedResource, obj: KubeObject): void {
    const n = nodeOf(r, obj);
    if (!n) return;
    const old = this.graph.upsert(n);
    if (n.deleting && (n.finalizers.includes(ORPHAN_FINALIZER) || n.finalizers.includes(FOREGROUND_FINALIZER))) this.queue.add(n.uid);
    // Newly waiting for its dependents: they are to be deleted now.
    if (isDeletingDependents(n) && !isDeletingDependents(old)) for (const d of this.graph.dependentsOf(n.uid)) this.queue.add(d.uid);
    const ownersChanged = !old || canonicalJson(old.owners) !== canonicalJson(n.owners);
    if (ownersChanged && n.owners.length) this.queue.add(n.uid);
    // A dependent that dropped its reference may unblock an owner in foreground deletion.
    if (old && ownersChanged) {
      for (const r0 of old.owners) if (!n.owners.some((x) => x.uid === r0.uid) && isDeletingDependents(this.graph.get(r0.uid))) this.queue.add(r0.uid);
    }
  }

  private forget(obj: KubeObject): void {
    const uid = obj.metadata?.uid;
    if (!uid) return;
    const old = this.graph.remove(uid);
    // Background deletion: the dependents of a vanished owner are looked at.
    for (const d of this.graph.dependentsOf(uid)) this.queue.add(d.uid);
    for (const r of old?.owners ?? []) if (isDeletingDependents(this.graph.get(r.uid))) this.queue.add(r.uid);
  }

  /** One pass over the object `uid`. Throws to be retried with backoff. */
  async process(uid: string): Promise<void> {
    const n = this.graph.get(uid);
    if (!n) return;
    if (n.deleting) {
      if (n.finalizers.includes(ORPHAN_FINALIZER)) { await this.orphanDependents(n); await this.removeFinalizer(n, ORPHAN_FINALIZER); return; }
      if (n.finalizers.includes(FOREGROUND_FINALIZER)) { await this.processDeletingDependents(n); return; }
      return;
    }
    if (n.owners.length) await this.attemptToDelete(n);
  }

  private refOf(n: GraphNode): ResourceRef {
    return { ...n.resource.ref, ...(n.resource.namespaced ? { namespace: n.namespace } : {}) };
  }

  private async processDeletingDependents(n: GraphNode): Promise<void> {
    const blocking = this.graph.blockingDependentsOf(n.uid);
    if (blocking.length === 0) {
      await this.removeFinalizer(n, FOREGROUND_FINALIZER);
      return;
    }
    for (const d of this.graph.dependentsOf(n.uid)) if (!d.deleting) this.queue.add(d.uid);
    this.log.debug({ owner: describe(n), blocking: blocking.length }, 'waiting for blocking dependents');
  }

  /** Classifies one owner reference of `n` (reading the owner from the server on a cache miss). */
  private async ownerState(n: GraphNode, ref: OwnerReference): Promise<OwnerState> {
    const cached = this.graph.get(ref.uid);
    if (cached) {
      if (cached.resource.namespaced && (!n.resource.namespaced || cached.namespace !== n.namespace)) return 'absent';
      return isDeletingDependents(cached) ? 'waiting' : 'solid';
    }
    const res = this.byKind.get(`${groupOf(ref.apiVersion)}/${ref.kind}`);
    if (!res) {
      // A kind the server does not serve: we cannot tell, so we keep the dependent.
      this.log.debug({ object: describe(n), owner: `${ref.apiVersion}/${ref.kind}` }, 'owner kind unknown; keeping the dependent');
      return 'solid';
    }
    if (res.namespaced && !n.resource.namespaced) return 'absent';
    let live: KubeObject;
    try {
      live = await this.client.get({ ...res.ref, ...(res.namespaced ? { namespace: n.namespace } : {}) }, ref.name);
    } catch (e) {
      if (isApiError(e) && e.code === 404) return 'absent';
      throw e;
    }
    if (live.metadata?.uid !== ref.uid) return 'absent';
    return live.metadata?.deletionTimestamp && (live.metadata.finalizers ?? []).includes(FOREGROUND_FINALIZER) ? 'waiting' : 'solid';
  }

  private async attemptToDelete(n: GraphNode): Promise<void> {
    const states = await Promise.all(n.owners.map(async (r) => ({ r, s: await this.ownerState(n, r) })));
    const solid = states.filter((x) => x.s === 'solid');
    const gone = states.filter((x) => x.s !== 'solid');
    if (solid.length) {
      if (gone.length) await this.removeOwnerRefs(n, new Set(gone.map((x) => x.r.uid)));
      return;
    }
    // No live owner: the object goes. With an owner waiting for it and dependents of its own,
    // the deletion is foreground too so the wait covers the whole subtree.
    let policy: string;
    if (states.some((x) => x.s === 'waiting')) policy = this.graph.dependentsOf(n.uid).length ? 'Foreground' : 'Background';
    else if (n.finalizers.includes(ORPHAN_FINALIZER)) policy = 'Orphan';
    else if (n.finalizers.includes(FOREGROUND_FINALIZER)) policy = 'Foreground';
    else policy = 'Background';
    try {
      await this.client.delete(this.refOf(n), n.name, { propagationPolicy: policy, preconditions: { uid: n.uid } });
      this.log.info({ object: describe(n), propagationPolicy: policy }, 'deleted object whose owners are gone');
    } catch (e) {
      if (isApiError(e) && (e.code === 404 || e.code === 409)) return;
      throw e;
    }
  }

  private async orphanDependents(owner: GraphNode): Promise<void> {
    const results = await Promise.allSettled(this.graph.dependentsOf(owner.uid).map((d) => this.removeOwnerRefs(d, new Set([owner.uid]))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Drops the references to `uids` from `n` (fresh read, then a compare-and-swap patch). */
  private async removeOwnerRefs(n: GraphNode, uids: ReadonlySet<string>): Promise<void> {
    await this.mutateMeta(n, (o) => {
      const refs = (o.metadata?.ownerReferences ?? []).filter((r) => !uids.has(r.uid));
      if (refs.length === (o.metadata?.ownerReferences ?? []).length) return undefined;
      return { ownerReferences: refs.length ? refs : null };
    });
  }

  private async removeFinalizer(n: GraphNode, finalizer: string): Promise<void> {
    await this.mutateMeta(n, (o) => {
      const fs = (o.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
      if (fs.length === (o.metadata?.finalizers ?? []).length) return undefined;
      return { finalizers: fs.length ? fs : null };
    });
    this.log.info({ object: describe(n), finalizer }, 'removed finalizer');
  }

  /** Reads the object, computes a metadata change (undefined: none) and patches it under its resourceVersion. */
  private async mutateMeta(n: GraphNode, change: (o: KubeObject) => Record<string, unknown> | undefined): Promise<void> {
    const ref = this.refOf(n);
    try {
      const live = await this.client.get(ref, n.name);
      if (live.metadata?.uid !== n.uid) return;
      const meta = change(live);
      if (!meta) return;
      await this.client.patch(ref, n.name, 'merge', { metadata: { ...meta, uid: n.uid, resourceVersion: live.metadata?.resourceVersion } });
    } catch (e) {
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }
}

export function newGarbageCollectorController(): Controller {
  return new GarbageCollector();
}
