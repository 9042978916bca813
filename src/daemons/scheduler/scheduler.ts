/**
 * The scheduler: informers feed the cache (nodes, bound pods) and the queue (our pending
 * pods); one loop pops a pod, runs the filters and scores over the cached nodes, assumes the
 * pod onto the chosen node and binds it in the background, so the next pod is decided at
 * once while earlier bindings are in flight.
 *
 * Watches:
 *  - pending pods: `spec.nodeName=,spec.schedulerName=<name>` (pods being deleted are skipped);
 *  - bound pods: `spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed` (what nodes hold);
 *  - nodes.
 * Unschedulable pods are retried when a node is added or changes in a way that matters, when
 * a bound pod goes away, and at the latest after the queue's safety-net period.
 *
 * Contract: `run` returns after the signal aborted, the loop stopped and every binding in
 * flight settled. Informer handlers only touch the cache and queue (synchronous, no I/O).
 */
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../../api/resources/types.js';
import { realClock, type Clock } from '../../client/clock.js';
import { deletedObject, type DeletedFinalStateUnknown } from '../../client/informer.js';
import type { SharedInformerFactory } from '../../client/informer-factory.js';
import { DEFAULT_PLUGINS, schedulePod, type Plugins } from './algorithm.js';
import type { Binder } from './binder.js';
import { SchedulerCache } from './cache.js';
import { scheduledMessage, type EventSink } from './events.js';
import type { SchedulerMetrics } from './metrics.js';
import { newPodInfo } from './node-info.js';
import type { PodConditionWriter } from './pod-conditions.js';
import { SchedulingQueue, type QueuedPod } from './queue.js';
import { asNode, asPod, podKey, type Node, type Pod } from './types.js';

export interface SchedulerOptions {
  schedulerName: string;
  informers: SharedInformerFactory;
  binder: Binder;
  events: EventSink;
  /** Sets PodScheduled=False on unschedulable pods (optional). */
  conditions?: PodConditionWriter;
  metrics?: SchedulerMetrics;
  plugins?: Plugins;
  clock?: Clock;
  log?: Logger;
  /** Bindings in flight at once. @default 64 */
  maxBindsInFlight?: number;
  /** Backoff bounds of the queue (ms). @default 1000 and 10000 */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

const POD_REF = { group: '', version: 'v1', resource: 'pods' } as const;
const NODE_REF = { group: '', version: 'v1', resource: 'nodes' } as const;

/** The node fields whose change can make an unschedulable pod fit. */
function schedulingView(n: Node): string {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? '';
  return JSON.stringify([n.metadata?.labels ?? {}, n.spec?.taints ?? [], n.spec?.unschedulable === true, n.status?.allocatable ?? n.status?.capacity ?? {}, ready]);
}

/** The pod fields whose change is worth a new attempt. */
function podSchedulingView(p: Pod): string {
  return JSON.stringify([p.spec ?? {}, p.metadata?.labels ?? {}, p.metadata?.annotations ?? {}]);
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class Scheduler {
  readonly cache = new SchedulerCache();
  readonly queue: SchedulingQueue;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly plugins: Plugins;
  private readonly binds = new Set<Promise<void>>();
  private pendingIndex: { getByKey(key: string): KubeObject | undefined } | undefined;

  constructor(private readonly o: SchedulerOptions) {
    this.clock = o.clock ?? realClock;
    this.log = o.log ?? pino({ level: 'silent' });
    this.plugins = o.plugins ?? DEFAULT_PLUGINS;
    this.queue = new SchedulingQueue({ clock: this.clock, ...(o.initialBackoffMs !== undefined ? { initialBackoffMs: o.initialBackoffMs } : {}), ...(o.maxBackoffMs !== undefined ? { maxBackoffMs: o.maxBackoffMs } : {}) });
  }

  private isOurs(pod: Pod): boolean {
    return (pod.spec?.schedulerName || 'default-scheduler') === this.o.schedulerName && !pod.spec?.nodeName && !pod.metadata?.deletionTimestamp;
  }

  private wireInformers(): void {
    const f = this.o.informers;
    const pending = f.informerFor({ ...POD_REF, fieldSelector: `spec.nodeName=,spec.schedulerName=${this.o.schedulerName}` });
    const bound = f.informerFor({ ...POD_REF, fieldSelector: 'spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed' });
    const nodes = f.informerFor(NODE_REF);
    this.pendingIndex = pending.indexer;
    pending.addEventHandler({
      onAdd: (obj) => { const p = asPod(obj); if (this.isOurs(p)) this.queue.add(podKey(p), p.spec?.priority ?? 0); },
      onUpdate: (oldObj, obj) => {
        const p = asPod(obj);
        if (!this.isOurs(p)) { this.queue.delete(podKey(p)); return; }
        // Status-only writes (our own PodScheduled condition among them) change nothing for scheduling.
        if (podSchedulingView(asPod(oldObj)) !== podSchedulingView(p)) this.queue.add(podKey(p), p.spec?.priority ?? 0);
      },
      onDelete: (obj) => { this.queue.delete(podKey(deletedObject(obj))); },
    });
    bound.addEventHandler({
      onAdd: (obj) => { this.cache.addPod(asPod(obj)); },
      onUpdate: (_old, obj) => { this.cache.addPod(asPod(obj)); },
      onDelete: (obj: KubeObject | DeletedFinalStateUnknown) => {
        this.cache.removePod(asPod(deletedObject(obj)));
        this.queue.moveAllToActiveOrBackoff();
      },
    });
    nodes.addEventHandler({
      onAdd: (obj) => { this.cache.setNode(asNode(obj)); this.queue.moveAllToActiveOrBackoff(); },
      onUpdate: (oldObj, obj) => {
        this.cache.setNode(asNode(obj));
        if (schedulingView(asNode(oldObj)) !== schedulingView(asNode(obj))) this.queue.moveAllToActiveOrBackoff();
      },
      onDelete: (obj) => { this.cache.removeNode(deletedObject(obj).metadata?.name ?? ''); },
    });
  }

  /** Runs until the signal aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.wireInformers();
    this.o.informers.start(signal);
    if (!(await this.o.informers.waitForCacheSync(signal))) return;
    this.log.info({ nodes: this.cache.nodeCount(), pending: this.queue.sizes.active }, 'caches synced; scheduling');
    const housekeeping = this.housekeeping(signal);
    const onAbort = (): void => this.queue.close();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const qp = await this.queue.pop(signal);
        if (!qp) break;
        await this.scheduleOne(qp, signal);
        await yieldToEventLoop();
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.queue.close();
      await Promise.allSettled([...this.binds]);
      await housekeeping;
    }
  }

  private async housekeeping(signal: AbortSignal): Promise<void> {
    for (;;) {
      try { await this.clock.sleep(1000, signal); } catch { return; }
      this.queue.flush();
      const expired = this.cache.expire(this.clock.now());
      if (expired.length) this.log.warn({ pods: expired }, 'assumed pods never showed up bound; forgotten');
    }
  }

  private async scheduleOne(qp: QueuedPod, signal: AbortSignal): Promise<void> {
    const obj = this.pendingIndex?.getByKey(qp.key);
    const pod = obj ? asPod(obj) : undefined;
    if (!pod || !this.isOurs(pod) || this.cache.isAssumed(qp.key)) { this.queue.done(qp.key); return; }
    const started = performance.now();
    const result = schedulePod(newPodInfo(pod), this.cache.listNodes(), this.plugins);
    if (!result.ok) {
      this.log.debug({ pod: qp.key, reason: result.message }, 'unschedulable');
      this.o.events.record(pod, 'Warning', 'FailedScheduling', 'Scheduling', result.message);
      this.o.conditions?.markUnschedulable(pod, result.message);
      this.o.metrics?.attempt('unschedulable', (performance.now() - started) / 1000);
      this.queue.requeue(qp, true);
      return;
    }
    this.cache.assume(pod, result.node);
    while (this.binds.size >= (this.o.maxBindsInFlight ?? 64)) await Promise.race(this.binds);
    const p = this.bind(pod, qp, result.node, started, signal).finally(() => { this.binds.delete(p); });
    this.binds.add(p);
  }

  /** Binds in the background; never rejects. */
  private async bind(pod: Pod, qp: QueuedPod, node: string, started: number, signal: AbortSignal): Promise<void> {
    try {
      await this.o.binder.bind(pod, node, signal);
    } catch (e) {
      this.cache.forget(qp.key);
      if (signal.aborted) return;
      const msg = (e as Error).message;
      this.log.info({ pod: qp.key, node, err: msg }, 'binding failed; requeueing');
      this.o.events.record(pod, 'Warning', 'FailedScheduling', 'Scheduling', `Binding rejected: ${msg}`);
      this.o.metrics?.attempt('error', (performance.now() - started) / 1000);
      this.queue.requeue(qp, false);
      return;
    }
    this.cache.finishBinding(qp.key, this.clock.now());
    this.queue.done(qp.key);
    this.log.debug({ pod: qp.key, node }, 'bound');
    this.o.events.record(pod, 'Normal', 'Scheduled', 'Binding', scheduledMessage(pod, node));
    this.o.metrics?.attempt('scheduled', (performance.now() - started) / 1000);
  }
}
