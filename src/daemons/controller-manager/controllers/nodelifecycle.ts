/**
 * The node lifecycle controller: notices nodes that stopped reporting and gets their pods out.
 *
 * Every --node-monitor-period a pass over the cached nodes (nodelifecycle/node-conditions.ts)
 * sets the conditions of a node silent beyond its grace period to Unknown, marks the pods of a
 * node that just stopped being Ready as not ready (an event NodeNotReady on the node), and then
 * queues the node, per zone, for one of two kinds of eviction:
 *  - TaintBasedEvictions (with --enable-taint-manager): the NoExecute taint
 *    node.kubernetes.io/unreachable (Ready Unknown) or not-ready (Ready False) is added, and
 *    the taint manager (nodelifecycle/taint-eviction.ts) deletes the pods that do not tolerate
 *    it, at once or after their tolerationSeconds;
 *  - otherwise (the reference's default): once the node has been not Ready for
 *    --pod-eviction-timeout its pods are deleted, DaemonSet pods excepted.
 * The per-zone queues (nodelifecycle/rate-limited-queue.ts) hand nodes out at the rate the
 * zone's state allows (nodelifecycle/zones.ts); when every zone is fully disrupted nothing is
 * evicted at all. A node Ready again has its NoExecute taints removed and its queued eviction
 * cancelled. With TaintNodesByCondition, NoSchedule taints follow the node's conditions and
 * spec.unschedulable (nodelifecycle/taints.ts). Pods bound later to a node that is not Ready
 * are marked not ready too.
 *
 * Contract: decisions use the controller's clock (`clock`), never the nodes' timestamps;
 * passes never overlap; the zone queues change only under the evictor lock; every write is
 * optimistic (cached resourceVersion), retried by the next pass or with backoff.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import {
  keyOf, realClock, WorkQueue, type Clock, type ResourceRef, type RestClient, type SharedIndexInformer,
} from '../deps.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { AsyncMutex } from './nodelifecycle/async-mutex.js';
import { assessNodeHealth, conditionOf, type HealthAssessment, type NodeCondition, type NodeHealth } from './nodelifecycle/node-conditions.js';
import { deletePodsOfNode, eventRef, markPodsNotReady, nodeNameOf, recordNodeEvent, PODS } from './nodelifecycle/pod-actions.js';
import type { TimedValue } from './nodelifecycle/rate-limited-queue.js';
import { TaintEvictionManager } from './nodelifecycle/taint-eviction.js';
import {
  hasTaint, noScheduleTaintDiff, NODES, NOT_READY_NO_EXECUTE, swapNodeTaints, UNREACHABLE_NO_EXECUTE, type Taint,
} from './nodelifecycle/taints.js';
import { ZoneEvictors } from './nodelifecycle/zone-evictors.js';
import { excludedFromDisruption, zoneKey, type EvictionRates } from './nodelifecycle/zones.js';

const LEASE_NAMESPACE = 'kube-node-lease';
const LEASES: ResourceRef = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: LEASE_NAMESPACE };
const DAEMONSETS: ResourceRef = { group: 'apps', version: 'v1', resource: 'daemonsets' };
const NODE_NAME_INDEX = 'spec.nodeName';
/** How often the zone queues are worked (Kubernetes' NodeEvictionPeriod). */
export const NODE_EVICTION_PERIOD_MS = 100;
const HEALTH_UPDATE_RETRIES = 5;
const HEALTH_RETRY_SLEEP_MS = 20;
const NODE_UPDATE_WORKERS = 8;
const POD_UPDATE_WORKERS = 4;

export interface NodeLifecycleOptions {
  /** Time for every decision (grace periods, eviction timeout, rates). @default the real clock */
  clock?: Clock;
}

interface Settings extends EvictionRates {
  monitorPeriodMs: number;
  monitorGraceMs: number;
  startupGraceMs: number;
  podEvictionTimeoutMs: number;
  unhealthyZoneThreshold: number;
  useTaintBasedEvictions: boolean;
  taintNodesByCondition: boolean;
}

async function forEachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => { while (next < items.length) await fn(items[next++] as T); };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export class NodeLifecycleController implements Controller {
  readonly name = 'nodelifecycle';
  /** Completed monitor passes and zone-queue passes (tests wait for them to move on). */
  monitorPasses = 0;
  evictionPasses = 0;
  private readonly clock: Clock;
  private s!: Settings;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;
  private nodes!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private leases!: SharedIndexInformer;
  private daemonSets!: SharedIndexInformer;
  private readonly known = new Map<string, KubeObject>();
  private readonly health = new Map<string, NodeHealth>();
  /** Per zone: its state, and the nodes waiting for their NoExecute taint or (legacy) their pods' deletion. */
  private zones!: ZoneEvictors;
  /** Nodes whose pods still have to be marked not ready. */
  private readonly podsToRetry = new Set<string>();
  private readonly evictor = new AsyncMutex();

  constructor(opts: NodeLifecycleOptions = {}) { this.clock = opts.clock ?? realClock; }

  async run(ctx: ControllerContext): Promise<void> {
    const c = ctx.config;
    const runTaintManager = c.enableTaintManager;
    this.s = {
      monitorPeriodMs: c.nodeMonitorPeriod, monitorGraceMs: c.nodeMonitorGracePeriod, startupGraceMs: c.nodeStartupGracePeriod,
      podEvictionTimeoutMs: c.podEvictionTimeout, unhealthyZoneThreshold: c.unhealthyZoneThreshold,
      healthy: c.nodeEvictionRate, secondary: c.secondaryNodeEvictionRate, largeClusterThreshold: c.largeClusterSizeThreshold,
      useTaintBasedEvictions: c.featureGates['TaintBasedEvictions'] === true && runTaintManager,
      taintNodesByCondition: c.featureGates['TaintNodesByCondition'] === true,
    };
    this.zones = new ZoneEvictors(this.s, this.s.unhealthyZoneThreshold, this.clock);
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('node-controller') ?? noopRecorder;
    this.nodes = ctx.informers.informerFor(NODES);
    this.pods = ctx.informers.informerFor(PODS);
    this.leases = ctx.informers.informerFor(LEASES);
    this.daemonSets = ctx.informers.informerFor(DAEMONSETS);
    try {
      this.pods.addIndexers({ [NODE_NAME_INDEX]: (p) => (nodeNameOf(p) ? [nodeNameOf(p)] : []) });
    } catch (e) {
      // Another controller on the shared informer added the same index first.
      if (!/already exists/.test((e as Error).message)) throw e;
    }
    const podQueue = new WorkQueue({ name: 'nodelifecycle-pods', log: ctx.log, clock: this.clock });
    this.pods.addEventHandler({
      onAdd: (p) => { if (nodeNameOf(p)) podQueue.add(keyOf(p)); },
      onUpdate: (old, p) => { if (nodeNameOf(p) && nodeNameOf(p) !== nodeNameOf(old)) podQueue.add(keyOf(p)); },
    });
    const noScheduleQueue = new WorkQueue({ name: 'nodelifecycle-noschedule', log: ctx.log, clock: this.clock });
    if (this.s.taintNodesByCondition) {
      this.nodes.addEventHandler({ onAdd: (n) => noScheduleQueue.add(keyOf(n)), onUpdate: (_o, n) => noScheduleQueue.add(keyOf(n)) });
    }
    const taintManager = runTaintManager ? new TaintEvictionManager({
      client: ctx.client, pods: this.pods, nodes: this.nodes, podsOnNode: (n) => this.podsOnNode(n),
      clock: this.clock, log: ctx.log.child({ part: 'taint-manager' }), events: ctx.events?.('taint-controller') ?? noopRecorder,
    }) : undefined;

    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.nodes, this.pods, this.leases, this.daemonSets].map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    this.log.info({ taintBasedEvictions: this.s.useTaintBasedEvictions, taintNodesByCondition: this.s.taintNodesByCondition, taintManager: runTaintManager }, 'starting node lifecycle controller');
    const loops: Array<Promise<void>> = [
      this.every(this.s.monitorPeriodMs, () => this.monitorNodeHealth(), ctx.signal),
      this.every(NODE_EVICTION_PERIOD_MS, () => this.zoneQueuePass(), ctx.signal),
      podQueue.runWorkers(POD_UPDATE_WORKERS, (key) => this.processPod(key), ctx.signal),
    ];
    if (this.s.taintNodesByCondition) loops.push(noScheduleQueue.runWorkers(NODE_UPDATE_WORKERS, (name) => this.noScheduleTaintingPass(name), ctx.signal));
    if (taintManager) loops.push(taintManager.run(ctx.signal));
    try {
      await Promise.all(loops);
    } finally {
      await this.events.flush();
    }
  }

  /** Runs `fn`, then waits `periodMs`, until the signal aborts (Kubernetes' wait.Until). */
  private async every(periodMs: number, fn: () => Promise<void>, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await fn();
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'node lifecycle pass failed');
      }
      try { await this.clock.sleep(periodMs, signal); } catch { return; }
    }
  }

  private podsOnNode(nodeName: string): KubeObject[] {
    return this.pods.indexer.byIndex(NODE_NAME_INDEX, nodeName);
  }

  /** One pass over all nodes (Kubernetes' monitorNodeHealth). */
  async monitorNodeHealth(): Promise<void> {
    const nodes = [...this.nodes.indexer.list()].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    const names = new Set(nodes.map(keyOf));
    for (const node of nodes) {
      const name = keyOf(node);
      if (this.known.has(name)) { this.zones.addZone(node); continue; }
      recordNodeEvent(this.events, node, 'Normal', 'RegisteredNode', `Registered Node ${name} in Controller`);
      this.known.set(name, node);
      this.zones.addZone(node);
      if (this.s.useTaintBasedEvictions) await this.markNodeAsReachable(node); else await this.cancelPodEviction(node);
    }
    for (const [name, node] of this.known) {
      if (names.has(name)) continue;
      recordNodeEvent(this.events, node, 'Normal', 'RemovingNode', `Removing Node ${name} from Controller`);
      this.known.delete(name);
      this.health.delete(name);
      this.podsToRetry.delete(name);
    }
    const zoneReady = new Map<string, Array<NodeCondition | undefined>>();
    await forEachBounded(nodes, NODE_UPDATE_WORKERS, (node) => this.monitorNode(node, zoneReady));
    await this.handleDisruption(zoneReady, nodes);
    this.monitorPasses++;
  }

  private async monitorNode(cached: KubeObject, zoneReady: Map<string, Array<NodeCondition | undefined>>): Promise<void> {
    const name = keyOf(cached);
    let node = cached;
    let r: HealthAssessment | undefined;
    for (let attempt = 1; !r; attempt++) {
      try {
        r = await this.tryUpdateNodeHealth(node);
      } catch (e) {
        if (attempt >= HEALTH_UPDATE_RETRIES) {
          this.log.warn({ node: name, err: (e as Error).message }, 'could not update node health; no pods will be evicted from it this pass');
          return;
        }
        await this.clock.sleep(HEALTH_RETRY_SLEEP_MS);
        try {
          node = await this.client.get(NODES, name);
        } catch (err) {
          this.log.info({ node: name, err: (err as Error).message }, 'could not re-read the node (deleted?)');
          return;
        }
      }
    }
    if (!excludedFromDisruption(node)) {
      const zone = zoneKey(node);
      zoneReady.set(zone, [...(zoneReady.get(zone) ?? []), r.currentReady]);
    }
    if (r.currentReady) {
      if (this.s.useTaintBasedEvictions) await this.processTaintBasedEviction(node, r.observedReady);
      else await this.processPodEviction(node, r.observedReady);
      const becameNotReady = r.currentReady.status !== 'True' && r.observedReady.status === 'True';
      if (becameNotReady) this.events.event(eventRef(node, 'Node'), 'Normal', 'NodeNotReady', `Node ${name} status is now: NodeNotReady`);
      if (becameNotReady || (this.podsToRetry.has(name) && r.observedReady.status !== 'True')) {
        try {
          await markPodsNotReady(this.client, this.events, this.podsOnNode(name), name, this.clock.now());
        } catch (e) {
          this.log.info({ node: name, err: (e as Error).message }, 'could not mark all pods of the node not ready; retrying next pass');
          this.podsToRetry.add(name);
          return;
        }
      }
    }
    this.podsToRetry.delete(name);
  }

  /** Judges one node and writes its Unknown conditions when it went silent. */
  private async tryUpdateNodeHealth(node: KubeObject): Promise<HealthAssessment> {
    const name = keyOf(node);
    const lease = this.leases.indexer.get(LEASE_NAMESPACE, name);
    const r = assessNodeHealth(node, this.health.get(name), lease, this.clock.now(), { monitorGraceMs: this.s.monitorGraceMs, startupGraceMs: this.s.startupGraceMs });
    this.health.set(name, r.health);
    if (r.write) {
      await this.client.update(NODES, r.write, { subresource: 'status' });
      this.health.set(name, { ...r.health, status: r.write.status, readyTransitionTimestamp: this.clock.now() });
      this.log.info({ node: name, ready: r.currentReady?.status, reason: r.currentReady?.reason }, 'node stopped posting status: conditions set to Unknown');
    }
    return r;
  }

  private async processTaintBasedEviction(node: KubeObject, observed: NodeCondition): Promise<void> {
    const name = keyOf(node);
    const swapNow = async (add: Taint, remove: Taint): Promise<void> => {
      if (!await swapNodeTaints(this.client, node, [add], [remove], () => this.clock.now(), this.log)) this.log.warn({ node: name }, 'could not swap NoExecute taints; trying again next pass');
    };
    switch (observed.status) {
      case 'False':
        // Already tainted unreachable: switch at once instead of queueing behind the rate limit.
        if (hasTaint(node, UNREACHABLE_NO_EXECUTE)) await swapNow(NOT_READY_NO_EXECUTE, UNREACHABLE_NO_EXECUTE);
        else if (await this.queueNode(node)) this.log.info({ node: name }, 'node is not ready: queued for tainting');
        break;
      case 'Unknown':
        if (hasTaint(node, NOT_READY_NO_EXECUTE)) await swapNow(UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE);
        else if (await this.queueNode(node)) this.log.info({ node: name }, 'node is unresponsive: queued for tainting');
        break;
      case 'True':
        if (await this.markNodeAsReachable(node)) this.log.info({ node: name }, 'node is healthy again: NoExecute taint eviction cancelled');
        break;
      default:
    }
  }

  private async processPodEviction(node: KubeObject, observed: NodeCondition): Promise<void> {
    const name = keyOf(node);
    const h = this.health.get(name);
    const now = this.clock.now();
    if (!h) return;
    if ((observed.status === 'False' && now > h.readyTransitionTimestamp + this.s.podEvictionTimeoutMs)
      || (observed.status === 'Unknown' && now > h.probeTimestamp + this.s.podEvictionTimeoutMs)) {
      if (await this.queueNode(node)) this.log.info({ node: name, ready: observed.status }, 'node not ready beyond the pod eviction timeout: its pods are queued for eviction');
    } else if (observed.status === 'True') {
      if (await this.cancelPodEviction(node)) this.log.info({ node: name }, 'node is ready again: pod eviction cancelled');
    }
  }

  /** Queues the node in its zone (for its NoExecute taint, or legacy: its pods' deletion); false when queued already. */
  private queueNode(node: KubeObject): Promise<boolean> {
    return this.evictor.run(async () => this.zones.queueFor(node).add(keyOf(node), node.metadata?.uid ?? ''));
  }

  private cancelPodEviction(node: KubeObject): Promise<boolean> {
    return this.evictor.run(async () => this.zones.queueFor(node).remove(keyOf(node)));
  }

  /** Removes the NoExecute taints of the node and its place in the taint queue; true when it was queued. */
  private markNodeAsReachable(node: KubeObject): Promise<boolean> {
    return this.evictor.run(async () => {
      const remove = [UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE].filter((t) => hasTaint(node, t));
      if (remove.length && !await swapNodeTaints(this.client, node, [], remove, () => this.clock.now(), this.log)) return false;
      return this.zones.queueFor(node).remove(keyOf(node));
    });
  }

  /** Zone states from this pass's Ready conditions, and what leaving or entering "all down" means for the nodes. */
  private async handleDisruption(zoneReady: Map<string, Array<NodeCondition | undefined>>, nodes: readonly KubeObject[]): Promise<void> {
    const { change, changed } = await this.evictor.run(async () => this.zones.update(zoneReady));
    for (const [zone, state] of changed) this.log.info({ zone, state }, 'zone changed state');
    if (change === 'entered-full') {
      this.log.warn('all nodes are not ready: entering master disruption mode, evictions stop');
      for (const node of nodes) {
        if (this.s.useTaintBasedEvictions) await this.markNodeAsReachable(node); else await this.cancelPodEviction(node);
      }
    } else if (change === 'left-full') {
      this.log.info('some nodes are ready again: leaving master disruption mode');
      // Give every node a fresh grace period: none could be heard while we were cut off.
      const now = this.clock.now();
      for (const node of nodes) {
        const h = this.health.get(keyOf(node));
        if (h) this.health.set(keyOf(node), { ...h, probeTimestamp: now, readyTransitionTimestamp: now });
      }
    }
  }

  /** Works the zone queues once (Kubernetes' doNoExecuteTaintingPass / doEvictionPass). */
  async zoneQueuePass(): Promise<void> {
    const act = this.s.useTaintBasedEvictions ? (v: TimedValue) => this.taintNode(v) : (v: TimedValue) => this.deletePods(v);
    await this.evictor.run(async () => { for (const q of this.zones.allQueues()) await q.try(act); });
    this.evictionPasses++;
  }

  private async taintNode(v: TimedValue): Promise<{ done: boolean; retryAfterMs?: number }> {
    const node = this.nodes.indexer.getByKey(v.value);
    if (!node) return { done: true };
    const ready = conditionOf(node.status, 'Ready');
    if (!ready) return { done: false, retryAfterMs: 50 };
    // Unreachable and not-ready mirror the Ready condition, so they exclude each other.
    let add: Taint, remove: Taint;
    if (ready.status === 'False') { add = NOT_READY_NO_EXECUTE; remove = UNREACHABLE_NO_EXECUTE; }
    else if (ready.status === 'Unknown') { add = UNREACHABLE_NO_EXECUTE; remove = NOT_READY_NO_EXECUTE; }
    else return { done: true };
    const done = await swapNodeTaints(this.client, node, [add], [remove], () => this.clock.now(), this.log);
    if (done) this.log.info({ node: v.value, taint: add.key }, 'node tainted NoExecute');
    return { done };
  }

  private async deletePods(v: TimedValue): Promise<{ done: boolean }> {
    const node = this.nodes.indexer.getByKey(v.value) ?? { apiVersion: 'v1', kind: 'Node', metadata: { name: v.value, uid: v.uid } };
    try {
      const remaining = await deletePodsOfNode(this.client, this.events, node, this.podsOnNode(v.value), this.daemonSets.indexer.list());
      if (remaining) this.log.info({ node: v.value }, 'pods awaiting deletion after node controller eviction');
      return { done: true };
    } catch (e) {
      this.log.warn({ node: v.value, err: (e as Error).message }, 'could not evict the pods of a node; retrying');
      return { done: false };
    }
  }

  /** Keeps the condition NoSchedule taints of one node in step with its state. */
  private async noScheduleTaintingPass(name: string): Promise<void> {
    const node = this.nodes.indexer.getByKey(name);
    if (!node) return;
    const { add, remove } = noScheduleTaintDiff(node);
    if (add.length === 0 && remove.length === 0) return;
    if (!await swapNodeTaints(this.client, node, add, remove, () => this.clock.now(), this.log)) throw new Error(`could not update the NoSchedule taints of node ${name}`);
  }

  /** A pod newly bound to a node that is not Ready is marked not ready too. */
  private async processPod(key: string): Promise<void> {
    const pod = this.pods.indexer.getByKey(key);
    if (!pod) return;
    const nodeName = nodeNameOf(pod);
    const h = this.health.get(nodeName);
    if (!h) return; // not judged yet: the next pass handles its pods
    if (!this.nodes.indexer.getByKey(nodeName)) throw new Error(`node ${nodeName} of pod ${key} is not in the cache`);
    const ready = conditionOf(h.status, 'Ready');
    if (ready && ready.status !== 'True') await markPodsNotReady(this.client, this.events, [pod], nodeName, this.clock.now());
  }
}

export function newNodeLifecycleController(opts: NodeLifecycleOptions = {}): Controller {
  return new NodeLifecycleController(opts);
}
