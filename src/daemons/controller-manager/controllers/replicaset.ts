/**
 * The replica set controller: keeps `spec.replicas` active pods matching each ReplicaSet's
 * selector, adopting orphans and releasing pods that stopped matching, and reports status.
 * The same loop drives ReplicationControllers (replicationcontroller.ts) with another kind.
 *
 * Contract: one key is synced by one worker at a time (work-queue guarantee); a sync never
 * computes a diff while expectations of the key are unmet, so a lagging pod watch cannot
 * cause double creation or deletion.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { selectorFromSet, type LabelSelectorObject, type Labels } from '../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { claimPods, nonEmptySelectorMatcher } from './claim-pods.js';
import { metaTime } from '../../../api/meta/time.js';
import { sameInGoForm } from '../../../api/codec/go-json.js';
import {
  ControllerExpectations, controllerRefOf, isPodActive, isPodAvailable, isPodReady, newControllerRef,
  podFromTemplate, podsToDelete, slowStartBatch,
} from './controller-utils.js';

/** At most this many pods are created or deleted per sync. */
export const BURST_REPLICAS = 500;

export const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };

type Dict = Record<string, unknown>;

export interface ReplicaKind {
  controllerName: string;
  /** Reporting component of its events. */
  component: string;
  apiVersion: string;
  kind: string;
  ref: ResourceRef;
  /** Label matcher of an object's selector; undefined when it selects nothing. */
  selector(obj: KubeObject): ((labels: Labels) => boolean) | undefined;
  workers(ctx: ControllerContext): number;
}

export const REPLICA_SET_KIND: ReplicaKind = {
  controllerName: 'replicaset',
  component: 'replicaset-controller',
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  ref: { group: 'apps', version: 'v1', resource: 'replicasets' },
  selector(obj) {
    return nonEmptySelectorMatcher((obj.spec as Dict | undefined)?.selector as LabelSelectorObject | undefined);
  },
  workers: (ctx) => ctx.config.concurrentReplicasetSyncs,
};

function spec(o: KubeObject): Dict { return (o.spec ?? {}) as Dict; }

export function replicasOf(o: KubeObject): number {
  const r = spec(o).replicas;
  return typeof r === 'number' ? r : 1;
}

export class ReplicaController implements Controller {
  readonly name: string;
  readonly expectations = new ControllerExpectations();
  private queue!: WorkQueue;
  private owners!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;

  constructor(private readonly kind: ReplicaKind) { this.name = kind.controllerName; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.(this.kind.component) ?? noopRecorder;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.owners = ctx.informers.informerFor(this.kind.ref);
    this.pods = ctx.informers.informerFor(PODS);
    this.owners.addEventHandler({
      onAdd: (o) => this.enqueue(o),
      onUpdate: (_old, cur) => this.enqueue(cur),
      onDelete: (x) => { const o = deletedObject(x); this.expectations.delete(keyOf(o)); this.enqueue(o); },
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.addPod(p),
      onUpdate: (o, c) => this.updatePod(o, c),
      onDelete: (p) => this.deletePod(deletedObject(p)),
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.owners.waitForSync(ctx.signal), this.pods.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    try {
      await this.queue.runWorkers(this.kind.workers(ctx), (key) => this.sync(key), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  enqueue(o: KubeObject, afterMs = 0): void {
    if (afterMs > 0) this.queue.addAfter(keyOf(o), afterMs);
    else this.queue.add(keyOf(o));
  }

  private ownerOf(pod: KubeObject): KubeObject | undefined {
    const ref = controllerRefOf(pod);
    if (!ref || ref.kind !== this.kind.kind) return undefined;
    const owner = this.owners.indexer.get(pod.metadata?.namespace, ref.name);
    return owner && owner.metadata?.uid === ref.uid ? owner : undefined;
  }

  private matchingOwners(pod: KubeObject): KubeObject[] {
    return this.owners.indexer.listNamespace(pod.metadata?.namespace ?? '').filter((o) => this.kind.selector(o)?.(pod.metadata?.labels) ?? false);
  }

  private addPod(pod: KubeObject): void {
    if (pod.metadata?.deletionTimestamp) { this.deletePod(pod); return; }
    if (controllerRefOf(pod)) {
      const owner = this.ownerOf(pod);
      if (!owner) return;
      this.expectations.creationObserved(keyOf(owner));
      this.enqueue(owner);
      return;
    }
    for (const o of this.matchingOwners(pod)) this.enqueue(o);
  }

  private updatePod(old: KubeObject, cur: KubeObject): void {
    if (old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
    const labelsChanged = JSON.stringify(old.metadata?.labels ?? {}) !== JSON.stringify(cur.metadata?.labels ?? {});
    if (cur.metadata?.deletionTimestamp) {
      this.deletePod(cur);
      if (labelsChanged) this.deletePod(old);
      return;
    }
    const oldRef = controllerRefOf(old); const curRef = controllerRefOf(cur);
    const refChanged = oldRef?.uid !== curRef?.uid;
    if (refChanged && oldRef) { const o = this.ownerOf(old); if (o) this.enqueue(o); }
    if (curRef) {
      const owner = this.ownerOf(cur);
      if (!owner) return;
      this.enqueue(owner);
      const minReady = Number(spec(owner).minReadySeconds ?? 0);
      if (minReady > 0 && !isPodReady(old) && isPodReady(cur)) this.enqueue(owner, minReady * 1000 + 1000);
      return;
    }
    if (labelsChanged || refChanged) for (const o of this.matchingOwners(cur)) this.enqueue(o);
  }

  private deletePod(pod: KubeObject): void {
    const owner = this.ownerOf(pod);
    if (!owner) return;
    const key = keyOf(owner);
    this.expectations.deletionObserved(key, keyOf(pod));
    this.enqueue(owner);
  }

  /** One reconcile of `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    const { namespace } = splitKey(key);
    const owner = this.owners.indexer.getByKey(key);
    if (!owner) { this.expectations.delete(key); return; }
    const needsSync = this.expectations.satisfied(key) && !owner.metadata?.deletionTimestamp;
    const claimed = await this.claim(owner, this.pods.indexer.listNamespace(namespace ?? ''));
    const active = claimed.filter(isPodActive);
    let manageError: unknown;
    let diff = 0;
    if (needsSync) {
      diff = active.length - replicasOf(owner);
      try { await this.manageReplicas(key, owner, active, diff); } catch (e) { manageError = e; }
    }
    const updated = await this.updateStatus(owner, active, manageError, diff);
    const minReady = Number(spec(owner).minReadySeconds ?? 0);
    const st = (updated.status ?? {}) as Dict;
    if (!manageError && minReady > 0 && st.readyReplicas === replicasOf(owner) && st.availableReplicas !== replicasOf(owner)) {
      this.queue.addAfter(key, minReady * 1000);
    }
    if (manageError) throw manageError;
  }

  /**
   * Pods this owner controls after adopting matching orphans and releasing owned pods that
   * no longer match (Kubernetes' ClaimPods).
   */
  private claim(owner: KubeObject, pods: KubeObject[]): Promise<KubeObject[]> {
    const match = this.kind.selector(owner);
    return claimPods(owner, pods, (pod) => match?.(pod.metadata?.labels) ?? false,
      { adopt: (pod) => this.adoptPod(owner, pod), release: (pod) => this.releasePod(owner, pod) }, () => this.recheckOwner(owner));
  }

  /** A fresh read: adopt only if the owner still exists with the same uid and is not being deleted. */
  private async recheckOwner(owner: KubeObject): Promise<boolean> {
    try {
      const fresh = await this.client.get({ ...this.kind.ref, namespace: owner.metadata?.namespace ?? '' }, owner.metadata?.name ?? '');
      return fresh.metadata?.uid === owner.metadata?.uid && !fresh.metadata?.deletionTimestamp;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return false;
      throw e;
    }
  }

  private podRef(pod: KubeObject): ResourceRef { return { ...PODS, namespace: pod.metadata?.namespace ?? '' }; }

  private async adoptPod(owner: KubeObject, pod: KubeObject): Promise<KubeObject | undefined> {
    const ref = newControllerRef(owner, this.kind.apiVersion, this.kind.kind);
    const patch = { metadata: { ownerReferences: [...(pod.metadata?.ownerReferences ?? []), ref], uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion } };
    try {
      const res = await this.client.patch(this.podRef(pod), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ controller: this.name, owner: keyOf(owner), pod: keyOf(pod) }, 'adopted pod');
      return res;
    } catch (e) {
      // Gone or changed since we looked: the informer will bring the next state.
      if (isApiError(e) && (e.code === 404 || e.code === 409 || e.code === 422)) return undefined;
      throw e;
    }
  }

  private async releasePod(owner: KubeObject, pod: KubeObject): Promise<void> {
    const refs = (pod.metadata?.ownerReferences ?? []).filter((r) => r.uid !== owner.metadata?.uid);
    const patch = { metadata: { ownerReferences: refs.length ? refs : null, uid: pod.metadata?.uid, resourceVersion: pod.metadata?.resourceVersion } };
    try {
      await this.client.patch(this.podRef(pod), pod.metadata?.name ?? '', 'merge', patch);
      this.log.info({ controller: this.name, owner: keyOf(owner), pod: keyOf(pod) }, 'released pod');
    } catch (e) {
      if (isApiError(e) && (e.code === 404 || e.code === 409 || e.code === 422)) return;
      throw e;
    }
  }

  private async manageReplicas(key: string, owner: KubeObject, active: KubeObject[], diff: number): Promise<void> {
    const namespace = owner.metadata?.namespace ?? '';
    if (diff < 0) {
      const n = Math.min(-diff, BURST_REPLICAS);
      this.expectations.expectCreations(key, n);
      const template = (spec(owner).template ?? {}) as Dict;
      const ref = newControllerRef(owner, this.kind.apiVersion, this.kind.kind);
      const pod = podFromTemplate(template, namespace, `${owner.metadata?.name ?? ''}-`, ref);
      const res = await slowStartBatch(n, 1, async () => {
        try {
          const created = await this.client.create({ ...PODS, namespace }, structuredClone(pod));
          this.events.event(owner, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata?.name ?? ''}`);
        } catch (e) {
          this.events.event(owner, 'Warning', 'FailedCreate', `Error creating: ${(e as Error).message}`);
          throw e;
        }
      });
      for (let i = res.succeeded; i < n; i++) this.expectations.creationObserved(key);
      if (res.error) throw res.error;
      return;
    }
    if (diff > 0) {
      const n = Math.min(diff, BURST_REPLICAS);
      const victims = podsToDelete(active, this.relatedPods(owner), n);
      this.expectations.expectDeletions(key, victims.map(keyOf));
      const results = await Promise.allSettled(victims.map(async (p) => {
        try {
          await this.client.delete({ ...PODS, namespace }, p.metadata?.name ?? '', { preconditions: { uid: p.metadata?.uid ?? '' } });
          this.events.event(owner, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata?.name ?? ''}`);
        } catch (e) {
          this.expectations.deletionObserved(key, keyOf(p));
          if (!(isApiError(e) && (e.code === 404 || e.code === 409))) {
            this.events.event(owner, 'Warning', 'FailedDelete', `Error deleting: ${(e as Error).message}`);
            throw e;
          }
        }
      }));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    }
  }

  /** Active pods of every owner of this kind sharing the pod template's controller (for ranking). */
  private relatedPods(owner: KubeObject): KubeObject[] {
    const uids = new Set([owner.metadata?.uid]);
    const parent = controllerRefOf(owner);
    if (parent) {
      for (const o of this.owners.indexer.listNamespace(owner.metadata?.namespace ?? '')) {
        if (controllerRefOf(o)?.uid === parent.uid) uids.add(o.metadata?.uid);
      }
    }
    return this.pods.indexer.listNamespace(owner.metadata?.namespace ?? '').filter((p) => uids.has(controllerRefOf(p)?.uid));
  }

  private computeStatus(owner: KubeObject, active: KubeObject[], manageError: unknown, diff: number): Dict {
    const now = Date.now();
    const minReady = Number(spec(owner).minReadySeconds ?? 0);
    const templateLabels = (((spec(owner).template ?? {}) as Dict).metadata as Dict | undefined)?.labels as Record<string, string> | undefined;
    const fully = selectorFromSet(templateLabels);
    const old = (owner.status ?? {}) as Dict;
    let conditions = ((old.conditions ?? []) as Array<Dict>).filter((c) => c.type !== 'ReplicaFailure');
    if (manageError) {
      const prev = ((old.conditions ?? []) as Array<Dict>).find((c) => c.type === 'ReplicaFailure');
      const reason = diff < 0 ? 'FailedCreate' : 'FailedDelete';
      const message = (manageError as Error).message ?? String(manageError);
      conditions = [...conditions, { type: 'ReplicaFailure', status: 'True', reason, message, lastTransitionTime: (prev?.lastTransitionTime as string | undefined) ?? metaTime(now) }];
    }
    const status: Dict = {
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) => fully.matches(p.metadata?.labels)).length,
      readyReplicas: active.filter(isPodReady).length,
      availableReplicas: active.filter((p) => isPodAvailable(p, minReady, now)).length,
      observedGeneration: owner.metadata?.generation ?? 0,
    };
    if (conditions.length) status.conditions = conditions;
    return status;
  }

  private async updateStatus(owner: KubeObject, active: KubeObject[], manageError: unknown, diff: number): Promise<KubeObject> {
    const status = this.computeStatus(owner, active, manageError, diff);
    const old = (owner.status ?? {}) as Dict;
    const same = ['replicas', 'fullyLabeledReplicas', 'readyReplicas', 'availableReplicas', 'observedGeneration']
      .every((k) => (old[k] ?? 0) === status[k]) && sameInGoForm('k8s.io.api.apps.v1.ReplicaSetCondition', old.conditions ?? [], status.conditions ?? []);
    if (same) return owner;
    const ref = { ...this.kind.ref, namespace: owner.metadata?.namespace ?? '' };
    let target = owner;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.client.update(ref, { ...target, status }, { subresource: 'status' });
      } catch (e) {
        if (!(isApiError(e) && e.code === 409) || attempt >= 1) throw e;
        target = await this.client.get(ref, owner.metadata?.name ?? '');
        if (target.metadata?.uid !== owner.metadata?.uid) return target;
      }
    }
  }
}

export function newReplicaSetController(): Controller {
  return new ReplicaController(REPLICA_SET_KIND);
}
