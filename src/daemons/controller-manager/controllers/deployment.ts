/**
 * The deployment controller: owns ReplicaSets for each Deployment and moves pods from old
 * templates to the current one (RollingUpdate or Recreate), keeps revision history, honours
 * spec.paused, reports progress conditions and scales proportionally mid-rollout.
 *
 * Contract: one deployment key is synced by one worker at a time; every write is a
 * compare-and-swap, so a sync working from a stale cache fails with a conflict and is
 * retried with backoff instead of acting twice. The deployment is also resynced every
 * --deployment-controller-sync-period.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { LabelSelectorObject, Labels } from '../../../api/meta/label-selector.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, WorkQueue, type RestClient, type SharedIndexInformer } from '../deps.js';
import { nonEmptySelectorMatcher } from './claim-pods.js';
import { controllerRefOf, newControllerRef } from './controller-utils.js';
import { DEPLOYMENTS, DeploymentSync, REPLICASETS } from './deployment/context.js';
import { checkPausedConditions } from './deployment/progress.js';
import { rolloutRecreate } from './deployment/recreate.js';
import { rolloutRolling } from './deployment/rolling.js';
import { syncDeploymentStatus } from './deployment/status.js';
import { cleanupDeployment } from './deployment/history.js';
import { getAllReplicaSetsAndSyncRevision, isScalingEvent, scale } from './deployment/sync.js';
import { specOf } from './deployment/util.js';
import { PODS } from './replicaset.js';

type Matcher = (labels: Labels) => boolean;

function selectorOf(d: KubeObject): Matcher | undefined {
  return nonEmptySelectorMatcher(specOf(d).selector as LabelSelectorObject | undefined);
}

export class DeploymentController implements Controller {
  readonly name = 'deployment';
  private queue!: WorkQueue;
  private deployments!: SharedIndexInformer;
  private replicaSets!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('deployment-controller') ?? noopRecorder;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.deployments = ctx.informers.informerFor(DEPLOYMENTS);
    this.replicaSets = ctx.informers.informerFor(REPLICASETS);
    this.pods = ctx.informers.informerFor(PODS);
    this.deployments.addEventHandler({
      onAdd: (d) => this.enqueue(d),
      onUpdate: (_o, d) => this.enqueue(d),
      onDelete: (d) => this.enqueue(deletedObject(d)),
    });
    this.replicaSets.addEventHandler({
      onAdd: (rs) => this.onReplicaSet(rs),
      onUpdate: (old, cur) => this.onReplicaSetUpdate(old, cur),
      onDelete: (x) => { const d = this.deploymentOf(deletedObject(x)); if (d) this.enqueue(d); },
    });
    this.pods.addEventHandler({ onDelete: (p) => this.onPodDelete(deletedObject(p)) });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.deployments.waitForSync(ctx.signal), this.replicaSets.waitForSync(ctx.signal), this.pods.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    const period = ctx.config.deploymentControllerSyncPeriod;
    const timer = period > 0 ? setInterval(() => { for (const d of this.deployments.indexer.list()) this.enqueue(d); }, period) : undefined;
    timer?.unref();
    try {
      await this.queue.runWorkers(ctx.config.concurrentDeploymentSyncs, (key) => this.sync(key), ctx.signal);
    } finally {
      if (timer) clearInterval(timer);
      await this.events.flush();
    }
  }

  private enqueue(d: KubeObject): void { this.queue.add(keyOf(d)); }

  private deploymentOf(rs: KubeObject): KubeObject | undefined {
    const ref = controllerRefOf(rs);
    if (!ref || ref.kind !== 'Deployment') return undefined;
    const d = this.deployments.indexer.get(rs.metadata?.namespace, ref.name);
    return d && d.metadata?.uid === ref.uid ? d : undefined;
  }

  private matchingDeployments(rs: KubeObject): KubeObject[] {
    return this.deployments.indexer.listNamespace(rs.metadata?.namespace ?? '').filter((d) => selectorOf(d)?.(rs.metadata?.labels) ?? false);
  }

  private onReplicaSet(rs: KubeObject): void {
    const d = this.deploymentOf(rs);
    if (d) { this.enqueue(d); return; }
    if (!controllerRefOf(rs)) for (const m of this.matchingDeployments(rs)) this.enqueue(m);
  }

  private onReplicaSetUpdate(old: KubeObject, cur: KubeObject): void {
    if (old.metadata?.resourceVersion === cur.metadata?.resourceVersion) return;
    const oldRef = controllerRefOf(old); const curRef = controllerRefOf(cur);
    const refChanged = oldRef?.uid !== curRef?.uid;
    if (refChanged && oldRef) { const d = this.deploymentOf(old); if (d) this.enqueue(d); }
    if (curRef) { const d = this.deploymentOf(cur); if (d) this.enqueue(d); return; }
    const labelsChanged = JSON.stringify(old.metadata?.labels ?? {}) !== JSON.stringify(cur.metadata?.labels ?? {});
    if (labelsChanged || refChanged) for (const m of this.matchingDeployments(cur)) this.enqueue(m);
  }

  /** Recreate waits for old pods to be gone: a deleted pod may unblock it. */
  private onPodDelete(pod: KubeObject): void {
    const ref = controllerRefOf(pod);
    if (!ref || ref.kind !== 'ReplicaSet') return;
    const rs = this.replicaSets.indexer.get(pod.metadata?.namespace, ref.name);
    const d = rs ? this.deploymentOf(rs) : undefined;
    if (d && (specOf(d).strategy as { type?: string } | undefined)?.type === 'Recreate') this.enqueue(d);
  }

  async sync(key: string): Promise<void> {
    const cached = this.deployments.indexer.getByKey(key);
    if (!cached) return;
    const match = selectorOf(cached);
    if (!match) {
      this.log.warn({ deployment: key }, 'deployment has an empty selector and selects no pods');
      return;
    }
    const namespace = cached.metadata?.namespace ?? '';
    const rsList = await this.claimReplicaSets(cached, match, this.replicaSets.indexer.listNamespace(namespace));
    const rsUids = new Set(rsList.map((r) => r.metadata?.uid));
    const podMap = new Map<string, KubeObject[]>();
    for (const p of this.pods.indexer.listNamespace(namespace)) {
      const uid = controllerRefOf(p)?.uid;
      if (uid && rsUids.has(uid) && match(p.metadata?.labels)) {
        const list = podMap.get(uid) ?? [];
        list.push(p);
        podMap.set(uid, list);
      }
    }
    const s = new DeploymentSync(this.client, this.log, cached, rsList, podMap, {
      after: (ms) => this.queue.addAfter(key, ms),
      rateLimited: () => this.queue.addRateLimited(key),
    }, this.events);
    try {
      await this.reconcile(s);
    } catch (e) {
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }

  private async reconcile(s: DeploymentSync): Promise<void> {
    if (s.d.metadata?.deletionTimestamp) {
      const { newRS, oldRSs } = await getAllReplicaSetsAndSyncRevision(s, false);
      await syncDeploymentStatus(s, [...oldRSs, newRS], newRS);
      return;
    }
    await checkPausedConditions(s);
    const paused = specOf(s.d).paused === true;
    if (paused || isScalingEvent(s.d, s.rsList)) {
      const { newRS, oldRSs } = await getAllReplicaSetsAndSyncRevision(s, false);
      await scale(s, newRS, oldRSs);
      if (paused) await cleanupDeployment(s, s.rsList.filter((rs) => rs.metadata?.uid !== newRS?.metadata?.uid));
      const fresh = s.rsList.find((rs) => rs.metadata?.uid === newRS?.metadata?.uid);
      await syncDeploymentStatus(s, s.rsList, fresh);
      return;
    }
    if ((specOf(s.d).strategy as { type?: string } | undefined)?.type === 'Recreate') await rolloutRecreate(s);
    else await rolloutRolling(s);
  }

  /** ReplicaSets this deployment controls, adopting orphans that match and releasing owned ones that stopped matching. */
  private async claimReplicaSets(d: KubeObject, match: Matcher, all: KubeObject[]): Promise<KubeObject[]> {
    const uid = d.metadata?.uid;
    const deleting = Boolean(d.metadata?.deletionTimestamp);
    const out: KubeObject[] = [];
    let canAdopt: boolean | undefined;
    const ref = { ...REPLICASETS, namespace: d.metadata?.namespace ?? '' };
    for (const rs of all) {
      const owner = controllerRefOf(rs);
      const matches = match(rs.metadata?.labels);
      if (owner) {
        if (owner.uid !== uid) continue;
        if (matches || deleting) { if (matches) out.push(rs); continue; }
        const refs = (rs.metadata?.ownerReferences ?? []).filter((r) => r.uid !== uid);
        await this.patchOwners(ref, rs, refs.length ? refs : null);
        continue;
      }
      if (!matches || deleting || rs.metadata?.deletionTimestamp) continue;
      if (canAdopt === undefined) {
        try {
          const fresh = await this.client.get({ ...DEPLOYMENTS, namespace: d.metadata?.namespace ?? '' }, d.metadata?.name ?? '');
          canAdopt = fresh.metadata?.uid === uid && !fresh.metadata?.deletionTimestamp;
        } catch (e) {
          if (isApiError(e) && e.code === 404) canAdopt = false; else throw e;
        }
      }
      if (!canAdopt) continue;
      const adopted = await this.patchOwners(ref, rs, [...(rs.metadata?.ownerReferences ?? []), newControllerRef(d, 'apps/v1', 'Deployment')]);
      if (adopted) out.push(adopted);
    }
    return out;
  }

  private async patchOwners(ref: typeof REPLICASETS, rs: KubeObject, owners: unknown): Promise<KubeObject | undefined> {
    try {
      return await this.client.patch(ref, rs.metadata?.name ?? '', 'merge', { metadata: { ownerReferences: owners, uid: rs.metadata?.uid, resourceVersion: rs.metadata?.resourceVersion } });
    } catch (e) {
      if (isApiError(e) && (e.code === 404 || e.code === 409 || e.code === 422)) return undefined;
      throw e;
    }
  }
}

export function newDeploymentController(): Controller {
  return new DeploymentController();
}
