/**
 * The pod manager: turns changes of the merged pod set into pod workers (after admission),
 * writes pod status to the API server only when it changed (static pods: to their mirror pod),
 * relists the runtime every second to notice container exits (like Kubernetes' PLEG), kicks
 * every worker each --sync-frequency, reconciles mirror pods, and removes sandboxes of pods the
 * node no longer knows once every source has delivered its first set.
 * Contract: callbacks from the pod set only hand work over; all waiting happens in workers and
 * in the manager's own loop, which ends when the signal aborts.
 */
import type { Logger } from 'pino';
import { admitPod, rejectedStatus, type AdmissionResult } from './admission.js';
import type { ApiObjects } from './api-objects.js';
import type { MirrorPods } from './mirror-pods.js';
import type { PodSet, PodSource } from './pod-set.js';
import { statusMergePatch } from './pod-status.js';
import { isStaticPod, podUid, type Pod, type PodStatusV1 } from './pod-types.js';
import { PodWorker, type WorkerDeps } from './pod-worker.js';
import { LABEL_POD_UID } from './runtime-config.js';
import { OrphanPodDirs } from './volumes/orphans.js';
import { abortableSleep } from '../../util/abort.js';

export interface PodManagerOptions {
  readonly podSet: PodSet;
  readonly api: ApiObjects;
  readonly mirrors?: MirrorPods;
  readonly maxPods: number;
  /** Further admission (node pressure: eviction/eviction-admission.ts). */
  readonly admit?: (pod: Pod) => AdmissionResult;
  readonly hostIp: string;
  readonly workerDeps: Omit<WorkerDeps, 'reportStatus' | 'finalDelete'>;
  readonly syncFrequencyMs: number;
  readonly relistPeriodMs?: number;
  /** Sources that must deliver a first set before unknown sandboxes are removed. */
  readonly sources: readonly PodSource[];
  readonly log: Logger;
}

export class PodManager {
  readonly workers = new Map<string, PodWorker>();
  /** Pods refused by admission, with their status. */
  readonly rejected = new Map<string, { pod: Pod; status: PodStatusV1 }>();
  private readonly written = new Map<string, string>();
  private readonly signatures = new Map<string, string>();
  private readonly statusQueues = new Map<string, { latest?: { pod: Pod; status: PodStatusV1 }; running?: Promise<void> }>();
  /** When the runtime last answered a relist (the /healthz check, like Kubernetes' PLEG). */
  lastRelistOk = Date.now();
  /** Directories of pods no longer on the node (volumes/orphans.ts). */
  private readonly orphanDirs: OrphanPodDirs;

  constructor(private readonly o: PodManagerOptions) {
    this.orphanDirs = new OrphanPodDirs({ rootDir: o.workerDeps.rootDir, ...(o.workerDeps.csi ? { csi: o.workerDeps.csi } : {}), log: o.log });
    o.podSet.onChange((ch) => {
      if (ch.type === 'upsert') this.upsert(ch.pod);
      else this.remove(ch.uid);
    });
  }

  private activeCount(): number {
    let n = 0;
    for (const w of this.workers.values()) if (w.active) n++;
    return n;
  }

  private upsert(pod: Pod): void {
    const uid = podUid(pod);
    const w = this.workers.get(uid);
    if (w) { w.update(pod); return; }
    const rej = this.rejected.get(uid);
    if (rej) { rej.pod = pod; return; }
    const phase = pod.status?.phase;
    if ((phase === 'Succeeded' || phase === 'Failed') && !pod.metadata?.deletionTimestamp && !isStaticPod(pod)) return; // finished before we saw it
    let verdict = admitPod(this.activeCount(), this.o.maxPods);
    if (verdict.admit && this.o.admit) verdict = this.o.admit(pod);
    if (verdict.admit && this.o.workerDeps.hooks) verdict = this.o.workerDeps.hooks.admit(pod);
    if (!verdict.admit && !pod.metadata?.deletionTimestamp) {
      const status = rejectedStatus(verdict.reason ?? 'Rejected', verdict.message ?? '', this.o.hostIp);
      this.rejected.set(uid, { pod, status });
      this.o.log.warn({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, reason: verdict.reason }, 'pod rejected by admission');
      this.o.workerDeps.events.emit(pod, 'Warning', verdict.reason ?? 'Rejected', verdict.message ?? '');
      void this.writeStatus(pod, status).catch((e: Error) => this.o.log.warn({ err: e.message }, 'status write failed'));
      return;
    }
    const worker = new PodWorker(pod, {
      ...this.o.workerDeps,
      reportStatus: (p, s) => this.writeStatus(p, s),
      finalDelete: (p) => (isStaticPod(p) ? Promise.resolve() : this.o.api.finalDelete(p)),
    });
    this.workers.set(uid, worker);
    void worker.finished.then(() => {
      if (this.workers.get(uid) === worker) this.workers.delete(uid);
      this.written.delete(uid);
      this.signatures.delete(uid);
      this.statusQueues.delete(uid);
    });
    worker.kick();
  }

  private remove(uid: string): void {
    this.rejected.delete(uid);
    this.workers.get(uid)?.remove();
  }

  /**
   * Writes the status when it differs from the last one written for this pod. Writes of one pod
   * never overlap and the newest status wins: a status queued behind a write in flight replaces
   * any older queued one, whose caller returns once the newer is taken up.
   */
  async writeStatus(pod: Pod, status: PodStatusV1): Promise<void> {
    const uid = podUid(pod);
    let q = this.statusQueues.get(uid);
    if (!q) this.statusQueues.set(uid, q = {});
    q.latest = { pod, status };
    while (q.running) await q.running;
    const next = q.latest;
    if (!next) return; // taken up by a newer call
    q.latest = undefined;
    const queue = q;
    queue.running = this.writeNow(next.pod, next.status).finally(() => { queue.running = undefined; });
    await queue.running;
  }

  private async writeNow(pod: Pod, status: PodStatusV1): Promise<void> {
    const uid = podUid(pod);
    const key = JSON.stringify(status);
    if (this.written.get(uid) === key) return;
    const ns = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    if (isStaticPod(pod) && !this.o.mirrors) { this.written.set(uid, key); return; }
    const ok = await this.o.api.patchPodStatus(ns, name, statusMergePatch(status));
    if (ok || !isStaticPod(pod)) this.written.set(uid, key);
  }

  /** Every pod the agent knows with its latest status (for /pods and --runonce). */
  pods(): Pod[] {
    const out: Pod[] = [];
    for (const w of this.workers.values()) out.push({ ...w.current, status: w.lastStatus ?? w.current.status ?? {} });
    for (const r of this.rejected.values()) out.push({ ...r.pod, status: r.status });
    return out;
  }

  findPod(namespace: string, name: string): PodWorker | undefined {
    for (const w of this.workers.values()) if (w.current.metadata?.namespace === namespace && w.current.metadata?.name === name) return w;
    return undefined;
  }

  private async relist(): Promise<void> {
    const rt = this.o.workerDeps.runtime;
    const containers = await rt.listContainers();
    const sig = new Map<string, string[]>();
    for (const c of containers) {
      const uid = c.labels[LABEL_POD_UID];
      if (!uid) continue;
      let l = sig.get(uid);
      if (!l) sig.set(uid, l = []);
      l.push(`${c.id}:${c.state}`);
    }
    for (const [uid, w] of this.workers) {
      const s = (sig.get(uid) ?? []).sort().join(',');
      if (this.signatures.get(uid) !== s) {
        this.signatures.set(uid, s);
        w.kick();
      }
    }
    if (this.o.sources.every((s) => this.o.podSet.sourceReady(s))) await this.removeOrphans();
  }

  /** Sandboxes (and so containers) of pods no source wants and no worker owns. */
  private async removeOrphans(): Promise<void> {
    const rt = this.o.workerDeps.runtime;
    for (const sb of await rt.listPodSandbox()) {
      const uid = sb.labels[LABEL_POD_UID];
      if (!uid || this.workers.has(uid) || this.o.podSet.get(uid)) continue;
      this.o.log.info({ sandbox: sb.id, pod: `${sb.metadata.namespace}/${sb.metadata.name}` }, 'removing sandbox of a pod no longer on this node');
      await rt.stopPodSandbox(sb.id).catch(() => undefined);
      await rt.removePodSandbox(sb.id).catch(() => undefined);
    }
    await this.orphanDirs.clean((uid) => this.workers.has(uid) || !!this.o.podSet.get(uid));
  }

  async run(signal: AbortSignal): Promise<void> {
    const relistMs = this.o.relistPeriodMs ?? 1000;
    let lastResync = Date.now();
    let mirroring: Promise<void> | undefined;
    while (!signal.aborted) {
      try {
        await this.relist();
        this.lastRelistOk = Date.now();
      } catch (e) {
        this.o.log.warn({ err: (e as Error).message }, 'runtime relist failed');
      }
      if (Date.now() - lastResync >= this.o.syncFrequencyMs) {
        lastResync = Date.now();
        for (const w of this.workers.values()) w.kick();
      }
      if (this.o.mirrors && !mirroring) {
        const statics = this.o.podSet.all().filter(isStaticPod);
        mirroring = this.o.mirrors.reconcile(statics).finally(() => { mirroring = undefined; });
        // Static pods whose status has no mirror pod to land on yet try again.
        for (const p of statics) if (!this.written.has(podUid(p))) this.workers.get(podUid(p))?.kick();
      }
      await abortableSleep(relistMs, signal);
    }
    await mirroring;
  }

  /** Halts every worker, leaving pods running (agent shutdown). */
  haltAll(): void {
    for (const w of this.workers.values()) w.halt();
  }

  /** Stops every pod (used by --runonce cleanup and tests); waits for the workers to end. */
  async stopAll(): Promise<void> {
    const ws = [...this.workers.values()];
    for (const w of ws) w.remove();
    await Promise.all(ws.map((w) => w.finished));
  }
}
