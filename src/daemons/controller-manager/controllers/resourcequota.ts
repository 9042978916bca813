/**
 * The resource quota controller: every ResourceQuota's status says what its namespace uses.
 * status.hard is spec.hard and status.used, per hard key, what the objects the quota covers use
 * of it (resourcequota/status.ts computes both; src/api/quota/usage.ts defines usage).
 *
 * Objects come from shared informers, one per counted resource (pods, services, claims,
 * config maps, secrets, replication controllers and quotas from the start; any other resource
 * when a quota first names it, e.g. `count/deployments.apps`). A name that is no namespaced
 * resource counts 0, logged once. Keys are `namespace/name`; --concurrent-resource-quota-syncs
 * workers. A quota is queued when it is added, when its spec.hard changes or its status.hard
 * differs from it, when an object its keys count is added, changed or deleted in its namespace
 * ("replenishment"), when a lazily started informer has listed, and every
 * --resource-quota-sync-period for all quotas.
 *
 * Contract: a sync reads only the caches and writes only when the computed status differs,
 * with an update of the status subresource carrying the cached resourceVersion. Others write
 * status.used too (the API server's ResourceQuota admission charges writes before the objects
 * exist): a 409 fails the sync, which requeues it with backoff and recomputes from a fresher
 * cache; a 404 (quota deleted) ends it. A counted resource whose informer has not listed yet
 * leaves the keys it counts as they were rather than lowering them.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import {
  deletedObject, keyOf, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer, type SharedInformerFactory,
} from '../deps.js';
import {
  countedBy, countedRef, currentStatus, desiredStatus, resourceId, sameQuantities, specHard,
} from './resourcequota/status.js';

const QUOTAS: ResourceRef = { group: '', version: 'v1', resource: 'resourcequotas' };
/** Core resources watched from the start, as most quotas count some of them. */
const UP_FRONT = ['pods', 'services', 'persistentvolumeclaims', 'configmaps', 'secrets', 'replicationcontrollers'];
const DEFAULT_SYNC_PERIOD_MS = 300_000;

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) { resolve(false); return; }
    const t = setTimeout(() => { signal.removeEventListener('abort', stop); resolve(true); }, ms);
    const stop = (): void => { clearTimeout(t); resolve(false); };
    signal.addEventListener('abort', stop, { once: true });
  });
}

export class ResourceQuotaController implements Controller {
  readonly name = 'resourcequota';
  private queue!: WorkQueue;
  private quotas!: SharedIndexInformer;
  private factory!: SharedInformerFactory;
  private client!: RestClient;
  private log!: Logger;
  private signal!: AbortSignal;
  private started = false;
  /** Counted resources by resourceId: their informer, or null when there is nothing to count. */
  private readonly counted = new Map<string, SharedIndexInformer | null>();

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.factory = ctx.informers;
    this.signal = ctx.signal;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.quotas = ctx.informers.informerFor(QUOTAS);
    // Quotas are a counted resource too (`resourcequotas`); their handler replenishes on add and delete.
    this.counted.set(resourceId('', 'resourcequotas'), this.quotas);
    this.quotas.addEventHandler({
      onAdd: (q) => { this.watchCounted(q); this.queue.add(keyOf(q)); this.replenish('', 'resourcequotas', q); },
      onUpdate: (old, q) => {
        const hard = specHard(q);
        if (sameQuantities(specHard(old), hard) && sameQuantities(currentStatus(q).hard, hard)) return;
        this.watchCounted(q);
        this.queue.add(keyOf(q));
      },
      onDelete: (x) => this.replenish('', 'resourcequotas', deletedObject(x)),
    });
    for (const plural of UP_FRONT) this.informerOf('', plural);
    ctx.informers.start(ctx.signal);
    this.started = true;
    const upFront = [...this.counted.values()].filter((i): i is SharedIndexInformer => i !== null);
    const synced = await Promise.all(upFront.map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    const period = ctx.config.resourceQuotaSyncPeriod > 0 ? ctx.config.resourceQuotaSyncPeriod : DEFAULT_SYNC_PERIOD_MS;
    await Promise.all([
      this.resyncEvery(period, ctx.signal),
      this.queue.runWorkers(ctx.config.concurrentResourceQuotaSyncs, (key) => this.sync(key), ctx.signal),
    ]);
  }

  /** Recomputes one quota from the caches and writes its status when it differs. */
  async sync(key: string): Promise<void> {
    const quota = this.quotas.indexer.getByKey(key);
    const namespace = quota?.metadata?.namespace;
    if (!quota || !namespace) return;
    const next = desiredStatus(quota, (group, plural) => {
      const inf = this.informerOf(group, plural);
      if (inf === null) return [];
      return inf.hasSynced() ? inf.indexer.listNamespace(namespace) : undefined;
    });
    const now = currentStatus(quota);
    if (sameQuantities(now.hard, next.hard) && sameQuantities(now.used, next.used)) return;
    const status = { ...(quota.status as Record<string, unknown> | undefined), hard: next.hard, used: next.used };
    try {
      await this.client.update({ ...QUOTAS, namespace }, { ...quota, status }, { subresource: 'status' });
      this.log.debug({ quota: key, used: next.used }, 'quota usage written');
    } catch (e) {
      // Deleted meanwhile: nothing to write. A 409 is thrown: the retry reads a fresher cache.
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }

  /** Starts the informers of every resource the quota counts that is not watched yet. */
  private watchCounted(quota: KubeObject): void {
    for (const { group, plural } of countedBy(quota)) this.informerOf(group, plural);
  }

  /** The informer of a counted resource, created (and started, once running) on first use; null: counts 0. */
  private informerOf(group: string, plural: string): SharedIndexInformer | null {
    const id = resourceId(group, plural);
    const known = this.counted.get(id);
    if (known !== undefined) return known;
    const ref = countedRef(group, plural);
    if (!ref) {
      this.log.warn({ resource: id }, 'a quota counts a resource that is not a namespaced resource here; its usage is 0');
      this.counted.set(id, null);
      return null;
    }
    const inf = this.factory.informerFor(ref);
    const replenish = (obj: KubeObject): void => this.replenish(group, plural, obj);
    inf.addEventHandler({ onAdd: replenish, onUpdate: (_old, obj) => replenish(obj), onDelete: (x) => replenish(deletedObject(x)) });
    this.counted.set(id, inf);
    if (this.started) {
      this.factory.start(this.signal);
      // Namespaces without any such object get no event: their quotas are queued once listed.
      void inf.waitForSync(this.signal).then((ok) => { if (ok) this.enqueueCounting(group, plural); });
    }
    return inf;
  }

  private counts(quota: KubeObject, group: string, plural: string): boolean {
    return countedBy(quota).some((r) => r.group === group && r.plural === plural);
  }

  /** Queues the quotas of the object's namespace that count its resource. */
  private replenish(group: string, plural: string, obj: KubeObject): void {
    const namespace = obj.metadata?.namespace;
    if (!namespace) return;
    for (const q of this.quotas.indexer.listNamespace(namespace)) if (this.counts(q, group, plural)) this.queue.add(keyOf(q));
  }

  private enqueueCounting(group: string, plural: string): void {
    for (const q of this.quotas.indexer.list()) if (this.counts(q, group, plural)) this.queue.add(keyOf(q));
  }

  private async resyncEvery(periodMs: number, signal: AbortSignal): Promise<void> {
    while (await sleep(periodMs, signal)) for (const key of this.quotas.indexer.keys()) this.queue.add(key);
  }
}

export function newResourceQuotaController(): Controller {
  return new ResourceQuotaController();
}
