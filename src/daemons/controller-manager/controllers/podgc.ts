/**
 * The pod garbage collector, a periodic sweep (every 20 s like Kubernetes) that force-deletes:
 *  - terminated pods (phase Succeeded or Failed) beyond --terminated-pod-gc-threshold, oldest
 *    first (0 or less switches this part off);
 *  - pods bound to a node that does not exist: a node missing from the cache is quarantined
 *    for 40 s, then confirmed missing by a fresh read; its pods are marked Failed (condition
 *    DisruptionTarget, reason DeletionByPodGC) and deleted;
 *  - unscheduled pods being deleted (no node agent will ever finish their deletion).
 *
 * Contract: sweeps never overlap; every delete names the pod's uid (a pod re-created under the
 * same name is never hit); failures are logged and retried by the next sweep.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { keyOf, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const PODS: ResourceRef = { group: '', version: 'v1', resource: 'pods' };
const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };

export const GC_CHECK_PERIOD_MS = 20_000;
export const QUARANTINE_MS = 40_000;

export interface PodGcOptions {
  /** Time between sweeps. @default 20 s */
  periodMs?: number;
  /** How long a node must be missing from the cache before a fresh read decides. @default 40 s */
  quarantineMs?: number;
  now?: () => number;
}

type Dict = Record<string, unknown>;
const spec = (p: KubeObject): Dict => (p.spec ?? {}) as Dict;
const phase = (p: KubeObject): string => String(((p.status ?? {}) as Dict).phase ?? '');

export function isTerminated(p: KubeObject): boolean {
  const ph = phase(p);
  return ph === 'Succeeded' || ph === 'Failed';
}

/** The terminated pods to delete to get down to `threshold`, oldest first. */
export function terminatedOverThreshold(pods: readonly KubeObject[], threshold: number): KubeObject[] {
  if (threshold <= 0) return [];
  const done = pods.filter((p) => isTerminated(p) && !p.metadata?.deletionTimestamp);
  const n = done.length - threshold;
  if (n <= 0) return [];
  const created = (p: KubeObject): number => Date.parse(p.metadata?.creationTimestamp ?? '') || 0;
  return [...done].sort((a, b) => created(a) - created(b) || keyOf(a).localeCompare(keyOf(b))).slice(0, n);
}

export class PodGcController implements Controller {
  readonly name = 'podgc';
  private pods!: SharedIndexInformer;
  private nodes!: SharedIndexInformer;
  private client!: RestClient;
  private log!: Logger;
  /** Node name → when we first saw pods bound to it while it was missing. */
  private readonly missingSince = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly opts: PodGcOptions = {}) { this.now = opts.now ?? Date.now; }

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.pods = ctx.informers.informerFor(PODS);
    this.nodes = ctx.informers.informerFor(NODES);
    ctx.informers.start(ctx.signal);
    const synced = await Promise.all([this.pods.waitForSync(ctx.signal), this.nodes.waitForSync(ctx.signal)]);
    if (!synced.every(Boolean)) return;
    const period = this.opts.periodMs ?? GC_CHECK_PERIOD_MS;
    while (!ctx.signal.aborted) {
      try {
        await this.sweep(ctx.config.terminatedPodGcThreshold);
      } catch (e) {
        this.log.warn({ err: (e as Error).message }, 'pod garbage collection sweep failed');
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => { ctx.signal.removeEventListener('abort', stop); resolve(); }, period);
        const stop = (): void => { clearTimeout(t); resolve(); };
        ctx.signal.addEventListener('abort', stop, { once: true });
      });
    }
  }

  /** One sweep over the cached pods. */
  async sweep(threshold: number): Promise<void> {
    const pods = this.pods.indexer.list();
    await this.deleteAll(terminatedOverThreshold(pods, threshold), 'terminated pod over the threshold');
    // Pods already force-deleted (held only by finalizers) need nothing more from us.
    const orphans = (await this.orphaned(pods)).filter((p) => !(p.metadata?.deletionTimestamp && p.metadata.deletionGracePeriodSeconds === 0));
    for (const p of orphans) await this.markFailed(p);
    await this.deleteAll(orphans, 'pod bound to a node that does not exist');
    await this.deleteAll(pods.filter((p) => p.metadata?.deletionTimestamp && p.metadata.deletionGracePeriodSeconds !== 0 && !spec(p).nodeName), 'unscheduled terminating pod');
  }

  private async orphaned(pods: readonly KubeObject[]): Promise<KubeObject[]> {
    const quarantine = this.opts.quarantineMs ?? QUARANTINE_MS;
    const byNode = new Map<string, KubeObject[]>();
    for (const p of pods) {
      const node = String(spec(p).nodeName ?? '');
      if (!node || this.nodes.indexer.getByKey(node)) continue;
      byNode.set(node, [...(byNode.get(node) ?? []), p]);
    }
    for (const n of [...this.missingSince.keys()]) if (!byNode.has(n)) this.missingSince.delete(n);
    const out: KubeObject[] = [];
    for (const [node, list] of byNode) {
      const since = this.missingSince.get(node);
      if (since === undefined) { this.missingSince.set(node, this.now()); if (quarantine > 0) continue; }
      else if (this.now() - since < quarantine) continue;
      if (await this.nodeExists(node)) { this.missingSince.delete(node); continue; }
      out.push(...list);
    }
    return out;
  }

  private async nodeExists(name: string): Promise<boolean> {
    try {
      await this.client.get(NODES, name);
      return true;
    } catch (e) {
      if (isApiError(e) && e.code === 404) return false;
      throw e;
    }
  }

  /**
   * A pod that never finished is marked Failed with a DisruptionTarget condition before it goes,
   * so that its owner (a Job's pod failure policy, say) can tell why it ended.
   */
  private async markFailed(p: KubeObject): Promise<void> {
    if (isTerminated(p)) return;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const conditions = [
      ...(((p.status ?? {}) as Dict).conditions as Dict[] | undefined ?? []).filter((c) => c.type !== 'DisruptionTarget'),
      { type: 'DisruptionTarget', status: 'True', reason: 'DeletionByPodGC', message: 'the node the pod was bound to no longer exists', lastTransitionTime: now },
    ];
    try {
      await this.client.patch({ ...PODS, namespace: p.metadata?.namespace ?? '' }, p.metadata?.name ?? '', 'merge',
        { metadata: { uid: p.metadata?.uid }, status: { phase: 'Failed', conditions } }, { subresource: 'status' });
    } catch (e) {
      if (!(isApiError(e) && (e.code === 404 || e.code === 409))) this.log.warn({ pod: keyOf(p), err: (e as Error).message }, 'marking pod failed');
    }
  }

  private async deleteAll(pods: readonly KubeObject[], why: string): Promise<void> {
    for (const p of pods) {
      try {
        await this.client.delete({ ...PODS, namespace: p.metadata?.namespace ?? '' }, p.metadata?.name ?? '', { gracePeriodSeconds: 0, preconditions: { uid: p.metadata?.uid ?? '' } });
        this.log.info({ pod: keyOf(p), reason: why }, 'deleted pod');
      } catch (e) {
        if (isApiError(e) && (e.code === 404 || e.code === 409)) continue;
        this.log.warn({ pod: keyOf(p), err: (e as Error).message }, 'deleting pod failed');
      }
    }
  }
}

export function newPodGcController(opts: PodGcOptions = {}): Controller {
  return new PodGcController(opts);
}
