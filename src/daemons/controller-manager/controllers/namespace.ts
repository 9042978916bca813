/**
 * The namespace controller: a namespace being deleted (deletionTimestamp set, phase
 * Terminating) is emptied of every namespaced object the server serves; while content remains
 * the namespace's deletion conditions say what and why, and the namespace is looked at again
 * (sooner while objects are terminating, at the latest after --namespace-sync-period). Once
 * empty, the `kubernetes` finalizer is removed through namespaces/NAME/finalize, after which
 * the API server deletes the namespace.
 *
 * Contract: one namespace is handled by one worker at a time; every decision is made on a
 * fresh read of the namespace (never on the cache alone), so a re-created namespace of the
 * same name is never emptied.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { deletedObject, keyOf, WorkQueue, type HandlerResult, type ResourceRef, type RestClient } from '../deps.js';
import { canonicalJson } from './controller-utils.js';
import { deleteNamespaceContent, type NamespaceCondition } from './namespace/content-deleter.js';
import { metaTime } from '../../../api/meta/time.js';

const NAMESPACES: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };

/** The finalizer this controller owns on namespaces' spec. */
export const KUBERNETES_FINALIZER = 'kubernetes';

/** First recheck of a namespace with content left; doubles per pass up to the sync period. */
const FIRST_RECHECK_MS = 500;

type Dict = Record<string, unknown>;


function specFinalizers(ns: KubeObject): string[] {
  const f = ((ns.spec ?? {}) as Dict).finalizers;
  return Array.isArray(f) ? f.map(String) : [];
}

/** Merges new conditions into old ones, keeping transition times of unchanged statuses. */
export function mergeConditions(old: readonly NamespaceCondition[], fresh: readonly NamespaceCondition[]): NamespaceCondition[] {
  const now = metaTime();
  const out = old.filter((c) => !fresh.some((f) => f.type === c.type));
  for (const f of fresh) {
    const prev = old.find((c) => c.type === f.type);
    out.push({ ...f, lastTransitionTime: prev && prev.status === f.status && prev.lastTransitionTime ? prev.lastTransitionTime : now });
  }
  return out;
}

export interface NamespaceControllerOptions {
  /** First delay before looking again at a namespace with content left (ms). */
  firstRecheckMs?: number;
}

export class NamespaceController implements Controller {
  readonly name = 'namespace';
  private queue!: WorkQueue;
  private client!: RestClient;
  private log!: Logger;
  private syncPeriodMs = 300_000;
  private readonly passes = new Map<string, number>();

  constructor(private readonly opts: NamespaceControllerOptions = {}) {}

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.log = ctx.log;
    this.syncPeriodMs = ctx.config.namespaceSyncPeriod > 0 ? ctx.config.namespaceSyncPeriod : 300_000;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    const namespaces = ctx.informers.informerFor(NAMESPACES);
    const enqueue = (ns: KubeObject): void => { if (ns.metadata?.deletionTimestamp) this.queue.add(keyOf(ns)); };
    // The resync period makes every namespace come back at least every --namespace-sync-period.
    namespaces.addEventHandler({
      onAdd: enqueue,
      onUpdate: (_o, ns) => enqueue(ns),
      onDelete: (ns) => { this.passes.delete(keyOf(deletedObject(ns))); },
    }, this.syncPeriodMs);
    ctx.informers.start(ctx.signal);
    if (!(await namespaces.waitForSync(ctx.signal))) return;
    await this.queue.runWorkers(ctx.config.concurrentNamespaceSyncs, (key, signal) => this.sync(key, signal), ctx.signal);
  }

  /** One pass over the namespace `name`. Throws to be retried with backoff. */
  async sync(name: string, signal?: AbortSignal): Promise<HandlerResult | void> {
    let ns: KubeObject;
    try {
      ns = await this.client.get(NAMESPACES, name);
    } catch (e) {
      if (isApiError(e) && e.code === 404) { this.passes.delete(name); return; }
      throw e;
    }
    if (!ns.metadata?.deletionTimestamp) { this.passes.delete(name); return; }
    if (!specFinalizers(ns).includes(KUBERNETES_FINALIZER)) return;
    ns = await this.ensureTerminating(ns);
    const result = await deleteNamespaceContent(this.client, name, signal);
    ns = await this.writeConditions(ns, result.conditions);
    if (result.remaining > 0) {
      const pass = this.passes.get(name) ?? 0;
      this.passes.set(name, pass + 1);
      const backoff = Math.min((this.opts.firstRecheckMs ?? FIRST_RECHECK_MS) * 2 ** pass, this.syncPeriodMs);
      const wait = Math.min(Math.max(backoff, result.estimateSeconds * 1000 / 2), this.syncPeriodMs);
      this.log.info({ namespace: name, remaining: result.remaining, recheckMs: wait }, 'namespace content remains; checking again later');
      return { requeueAfterMs: wait };
    }
    await this.finalize(ns);
    this.passes.delete(name);
    this.log.info({ namespace: name }, 'namespace emptied; finalizer removed');
  }

  private async ensureTerminating(ns: KubeObject): Promise<KubeObject> {
    const status = (ns.status ?? {}) as Dict;
    if (status.phase === 'Terminating') return ns;
    return this.client.update(NAMESPACES, { ...ns, status: { ...status, phase: 'Terminating' } }, { subresource: 'status' });
  }

  private async writeConditions(ns: KubeObject, fresh: NamespaceCondition[]): Promise<KubeObject> {
    const status = (ns.status ?? {}) as Dict;
    const old = (Array.isArray(status.conditions) ? status.conditions : []) as NamespaceCondition[];
    const merged = mergeConditions(old, fresh);
    const strip = (cs: readonly NamespaceCondition[]): unknown => cs.map(({ lastTransitionTime: _t, ...c }) => c).sort((a, b) => a.type.localeCompare(b.type));
    if (canonicalJson(strip(old)) === canonicalJson(strip(merged))) return ns;
    try {
      return await this.client.update(NAMESPACES, { ...ns, status: { ...status, conditions: merged } }, { subresource: 'status' });
    } catch (e) {
      // The conditions are informative; a conflict only means the next pass writes them.
      if (isApiError(e) && (e.code === 409 || e.code === 404)) return ns;
      throw e;
    }
  }

  /** Removes our finalizer (compare-and-swap on the namespace's resourceVersion). */
  private async finalize(ns: KubeObject): Promise<void> {
    const finalizers = specFinalizers(ns).filter((f) => f !== KUBERNETES_FINALIZER);
    const body: KubeObject = {
      apiVersion: 'v1', kind: 'Namespace',
      metadata: { name: ns.metadata?.name ?? '', uid: ns.metadata?.uid ?? '', resourceVersion: ns.metadata?.resourceVersion ?? '' },
      spec: { finalizers },
    };
    try {
      await this.client.request({ ...NAMESPACES, method: 'PUT', name: ns.metadata?.name ?? '', subresource: 'finalize', body });
    } catch (e) {
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }
}

export function newNamespaceController(opts: NamespaceControllerOptions = {}): Controller {
  return new NamespaceController(opts);
}
