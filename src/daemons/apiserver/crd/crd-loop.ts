/**
 * The API server's CustomResourceDefinition loop (Kubernetes runs the same loops inside its
 * apiextensions server): watches CRDs and, for each one,
 *   - checks its names against the other CRDs of its group and records the outcome in status
 *     (acceptedNames, conditions NamesAccepted and Established);
 *   - serves its custom resources while it is Established (registers their definition, so
 *     discovery, OpenAPI and the REST layer see them; unregisters it when the CRD goes);
 *   - on deletion (the CRD keeps its cleanup finalizer), refuses new custom resources, deletes
 *     the existing ones, and then removes the finalizer so the CRD goes too.
 * Every API server runs it, so each serves what the CRDs in storage say.
 */
import type { Logger } from 'pino';
import { ApiError, isApiError } from '../../../api/meta/status.js';
import { findResource } from '../../../api/resources/registry.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import { CRD_CLEANUP_FINALIZER, CRD_GROUP, acceptedNames, conditionTrue, conditionsOf, crdGroup, crdNames, withCondition, type CrdNames } from '../../../api/resources/apiextensions/crd-spec.js';
import { customResourceDefinition } from '../../../api/resources/apiextensions/custom-resources.js';
import type { ResourceRegistry } from '../registry/resource-registry.js';
import { nowTimestamp } from '../registry/object-meta.js';
import { deepEqual } from '../../../api/resources/common/validation.js';
import { namingConflict } from './naming.js';

export interface CrdLoopOptions {
  registry: ResourceRegistry;
  /** Serve (def) or stop serving (undefined) the custom resources of group/plural. */
  serve(group: string, plural: string, def: ResourceDefinition | undefined): void;
  log: Logger;
  /** Wait before looking again at a CRD whose custom resources are still being deleted. */
  cleanupRetryMs?: number;
}

const CRD_RESOURCE = 'customresourcedefinitions';

export class CrdLoop {
  private readonly crds = new Map<string, KubeObject>();
  /** group/plural served per CRD name (to unregister what a CRD served when it changes or goes). */
  private readonly served = new Map<string, { group: string; plural: string }>();
  private readonly abort = new AbortController();
  private queue: Promise<void> = Promise.resolve();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private watching: Promise<void> | undefined;

  constructor(private readonly opts: CrdLoopOptions) {}

  private get def(): ResourceDefinition {
    return findResource(CRD_GROUP, 'v1', CRD_RESOURCE)!;
  }

  /** Lists the CRDs and serves the established ones before returning; then keeps watching. */
  async start(): Promise<void> {
    const { items, resourceVersion } = await this.opts.registry.list(this.def, { namespace: '' });
    for (const crd of items) this.crds.set(crd.metadata!.name!, crd);
    for (const crd of items) await this.sync(crd.metadata!.name!);
    this.watching = this.watch(resourceVersion);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    for (const t of this.retries.values()) clearTimeout(t);
    await this.watching?.catch(() => undefined);
    await this.queue.catch(() => undefined);
  }

  private async watch(fromVersion: string): Promise<void> {
    let rv = fromVersion;
    while (!this.abort.signal.aborted) {
      try {
        const w = this.opts.registry.store.watch({ resource: CRD_RESOURCE, group: CRD_GROUP, namespace: '', resourceVersion: rv, signal: this.abort.signal });
        for await (const ev of w) {
          if (ev.type === 'ERROR') { rv = await this.relist(); break; }
          if (ev.type === 'BOOKMARK') { rv = ev.object.metadata?.resourceVersion ?? rv; continue; }
          const name = ev.object.metadata?.name ?? '';
          rv = ev.object.metadata?.resourceVersion ?? rv;
          if (ev.type === 'DELETED') this.crds.delete(name); else this.crds.set(name, ev.object);
          this.enqueue(name);
        }
      } catch (e) {
        if (this.abort.signal.aborted) return;
        this.opts.log.warn({ err: e }, 'CRD watch failed; listing again');
        await new Promise((r) => setTimeout(r, 1000));
        rv = await this.relist().catch(() => rv);
      }
    }
  }

  /** After a watch error: the current CRDs, each synced again. */
  private async relist(): Promise<string> {
    const { items, resourceVersion } = await this.opts.registry.list(this.def, { namespace: '' });
    const names = new Set(items.map((c) => c.metadata!.name!));
    for (const name of this.crds.keys()) if (!names.has(name)) { this.crds.delete(name); this.enqueue(name); }
    for (const crd of items) { this.crds.set(crd.metadata!.name!, crd); this.enqueue(crd.metadata!.name!); }
    return resourceVersion;
  }

  private enqueue(name: string): void {
    this.queue = this.queue.then(() => this.sync(name)).catch((e: unknown) => {
      if (!this.abort.signal.aborted) this.opts.log.warn({ err: e, crd: name }, 'syncing CRD failed');
    });
  }

  /** Brings one CRD's status and served resources in line with its spec. */
  private async sync(name: string): Promise<void> {
    if (this.abort.signal.aborted) return;
    const crd = this.crds.get(name);
    if (!crd) { this.unserve(name); return; }
    if (crd.metadata?.deletionTimestamp) { await this.finalize(crd); return; }
    const updated = await this.updateNames(crd);
    this.serve(name, updated ?? crd);
  }

  private serve(name: string, crd: KubeObject, terminating = false): void {
    const prev = this.served.get(name);
    const def = conditionTrue(crd, 'Established') ? customResourceDefinition(crd) : undefined;
    const key = def ? { group: def.group, plural: def.plural } : undefined;
    if (prev && (!key || prev.group !== key.group || prev.plural !== key.plural)) this.unserve(name);
    if (!def || !key) return;
    this.opts.serve(key.group, key.plural, terminating ? refuseCreates(def) : def);
    this.served.set(name, key);
  }

  private unserve(name: string): void {
    const prev = this.served.get(name);
    if (!prev) return;
    this.served.delete(name);
    this.opts.serve(prev.group, prev.plural, undefined);
  }

  /** The naming check's outcome written to status (when it changed); the written CRD, if any. */
  private async updateNames(crd: KubeObject): Promise<KubeObject | undefined> {
    const others = [...this.crds.values()].filter((c) => c.metadata?.name !== crd.metadata?.name && crdGroup(c) === crdGroup(crd));
    const names = crdNames(crd);
    const conflict = namingConflict(names, others.map(acceptedNames));
    const now = nowTimestamp();
    let conditions = conditionsOf(crd);
    let accepted: CrdNames = acceptedNames(crd);
    if (conflict) {
      conditions = withCondition(conditions, { type: 'NamesAccepted', status: 'False', reason: conflict.reason, message: conflict.message }, now);
      if (!conditionTrue(crd, 'Established')) conditions = withCondition(conditions, { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' }, now);
    } else {
      accepted = names;
      conditions = withCondition(conditions, { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' }, now);
      if (!conditionTrue(crd, 'Established')) conditions = withCondition(conditions, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' }, now);
    }
    const status = (crd.status ?? {}) as Record<string, unknown>;
    const acceptedJson = compactNames(accepted);
    if (deepEqual(status.acceptedNames ?? {}, acceptedJson) && deepEqual(conditionsOf(crd), conditions)) return undefined;
    return this.writeStatus(crd, { acceptedNames: acceptedJson, conditions });
  }

  private async writeStatus(crd: KubeObject, change: Record<string, unknown>): Promise<KubeObject | undefined> {
    try {
      const { object } = await this.opts.registry.update(this.def, '', crd.metadata!.name!, (cur) => {
        const o = cur!;
        if (o.metadata?.uid !== crd.metadata?.uid) throw new ApiError(409, 'Conflict', 'the CRD was replaced', {});
        o.status = { ...(o.status as Record<string, unknown> | undefined), ...change };
        return o;
      }, { subresource: 'status', internal: true, allowCreate: false });
      this.crds.set(crd.metadata!.name!, object);
      return object;
    } catch (e) {
      if (isApiError(e, 'NotFound') || isApiError(e, 'Conflict')) return undefined; // the watch brings the newer state
      throw e;
    }
  }

  /** A CRD being deleted: refuse creates, delete its custom resources, then let it go. */
  private async finalize(crd: KubeObject): Promise<void> {
    const name = crd.metadata!.name!;
    if (!crd.metadata?.finalizers?.includes(CRD_CLEANUP_FINALIZER)) { this.unserve(name); return; }
    const now = nowTimestamp();
    if (!conditionTrue(crd, 'Terminating')) {
      const conditions = withCondition(conditionsOf(crd), { type: 'Terminating', status: 'True', reason: 'InstanceDeletionInProgress', message: 'CustomResource deletion is in progress' }, now);
      crd = (await this.writeStatus(crd, { conditions })) ?? crd;
    }
    // Resources are served while they are deleted (lists and deletes work; creates do not).
    const def = customResourceDefinition(crd);
    if (def) this.serve(name, crd, true);
    const remaining = def ? await this.deleteAll(def) : 0;
    if (remaining > 0) {
      const conditions = withCondition(conditionsOf(crd), { type: 'Terminating', status: 'True', reason: 'InstanceDeletionInProgress', message: `CustomResource deletion is in progress: ${remaining} remaining` }, now);
      if (!deepEqual(conditionsOf(crd), conditions)) await this.writeStatus(crd, { conditions });
      this.retryLater(name);
      return;
    }
    this.unserve(name);
    try {
      await this.opts.registry.update(this.def, '', name, (cur) => {
        const o = cur!;
        o.metadata = { ...o.metadata, finalizers: (o.metadata?.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER) };
        return o;
      }, { internal: true, allowCreate: false });
    } catch (e) {
      if (!isApiError(e, 'NotFound') && !isApiError(e, 'Conflict')) throw e;
      if (isApiError(e, 'Conflict')) this.retryLater(name);
    }
  }

  /** Deletes every custom resource of `def`; returns how many are left (finalizers, grace). */
  private async deleteAll(def: ResourceDefinition): Promise<number> {
    const { items } = await this.opts.registry.list(def, { namespace: '' });
    let left = 0;
    for (const o of items) {
      try {
        const { deleted } = await this.opts.registry.delete(def, o.metadata?.namespace ?? '', o.metadata?.name ?? '', { propagationPolicy: 'Background' });
        if (!deleted) left++;
      } catch (e) {
        if (!isApiError(e, 'NotFound')) { left++; this.opts.log.warn({ err: e, resource: def.plural }, 'deleting a custom resource failed'); }
      }
    }
    return left;
  }

  private retryLater(name: string): void {
    if (this.retries.has(name) || this.abort.signal.aborted) return;
    this.retries.set(name, setTimeout(() => { this.retries.delete(name); this.enqueue(name); }, this.opts.cleanupRetryMs ?? 1000));
  }
}

/** The definition while its CRD is being deleted: creates get 405 as in Kubernetes. */
function refuseCreates(def: ResourceDefinition): ResourceDefinition {
  return {
    ...def,
    prepareForCreate() {
      throw new ApiError(405, 'MethodNotAllowed', `create not allowed while custom resource definition is terminating`, {});
    },
  };
}

function compactNames(n: CrdNames): Record<string, unknown> {
  const out: Record<string, unknown> = { plural: n.plural, singular: n.singular, kind: n.kind, listKind: n.listKind };
  if (n.shortNames.length) out.shortNames = n.shortNames;
  if (n.categories.length) out.categories = n.categories;
  return out;
}
