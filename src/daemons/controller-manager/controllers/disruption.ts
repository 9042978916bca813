/**
 * The disruption controller: every PodDisruptionBudget's status says how many of its pods are
 * healthy, how many must be, and so how many may be disrupted now (status.disruptionsAllowed,
 * which the API server's eviction spends). disruption/budget.ts holds the arithmetic,
 * disruption/scale.ts finds the pods' controllers for percentage and maxUnavailable budgets.
 *
 * Keys are `namespace/name`; one worker. A budget is queued when it is added or changed; when a
 * pod is added, changed or deleted in its namespace and the budget's selector matches the pod's
 * old or new labels; when a ReplicationController, ReplicaSet, Deployment or StatefulSet of its
 * namespace is added, deleted, or changes its replicas or owner (budgets counting scale only);
 * and, after a sync, when its earliest status.disruptedPods entry expires.
 *
 * Contract: a sync reads only the caches (plus discovery and a scale subresource GET for
 * controllers of other kinds) and writes status only when it differs, with an update of the
 * status subresource carrying the cached resourceVersion: a 409 (e.g. an eviction charged the
 * budget meanwhile) fails the sync, which requeues it with backoff and recounts; a 404 ends it.
 * When the budget cannot be computed (a bad selector or value, a pod whose controller is not
 * found) status.disruptionsAllowed becomes 0 with condition DisruptionAllowed False, reason
 * SyncFailed and the error as message, and the sync fails so that it is retried with backoff.
 * Events accompany status writes only (so a recount that changes nothing records nothing):
 * NoPods, UnmanagedPods, CalculateExpectedPodCountFailed on the budget, NotDeleted on a pod
 * whose eviction entry expired.
 *
 * Decisions: a pod matched by several budgets queues all of them (Kubernetes picks one);
 * controller changes queue budgets, and failed syncs are retried with backoff (Kubernetes waits
 * for the next pod or budget event). Kubernetes also resets stale DisruptionTarget pod
 * conditions here; we do not.
 */
import type { Logger } from 'pino';
import { labelSelectorFromObject, type LabelSelectorObject } from '../../../api/meta/label-selector.js';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import {
  deletedObject, keyOf, WorkQueue, type HandlerResult, type ResourceRef, type RestClient, type SharedIndexInformer,
} from '../deps.js';
import { noopRecorder, type EventRecorder } from '../events.js';
import {
  budgetStatus, countHealthy, desiredHealth, failSafeStatus, liveDisruptions, sameStatus, selectedPods, statusOf, usesScale,
  type BudgetStatus,
} from './disruption/budget.js';
import { apiScaleLookup, expectedScale, type ControllerCaches, type ScaleLookup } from './disruption/scale.js';
import { canonicalJson } from './controller-utils.js';
import { metaTime } from '../../../api/meta/time.js';

const PDBS: ResourceRef = { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets' };
const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
const CONTROLLERS = {
  replicationControllers: { group: '', version: 'v1', resource: 'replicationcontrollers' },
  replicaSets: { group: 'apps', version: 'v1', resource: 'replicasets' },
  deployments: { group: 'apps', version: 'v1', resource: 'deployments' },
  statefulSets: { group: 'apps', version: 'v1', resource: 'statefulsets' },
} as const satisfies Record<keyof ControllerCaches, ResourceRef>;
/** Recount a little after an entry expires, so the expiry is certainly past. */
const RECHECK_SLACK_MS = 50;

export interface DisruptionControllerOptions {
  /** The clock (ms since the epoch) that ages status.disruptedPods entries; Date.now by default. */
  now?: () => number;
}

/** Thrown when the budget cannot be computed; `reason` names the event. */
class BudgetError extends Error {
  constructor(readonly reason: string, message: string) { super(message); }
}

export class DisruptionController implements Controller {
  readonly name = 'disruption';
  private queue!: WorkQueue;
  private pdbs!: SharedIndexInformer;
  private pods!: SharedIndexInformer;
  private caches!: ControllerCaches;
  private lookup!: ScaleLookup;
  private client!: RestClient;
  private log!: Logger;
  private events: EventRecorder = noopRecorder;
  private readonly now: () => number;

  constructor(o: DisruptionControllerOptions = {}) {
    this.now = o.now ?? Date.now;
  }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    // Kubernetes reports these events as the controller manager itself.
    this.events = ctx.events?.('controllermanager') ?? noopRecorder;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.lookup = apiScaleLookup(ctx.client, ctx.signal);
    this.pdbs = ctx.informers.informerFor(PDBS);
    this.pods = ctx.informers.informerFor(PODS);
    this.caches = {
      replicationControllers: ctx.informers.informerFor(CONTROLLERS.replicationControllers),
      replicaSets: ctx.informers.informerFor(CONTROLLERS.replicaSets),
      deployments: ctx.informers.informerFor(CONTROLLERS.deployments),
      statefulSets: ctx.informers.informerFor(CONTROLLERS.statefulSets),
    };
    this.pdbs.addEventHandler({ onAdd: (p) => this.queue.add(keyOf(p)), onUpdate: (_o, p) => this.queue.add(keyOf(p)) });
    this.pods.addEventHandler({
      onAdd: (p) => this.podChanged(p),
      onUpdate: (old, p) => this.podChanged(p, old),
      onDelete: (x) => this.podChanged(deletedObject(x)),
    });
    const controllers: SharedIndexInformer[] = Object.values(this.caches);
    for (const inf of controllers) {
      inf.addEventHandler({
        onAdd: (o) => this.scaleChanged(o),
        onUpdate: (old, o) => { if (scaleInputs(old) !== scaleInputs(o)) this.scaleChanged(o); },
        onDelete: (x) => this.scaleChanged(deletedObject(x)),
      });
    }
    ctx.informers.start(ctx.signal);
    const all = [this.pdbs, this.pods, ...controllers];
    const synced = await Promise.all(all.map((i) => i.waitForSync(ctx.signal)));
    if (!synced.every(Boolean)) return;
    try {
      await this.queue.runWorkers(1, (key) => this.sync(key), ctx.signal);
    } finally {
      await this.events.flush();
    }
  }

  /** Recounts one budget from the caches and writes its status when it differs. */
  async sync(key: string): Promise<HandlerResult | void> {
    const pdb = this.pdbs.indexer.getByKey(key);
    const namespace = pdb?.metadata?.namespace;
    if (!pdb || !namespace) return undefined;
    const now = this.now();
    const stamp = metaTime(now);
    let pods: KubeObject[];
    let unmanaged: string[] = [];
    let health: { expectedPods: number; desiredHealthy: number };
    try {
      try {
        pods = selectedPods(pdb, this.pods.indexer.listNamespace(namespace));
      } catch (e) {
        throw new BudgetError('NoPods', `Failed to get pods: ${(e as Error).message}`);
      }
      try {
        let scale = 0;
        if (usesScale(pdb)) ({ expected: scale, unmanaged } = await expectedScale(pods, this.caches, this.lookup));
        health = desiredHealth(pdb, pods.length, scale);
      } catch (e) {
        throw new BudgetError('CalculateExpectedPodCountFailed', `Failed to calculate the number of expected pods: ${(e as Error).message}`);
      }
    } catch (e) {
      const err = e as BudgetError;
      if (await this.write(pdb, failSafeStatus(pdb, err.message, stamp))) this.events.event(pdb, 'Warning', err.reason, err.message);
      throw err;
    }
    const live = liveDisruptions(pdb, pods, now);
    const next = budgetStatus(pdb, { ...health, currentHealthy: countHealthy(pods, live.kept), disruptedPods: live.kept }, stamp);
    if (await this.write(pdb, next)) {
      if (pods.length === 0) this.events.event(pdb, 'Normal', 'NoPods', 'No matching pods found');
      if (unmanaged.length > 0) {
        this.events.event(pdb, 'Warning', 'UnmanagedPods', `Pods selected by this PodDisruptionBudget have no controller (${unmanaged.join(', ')}), `
          + 'so they are not counted in expectedPods; set spec.minAvailable to an integer to count them.');
      }
      for (const pod of live.expired) {
        this.events.event(pod, 'Warning', 'NotDeleted', `Pod was evicted under the PodDisruptionBudget ${key} but was not deleted in time`);
      }
    }
    return live.recheckAt === undefined ? undefined : { requeueAfterMs: Math.max(0, live.recheckAt - now) + RECHECK_SLACK_MS };
  }

  /** Writes the status unless it says the same already; true when written. */
  private async write(pdb: KubeObject, status: BudgetStatus): Promise<boolean> {
    if (sameStatus(statusOf(pdb), status)) return false;
    try {
      await this.client.update({ ...PDBS, namespace: pdb.metadata?.namespace ?? '' }, { ...pdb, status }, { subresource: 'status' });
    } catch (e) {
      // Deleted meanwhile: nothing to write. A 409 is thrown: the retry recounts from a fresher cache.
      if (isApiError(e) && e.code === 404) return false;
      throw e;
    }
    this.log.debug({ pdb: keyOf(pdb), disruptionsAllowed: status.disruptionsAllowed, currentHealthy: status.currentHealthy }, 'budget status written');
    return true;
  }

  /** Queues the budgets of the pod's namespace whose selector matches its old or new labels. */
  private podChanged(pod: KubeObject, old?: KubeObject): void {
    const namespace = pod.metadata?.namespace;
    if (!namespace) return;
    for (const pdb of this.pdbs.indexer.listNamespace(namespace)) {
      let matches: boolean;
      try {
        const sel = labelSelectorFromObject((pdb.spec as { selector?: LabelSelectorObject } | undefined)?.selector);
        matches = sel.matches(pod.metadata?.labels) || (old !== undefined && sel.matches(old.metadata?.labels));
      } catch {
        matches = true; // a bad selector: the sync reports it
      }
      if (matches) this.queue.add(keyOf(pdb));
    }
  }

  /** Queues the budgets of the controller's namespace whose expectedPods is a scale. */
  private scaleChanged(controller: KubeObject): void {
    const namespace = controller.metadata?.namespace;
    if (!namespace) return;
    for (const pdb of this.pdbs.indexer.listNamespace(namespace)) if (usesScale(pdb)) this.queue.add(keyOf(pdb));
  }
}

/** What of a controller a budget's scale depends on. */
function scaleInputs(o: KubeObject): string {
  return canonicalJson([o.metadata?.uid, (o.spec as { replicas?: unknown } | undefined)?.replicas, o.metadata?.ownerReferences]);
}

export function newDisruptionController(o: DisruptionControllerOptions = {}): Controller {
  return new DisruptionController(o);
}
