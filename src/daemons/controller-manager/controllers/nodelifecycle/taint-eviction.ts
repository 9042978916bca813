/**
 * The NoExecute taint manager (Kubernetes' NoExecuteTaintManager, run inside the node lifecycle
 * controller while --enable-taint-manager is on): a pod on a node with NoExecute taints it
 * does not all tolerate is deleted at once; a pod tolerating them all is deleted after the
 * smallest tolerationSeconds among the tolerations used (never, when none sets it).
 *
 * Keys are `node/<name>` (its NoExecute taints changed) and `pod/<namespace>/<name>` (added,
 * deleted, tolerations or node changed), one worker; each reads the current caches.
 *
 * Contract: one timer per pod; a pod's eviction is scheduled once per taint episode and counted
 * from when the taint was first seen (a later pass keeps the earlier schedule); it is cancelled
 * (with a TaintManagerEviction "Cancelling deletion" event) when the taints go away, become
 * tolerated forever, or the pod goes. After a successful delete the pod is not deleted again
 * until its schedule is cancelled.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../../api/meta/status.js';
import { toleratesTaint, type Toleration } from '../../../../api/resources/core/node-placement.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { deletedObject, keyOf, WorkQueue, type Clock, type RestClient, type SharedIndexInformer } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { nodeNameOf, PODS } from './pod-actions.js';
import { taintsOf, type Taint } from './taints.js';

const DELETE_RETRIES = 5;
const DELETE_RETRY_MS = 10;

export interface TaintEvictionOptions {
  client: RestClient;
  pods: SharedIndexInformer;
  nodes: SharedIndexInformer;
  podsOnNode(nodeName: string): KubeObject[];
  clock: Clock;
  log: Logger;
  events: EventRecorder;
}

export function noExecuteTaints(node: KubeObject): Taint[] {
  return taintsOf(node).filter((t) => t.effect === 'NoExecute');
}

function tolerationsOf(pod: KubeObject): Toleration[] {
  return (((pod.spec ?? {}) as { tolerations?: Toleration[] }).tolerations ?? []);
}

/** Whether every taint is tolerated, and the toleration used for each. */
export function matchingTolerations(taints: readonly Taint[], tolerations: readonly Toleration[]): { all: boolean; used: Toleration[] } {
  const used: Toleration[] = [];
  for (const taint of taints) {
    const t = tolerations.find((x) => toleratesTaint(x, taint));
    if (!t) return { all: false, used: [] };
    used.push(t);
  }
  return { all: true, used };
}

/** The smallest tolerationSeconds (ms) of the tolerations; -1 for forever; 0 without tolerations. */
export function minTolerationMs(used: readonly Toleration[]): number {
  if (used.length === 0) return 0;
  let min = Infinity;
  for (const t of used) {
    if (t.tolerationSeconds === undefined || t.tolerationSeconds === null) continue;
    if (t.tolerationSeconds <= 0) return 0;
    min = Math.min(min, t.tolerationSeconds);
  }
  return min === Infinity ? -1 : min * 1000;
}

interface Scheduled { createdAt: number; timer?: AbortController }

export class TaintEvictionManager {
  private readonly queue: WorkQueue;
  /** Node name → its NoExecute taints (only nodes that have some). */
  private readonly tainted = new Map<string, Taint[]>();
  /** Pod key → its eviction (a fired one keeps no timer). */
  private readonly scheduled = new Map<string, Scheduled>();
  private signal: AbortSignal | undefined;

  constructor(private readonly o: TaintEvictionOptions) {
    this.queue = new WorkQueue({ name: 'noexec-taint', log: o.log, clock: o.clock });
    o.nodes.addEventHandler({
      onAdd: (n) => this.queue.add(`node/${keyOf(n)}`),
      onUpdate: (old, n) => { if (JSON.stringify(noExecuteTaints(old)) !== JSON.stringify(noExecuteTaints(n))) this.queue.add(`node/${keyOf(n)}`); },
      onDelete: (x) => this.queue.add(`node/${keyOf(deletedObject(x))}`),
    });
    o.pods.addEventHandler({
      onAdd: (p) => this.queue.add(`pod/${keyOf(p)}`),
      onUpdate: (old, p) => {
        if (nodeNameOf(old) !== nodeNameOf(p) || JSON.stringify(tolerationsOf(old)) !== JSON.stringify(tolerationsOf(p))) this.queue.add(`pod/${keyOf(p)}`);
      },
      onDelete: (x) => this.queue.add(`pod/${keyOf(deletedObject(x))}`),
    });
  }

  /** Runs until the signal aborts; pending timers are dropped then. */
  async run(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    try {
      await this.queue.runWorkers(1, async (key) => { this.handle(key); }, signal);
    } finally {
      for (const s of this.scheduled.values()) s.timer?.abort();
      this.scheduled.clear();
    }
  }

  private handle(key: string): void {
    const slash = key.indexOf('/');
    const kind = key.slice(0, slash);
    const name = key.slice(slash + 1);
    if (kind === 'node') this.nodeChanged(name); else this.podChanged(name);
  }

  private nodeChanged(name: string): void {
    const node = this.o.nodes.indexer.getByKey(name);
    const taints = node ? noExecuteTaints(node) : [];
    if (taints.length) this.tainted.set(name, taints); else this.tainted.delete(name);
    if (!node) return;
    const now = this.o.clock.now();
    for (const pod of this.o.podsOnNode(name)) {
      if (taints.length === 0) this.cancel(keyOf(pod));
      else this.schedule(keyOf(pod), tolerationsOf(pod), taints, now);
    }
  }

  private podChanged(podKey: string): void {
    const pod = this.o.pods.indexer.getByKey(podKey);
    if (!pod) { this.cancel(podKey); return; }
    const taints = this.tainted.get(nodeNameOf(pod));
    if (taints) this.schedule(podKey, tolerationsOf(pod), taints, this.o.clock.now());
  }

  private schedule(podKey: string, tolerations: readonly Toleration[], taints: readonly Taint[], now: number): void {
    const { all, used } = matchingTolerations(taints, tolerations);
    if (!all) {
      this.o.log.debug({ pod: podKey }, 'not all NoExecute taints are tolerated: deleting the pod now');
      this.cancel(podKey);
      this.add(podKey, now, now);
      return;
    }
    const min = minTolerationMs(used);
    if (min < 0) { this.cancel(podKey); return; }
    const existing = this.scheduled.get(podKey);
    if (existing) {
      if (existing.createdAt < now) return;
      this.cancel(podKey);
    }
    this.add(podKey, now, now + min);
  }

  private add(podKey: string, createdAt: number, fireAt: number): void {
    if (this.scheduled.has(podKey) || !this.signal || this.signal.aborted) return;
    const timer = new AbortController();
    const entry: Scheduled = { createdAt, timer };
    this.scheduled.set(podKey, entry);
    void this.o.clock.sleep(Math.max(0, fireAt - this.o.clock.now()), timer.signal)
      .then(() => this.evict(podKey, entry), () => undefined);
  }

  private cancel(podKey: string): void {
    const s = this.scheduled.get(podKey);
    if (!s) return;
    this.scheduled.delete(podKey);
    if (!s.timer) return;
    s.timer.abort();
    this.o.events.event(this.podRef(podKey), 'Normal', 'TaintManagerEviction', `Cancelling deletion of Pod ${podKey}`);
  }

  private podRef(podKey: string): KubeObject {
    const [namespace, name] = podKey.split('/');
    return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace: namespace ?? '', name: name ?? '' } };
  }

  private async evict(podKey: string, entry: Scheduled): Promise<void> {
    if (this.scheduled.get(podKey) !== entry) return;
    delete entry.timer;
    const [namespace, name] = podKey.split('/');
    this.o.log.info({ pod: podKey }, 'NoExecute taint manager is deleting a pod');
    this.o.events.event(this.podRef(podKey), 'Normal', 'TaintManagerEviction', `Marking for deletion Pod ${podKey}`);
    let err: unknown;
    for (let i = 0; i < DELETE_RETRIES; i++) {
      try {
        await this.o.client.delete({ ...PODS, namespace: namespace ?? '' }, name ?? '');
        return;
      } catch (e) {
        if (isApiError(e) && e.code === 404) return;
        err = e;
        await this.o.clock.sleep(DELETE_RETRY_MS).catch(() => undefined);
      }
    }
    // Failed: forget it so that the next change of the pod or node schedules it again.
    if (this.scheduled.get(podKey) === entry) this.scheduled.delete(podKey);
    this.o.log.warn({ pod: podKey, err: (err as Error).message }, 'taint eviction could not delete a pod');
  }
}
