/**
 * One reconcile of a StatefulSet (after its pods were claimed): resolve the current and
 * update revisions, bring the pods of ordinals [start, start + replicas) into existence,
 * delete condemned ones (higher ordinals), roll pods onto the update revision, then write
 * status and trim revision history.
 *
 * OrderedReady (default): ordinals are created in ascending order, each only once all lower
 * ones are Running, Ready and available (minReadySeconds); condemned pods go highest first,
 * one per sync, only when all others are healthy. Parallel: all creations and deletions at
 * once. Failed (or Succeeded) pods are deleted, then recreated with the same name.
 * RollingUpdate: from the highest ordinal down to the partition, one pod at a time, each
 * after the ones above are healthy again. OnDelete: only new pods get the update revision.
 *
 * Contract: fixed pod names make a double creation impossible (AlreadyExists counts as done),
 * so no expectations are kept; status is written even when a pod write failed, and the
 * write error (a 409 too) is thrown for the key to be retried.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import {
  availability, claimsFor, isFinished, isParallel, isRunningAndReady, isTerminating, minReadySecondsOf, newSetPod, ordinalOf,
  ordinalStart, partitionOf, podRevision, replicasOf, setSpec, updateStrategyType, type Dict,
} from './identity.js';
import type { StatefulPodControl } from './pod-control.js';
import {
  collisionCountOf, currentRevisionOf, planUpdateRevision, revisionsToTrim, templateOf,
} from './revisions.js';
import { computeStatus, statusUnchanged, type SetStatus } from './status.js';

export interface SyncDeps {
  control: StatefulPodControl;
  now: () => number;
  /** Whether a claim of the set's namespace exists (cache). */
  claim: (name: string) => KubeObject | undefined;
  requeueAfter: (ms: number) => void;
  writeStatus: (set: KubeObject, status: SetStatus) => Promise<void>;
}

export class StatefulSetSync {
  private readonly monotonic: boolean;
  private readonly minReady: number;
  private current!: KubeObject;
  private update!: KubeObject;

  constructor(private readonly d: SyncDeps, private readonly set: KubeObject, private readonly pods: KubeObject[], private readonly revisions: KubeObject[]) {
    this.monotonic = !isParallel(set);
    this.minReady = minReadySecondsOf(set);
  }

  async run(): Promise<void> {
    const collisionCount = await this.resolveRevisions();
    let manageError: unknown;
    if (!this.set.metadata?.deletionTimestamp) {
      try { await this.manage(); } catch (e) { manageError = e; }
    }
    const status = computeStatus(this.set, this.pods, this.current.metadata?.name ?? '', this.update.metadata?.name ?? '', collisionCount, this.d.now());
    if (!statusUnchanged(this.set, status)) await this.d.writeStatus(this.set, status);
    for (const r of revisionsToTrim(this.set, this.revisions.filter((x) => x !== this.update), this.pods, status.currentRevision, status.updateRevision)) {
      await this.d.control.deleteRevision(r);
    }
    if (manageError) throw manageError;
    if (this.minReady > 0 && status.readyReplicas !== status.availableReplicas) this.d.requeueAfter(this.minReady * 1000);
  }

  /** Sets the current and update revisions (creating or renumbering one); returns the collision count. */
  private async resolveRevisions(): Promise<number> {
    const plan = planUpdateRevision(this.set, this.revisions);
    let collisionCount = collisionCountOf(this.set);
    if (plan.action === 'use') this.update = plan.revision;
    else if (plan.action === 'renumber') this.update = await this.d.control.renumberRevision(plan.revision, plan.to);
    else {
      const made = await this.d.control.createRevision(this.set, plan.revision, collisionCount);
      this.update = made.revision; collisionCount = made.collisionCount;
      this.revisions.push(made.revision);
    }
    this.current = currentRevisionOf(this.set, this.revisions, this.update);
    return collisionCount;
  }

  private healthy(pod: KubeObject | undefined): boolean {
    return !!pod && !isTerminating(pod) && availability(pod, this.minReady, this.d.now()).available;
  }

  private claimExists = (name: string): boolean => this.d.claim(name) !== undefined;

  private newPod(ordinal: number): KubeObject {
    const useCurrent = updateStrategyType(this.set) === 'RollingUpdate' && ordinal < partitionOf(this.set);
    const rev = useCurrent ? this.current : this.update;
    return newSetPod(this.set, templateOf(rev), ordinal, rev.metadata?.name ?? '');
  }

  /** The pod writes of one sync; returns early wherever OrderedReady must wait. */
  private async manage(): Promise<void> {
    const start = ordinalStart(this.set);
    const n = replicasOf(this.set);
    const slots: Array<KubeObject | undefined> = new Array(n).fill(undefined);
    const condemned: KubeObject[] = [];
    for (const p of this.pods) {
      const o = ordinalOf(p);
      if (o >= start && o < start + n) slots[o - start] = p; else condemned.push(p);
    }
    condemned.sort((a, b) => ordinalOf(b) - ordinalOf(a));
    const { control } = this.d;
    const batch: Array<Promise<void>> = [];
    const settle = async (): Promise<void> => {
      const results = await Promise.allSettled(batch.splice(0));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    };

    for (let i = 0; i < n; i++) {
      const ordinal = start + i;
      const pod = slots[i];
      if (pod && isFinished(pod)) {
        // Replaced once it is gone (its deletion requeues the set).
        if (!isTerminating(pod)) batch.push(control.deletePod(this.set, pod));
        if (this.monotonic) return settle();
        continue;
      }
      if (!pod) {
        batch.push(control.createPod(this.set, this.newPod(ordinal), ordinal, this.claimExists));
        if (this.monotonic) return settle();
        continue;
      }
      if (String((pod.status as Dict | undefined)?.phase ?? '') === 'Pending' && claimsFor(this.set, ordinal).some((c) => !this.claimExists(c.metadata?.name ?? ''))) {
        batch.push(control.createClaims(this.set, pod, ordinal, this.claimExists));
      }
      if (isTerminating(pod) || !isRunningAndReady(pod)) {
        if (this.monotonic) return settle();
        continue;
      }
      const av = availability(pod, this.minReady, this.d.now());
      if (!av.available && this.monotonic) { this.d.requeueAfter(av.waitMs + 100); return settle(); }
    }
    await settle();

    const firstUnhealthy = [...slots, ...condemned].find((p) => !this.healthy(p));
    for (const pod of condemned) {
      if (isTerminating(pod)) {
        if (this.monotonic) return;
        continue;
      }
      if (this.monotonic && !isRunningAndReady(pod) && pod !== firstUnhealthy) return;
      batch.push(this.deleteCondemned(pod));
      if (this.monotonic) return settle();
    }
    await settle();

    if (updateStrategyType(this.set) !== 'RollingUpdate') return;
    const updateName = this.update.metadata?.name ?? '';
    for (let i = n - 1; i >= 0 && start + i >= partitionOf(this.set); i--) {
      const pod = slots[i];
      if (pod && podRevision(pod) !== updateName && !isTerminating(pod)) {
        await control.deletePod(this.set, pod);
        return;
      }
      if (!this.healthy(pod)) return;
    }
  }

  /** Scale-down of one pod; under whenScaled: Delete its claims go with it (owned by the pod). */
  private async deleteCondemned(pod: KubeObject): Promise<void> {
    const policy = (setSpec(this.set).persistentVolumeClaimRetentionPolicy ?? {}) as Dict;
    if (policy.whenScaled === 'Delete') {
      for (const c of claimsFor(this.set, ordinalOf(pod))) {
        const claim = this.d.claim(c.metadata?.name ?? '');
        if (claim) await this.d.control.addClaimOwner(claim, pod, 'v1', 'Pod');
      }
    }
    await this.d.control.deletePod(this.set, pod);
  }
}
