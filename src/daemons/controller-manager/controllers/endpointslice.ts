/**
 * The endpointslice controller: for every Service with a selector, keeps discovery.k8s.io/v1
 * EndpointSlices listing the selected pods (at most 100 endpoints per slice), labelled
 * `kubernetes.io/service-name=<service>` and `endpointslice.kubernetes.io/managed-by=
 * endpointslice-controller.k8s.io`, owned by the Service (so the garbage collector removes
 * them with it, as in Kubernetes). What goes into the slices is planned by
 * endpointslice/reconciler.ts.
 *
 * Beyond Kubernetes (which leaves them in place, kubernetes/kubernetes#118376): when a service
 * loses its selector or becomes ExternalName, the slices this controller made for it are
 * deleted, since nothing keeps them current any more.
 *
 * Contract: one service key is synced by one worker at a time; a sync reads only the informer
 * caches, and refuses to plan (and retries) while the slice cache lags behind this
 * controller's own writes.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { selectorFromSet } from '../../../api/meta/label-selector.js';
import { LABEL_MANAGED_BY } from '../../../api/resources/discovery/endpointslices.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import { deletedObject, keyOf, splitKey, WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';
import { serviceSelector, queueServiceChanges } from './service-selector.js';
import { CONTROLLER_NAME, planSlices, type SlicePlan } from './endpointslice/reconciler.js';
import { formatTriggerTime, serviceKeyOf, SliceTracker, TriggerTimes } from './endpointslice/trackers.js';

const SERVICES: ResourceRef = { group: '', version: 'v1', resource: 'services' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const SLICES: ResourceRef = { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' };

/** Kubernetes' --max-endpoints-per-slice default (the option is not in our flag set). */
const MAX_ENDPOINTS_PER_SLICE = 100;
/** Kubernetes' --concurrent-service-endpoint-syncs default (not in our flag set either). */
const WORKERS = 5;
/** A slice changed by someone else is put right after this pause (Kubernetes' minimum sync delay). */
const SLICE_CHANGE_DELAY_MS = 1000;
export const TRIGGER_TIME_ANNOTATION = 'endpoints.kubernetes.io/last-change-trigger-time';
/** Index of managed slices by `namespace/service`. */
const BY_SERVICE = 'service';

function managed(slice: KubeObject): boolean {
  return slice.metadata?.labels?.[LABEL_MANAGED_BY] === CONTROLLER_NAME;
}

function namespaceTerminating(e: unknown): boolean {
  return isApiError(e) && (e.status.details?.causes ?? []).some((c) => c.reason === 'NamespaceTerminating');
}

export class EndpointSliceController implements Controller {
  readonly name = 'endpointslice';
  private readonly tracker = new SliceTracker();
  private readonly triggerTimes = new TriggerTimes();
  private queue!: WorkQueue;
  private services!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private nodes!: SharedIndexInformer;
  private slices!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.events = ctx.events?.('endpoint-slice-controller') ?? noopRecorder;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.services = ctx.informers.informerFor(SERVICES);
    this.pods = ctx.informers.informerFor(PODS);
    this.nodes = ctx.informers.informerFor(NODES);
    this.slices = ctx.informers.informerFor(SLICES);
    this.slices.addIndexers({ [BY_SERVICE]: (s) => { const k = serviceKeyOf(s); return k && managed(s) ? [k] : []; } });
    queueServiceChanges(this.services, this.pods, this.queue);
    this.slices.addEventHandler({
      onAdd: (s) => { if (managed(s) && this.tracker.shouldSync(s)) this.sliceChanged(s); },
      onUpdate: (o, s) => {
        if (serviceKeyOf(o) !== serviceKeyOf(s)) { this.sliceChanged(o); this.sliceChanged(s); return; }
        if (managed(o) !== managed(s) || (managed(s) && this.tracker.shouldSync(s))) this.sliceChanged(s);
      },
      onDelete: (x) => {
        const s = deletedObject(x);
        if (managed(s) && this.tracker.has(s) && !this.tracker.handleDeletion(s)) this.sliceChanged(s);
      },
    });
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.services, this.pods, this.nodes, this.slices].map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    try {
      await this.queue.runWorkers(WORKERS, (key) => this.sync(key), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  private sliceChanged(slice: KubeObject): void {
    const key = serviceKeyOf(slice);
    if (key) this.queue.addAfter(key, SLICE_CHANGE_DELAY_MS);
  }

  /** One reconcile of the service `namespace/name`. Throws to be retried with backoff. */
  async sync(key: string): Promise<void> {
    const svc = this.services.indexer.getByKey(key);
    if (!svc) {
      // Its slices are owned by it: the garbage collector deletes them.
      this.tracker.deleteService(key);
      this.triggerTimes.deleteService(key);
      return;
    }
    const { namespace = '' } = splitKey(key);
    const slices = this.slices.indexer.byIndex(BY_SERVICE, key).filter((s) => !s.metadata?.deletionTimestamp);
    if (this.tracker.stale(key, slices)) throw new Error('EndpointSlice informer cache is out of date');
    const sel = serviceSelector(svc);
    if (!sel || (svc.spec as { type?: string } | undefined)?.type === 'ExternalName') {
      await this.apply(svc, { create: [], update: [], delete: slices, skipped: [] }, 0);
      return;
    }
    const matches = selectorFromSet(sel);
    const pods = this.pods.indexer.listNamespace(namespace).filter((p) => matches.matches(p.metadata?.labels))
      .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
    const triggerTime = this.triggerTimes.compute(key, svc, pods);
    const plan = planSlices({
      service: svc, pods, existing: slices, maxEndpointsPerSlice: MAX_ENDPOINTS_PER_SLICE,
      node: (name) => (name ? this.nodes.indexer.get(undefined, name) : undefined),
    });
    try {
      await this.apply(svc, plan, triggerTime);
    } catch (e) {
      this.events.event(svc, 'Warning', 'FailedToUpdateEndpointSlices', `Error updating Endpoint Slices for Service ${key}: ${(e as Error).message}`);
      throw e;
    }
    if (plan.skipped.length) throw new Error(`skipping pods ${plan.skipped.join(', ')} for Service ${key}: their nodes are not known`);
  }

  /** Writes a plan: creates (unless the service is being deleted), then updates, then deletes. */
  private async apply(svc: KubeObject, plan: SlicePlan, triggerTime: number): Promise<void> {
    const ref = { ...SLICES, namespace: svc.metadata?.namespace ?? '' };
    const stamp = (s: KubeObject): KubeObject => {
      const annotations = { ...(s.metadata?.annotations ?? {}) };
      if (triggerTime) annotations[TRIGGER_TIME_ANNOTATION] = formatTriggerTime(triggerTime);
      else delete annotations[TRIGGER_TIME_ANNOTATION];
      s.metadata = { ...s.metadata, annotations };
      if (!Object.keys(annotations).length) delete s.metadata.annotations;
      return s;
    };
    // Creating next to a garbage collector that is deleting the service's slices would race it.
    if (!svc.metadata?.deletionTimestamp) {
      for (const s of plan.create) {
        try {
          this.tracker.written(await this.client.create(ref, stamp(s)));
        } catch (e) {
          if (namespaceTerminating(e)) return;
          throw e;
        }
      }
    }
    for (const s of plan.update) this.tracker.written(await this.client.update(ref, stamp(s)));
    for (const s of plan.delete) {
      try {
        await this.client.delete(ref, s.metadata?.name ?? '', { preconditions: { uid: s.metadata?.uid ?? '' } });
        this.tracker.expectDeletion(s);
      } catch (e) {
        if (!isApiError(e, 'NotFound')) throw e;
      }
    }
    const n = plan.create.length + plan.update.length + plan.delete.length;
    if (n) this.log.debug({ service: keyOf(svc), created: plan.create.length, updated: plan.update.length, deleted: plan.delete.length }, 'endpoint slices written');
  }
}

export function newEndpointSliceController(): Controller {
  return new EndpointSliceController();
}
