/**
 * Generic object semantics on top of the ObjectStore (Kubernetes' generic registry store):
 * create with defaults/validation/admission, guaranteed updates with resourceVersion checks,
 * status-subresource writes, finalizers and graceful deletion. Objects enter and leave in the
 * definition's storage version ("def form"); definitions with `storage` (events.k8s.io events)
 * are converted to the storage resource's form at the store boundary.
 *
 * Contract: every failure is an ApiError; a failed write leaves no partial state (allocations
 * are rolled back through WriteTxn).
 */
import type { Logger } from 'pino';
import { pino } from 'pino';
import { ApiError, errors, fieldErrors, type FieldError, type Qualified } from '../../../api/meta/status.js';
import { storageToApiError } from '../../../api/meta/storage-status.js';
import { apiVersionOf, type KubeObject, type ResourceDefinition } from '../../../api/resources/types.js';
import { isStorageError } from '../../../storage/errors.js';
import type { ListQuery, ListResult, ObjectRef, ObjectStore, WrittenJson } from '../../../storage/object-store-types.js';
import { AdmissionChain, type Phase } from '../admission/chain.js';
import type { AdmissionDeleteOptions, AdmissionOperation, AdmissionRequestInfo } from '../admission/types.js';
import { nowTimestamp, prepareCreateMeta, prepareUpdateMeta } from './object-meta.js';
import { validateObjectMetaUpdate } from '../../../api/resources/common/validation.js';
import type { ServiceAllocation } from './service-allocation.js';
import { WriteTxn } from './write-txn.js';
import { cloneJson } from '../../../util/json-clone.js';

/** What admission is told of a write besides its objects. */
export interface AdmissionOptions {
  dryRun?: boolean;
  /** The client request behind the write (user, served version ...); absent for the server's own writes. */
  request?: AdmissionRequestInfo;
}

export interface WriteOptions extends AdmissionOptions {
  /** The server's own bookkeeping (system namespaces, the `kubernetes` service): no admission plugins. */
  internal?: boolean;
  /** Runs on the object after defaults, before validation (managed fields, admission). */
  beforeValidate?(obj: KubeObject, old: KubeObject | undefined): void;
  /** Runs after validation, right before storing (managed fields). */
  beforeStore?(obj: KubeObject, old: KubeObject | undefined): void;
  /**
   * create only: the caller hands `input` over and never reads it again, so it may be modified
   * in place instead of copied first (it is still copied when a generateName retry may need it
   * and there is no freshInput).
   */
  inputOwned?: boolean;
  /**
   * create with inputOwned only: a new object equal to `input` as it came (the request body
   * decoded again), for a generateName retry, so the first attempt need not copy `input`.
   */
  freshInput?: () => KubeObject;
  /**
   * Passed to the store's write (WrittenJson): told of the stored JSON of the write. The object
   * this call returns is `w.object` itself only when it is the stored object unconverted;
   * callers compare identities before using `w.json` for it.
   */
  onWritten?: (w: WrittenJson) => void;
}

export interface UpdateOptions extends WriteOptions {
  /** '' (the object), 'status', or a status-like subresource of the definition (CSR approval). */
  subresource?: string;
  /** Create when missing: true (server-side apply), false (never), undefined (PUT: per resource). */
  allowCreate?: boolean;
  /**
   * Skip the definition's update validation (pods/binding sets spec.nodeName, which a
   * normal pod update may not change). Metadata rules still apply.
   */
  skipSpecValidation?: boolean;
  /**
   * `mutate` only reads the `current` object it is given (never changes it), so it gets the
   * registry's own copy instead of a private one.
   */
  mutateReadsCurrent?: boolean;
  /**
   * Every call of `mutate` returns a new object that shares nothing with `current` or with
   * anything the caller keeps, so the registry takes it as is instead of copying it.
   */
  mutateReturnsFresh?: boolean;
}

export interface DeleteOptions extends AdmissionOptions {
  gracePeriodSeconds?: number;
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  /** No policy given and the requested version orphans by default (ResourceDefinition.orphanDependentsByDefaultIn). */
  orphanByDefault?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
  /** A delete already admitted as something else (an eviction): no admission plugins. */
  internal?: boolean;
}

/** PUT creates these when missing (Kubernetes' AllowCreateOnUpdate). */
const CREATE_ON_UPDATE = new Set(['endpoints', 'events', 'leases', 'limitranges', 'roles', 'rolebindings', 'clusterroles', 'clusterrolebindings']);

const MAX_GENERATE_NAME_ATTEMPTS = 8;

/** The garbage collector's finalizers: dependents orphaned, or deleted first. */
const ORPHAN_FINALIZER = 'orphan';
const FOREGROUND_FINALIZER = 'foregroundDeletion';
const isGcFinalizer = (f: string): boolean => f === ORPHAN_FINALIZER || f === FOREGROUND_FINALIZER;

class NotFoundForCreate extends Error {}

export function qualified(def: ResourceDefinition, name?: string): Qualified {
  return name === undefined ? { group: def.group, resource: def.plural } : { group: def.group, resource: def.plural, name };
}

export interface RegistryOptions {
  repairMalformedUpdates: boolean;
  /**
   * --storage-versions: group (or its first DNS label, 'rbac' for rbac.authorization.k8s.io;
   * '' for core) → version to store in. Applied to definitions that serve that version and can
   * convert to it; others keep their own storage version.
   */
  storageVersions?: Readonly<Record<string, string>>;
  services?: ServiceAllocation;
  /**
   * --enable-garbage-collector: deletes record the propagation policy as the `orphan` and
   * `foregroundDeletion` finalizers for the collector (default true; false: never, as Kubernetes).
   */
  garbageCollection?: boolean;
  /** The admission plugins writes pass through; NamespaceLifecycle alone when not given. */
  admission?: AdmissionChain;
  log?: Logger;
}

export class ResourceRegistry {
  private readonly log: Logger;
  readonly admission: AdmissionChain;

  constructor(readonly store: ObjectStore, private readonly opts: RegistryOptions) {
    this.log = opts.log ?? pino({ level: 'silent' });
    this.admission = opts.admission ?? new AdmissionChain(['NamespaceLifecycle'], { store });
  }

  /** Mutating admission of a write; undefined when no plugin wants it or none had to wait. */
  private admit(operation: AdmissionOperation, def: ResourceDefinition, subresource: string, object: KubeObject, oldObject: KubeObject | undefined, opts: AdmissionOptions): void | Promise<void> {
    return this.runAdmission('admit', operation, def, subresource, object, oldObject, opts);
  }

  /** Validating admission of a write; undefined when no plugin wants it or none had to wait. */
  private validateAdmission(operation: AdmissionOperation, def: ResourceDefinition, subresource: string, object: KubeObject, oldObject: KubeObject | undefined, opts: AdmissionOptions): void | Promise<void> {
    return this.runAdmission('validate', operation, def, subresource, object, oldObject, opts);
  }

  /** The attributes are built only when a plugin wants the request (most writes have none). */
  private runAdmission(phase: Phase, operation: AdmissionOperation, def: ResourceDefinition, subresource: string, object: KubeObject | undefined, oldObject: KubeObject | undefined, opts: AdmissionOptions, target?: { namespace: string; name: string }, deleteOptions?: AdmissionDeleteOptions): void | Promise<void> {
    if (!this.admission.wants(phase, operation, def, subresource)) return undefined;
    const m = object?.metadata;
    const a = {
      operation, def, subresource, namespace: target?.namespace ?? m?.namespace ?? '', name: target?.name ?? m?.name ?? '',
      object, oldObject, dryRun: !!opts.dryRun, request: opts.request, deleteOptions,
    };
    return phase === 'admit' ? this.admission.admit(a) : this.admission.validate(a);
  }

  /**
   * Both admission phases of a subresource write whose object is not the stored one (the Scale
   * of a scale update, the Binding or Eviction of a create): `object` may be changed in place by
   * mutating plugins before the validating ones see it. Undefined when nothing had to wait.
   */
  admitSubresource(operation: AdmissionOperation, def: ResourceDefinition, subresource: string, target: { namespace: string; name: string },
    object: KubeObject, oldObject: KubeObject | undefined, opts: AdmissionOptions): void | Promise<void> {
    const ns = def.namespaced ? target.namespace : '';
    const t = { namespace: ns, name: target.name };
    const admitting = this.runAdmission('admit', operation, def, subresource, object, oldObject, opts, t);
    if (admitting) return admitting.then(() => this.runAdmission('validate', operation, def, subresource, object, oldObject, opts, t));
    return this.runAdmission('validate', operation, def, subresource, object, oldObject, opts, t);
  }

  refOf(def: ResourceDefinition, namespace: string, name: string): ObjectRef {
    const s = def.storage;
    return { resource: s?.resource ?? def.plural, group: s?.group ?? def.group, namespace: def.namespaced ? namespace : '', name };
  }

  /** The version objects of `def` are written in (its own, or the --storage-versions choice). */
  storageVersionOf(def: ResourceDefinition): string {
    const sv = this.opts.storageVersions;
    if (!sv || def.storage || !def.convert) return def.storageVersion;
    const want = sv[def.group] ?? (def.group ? sv[def.group.split('.')[0]!] : undefined);
    return want && def.versions.includes(want) ? want : def.storageVersion;
  }

  /** The object table cells are computed from (definitions sharing storage use the stored form). */
  tableSource(def: ResourceDefinition, defForm: KubeObject): KubeObject {
    return def.storage ? this.toStore(def, defForm) : defForm;
  }

  /** Stored form → def form. */
  fromStore(def: ResourceDefinition, obj: KubeObject): KubeObject {
    if (def.storage && def.convert) return def.convert(obj, def.storageVersion);
    // An object stored in another served version (another server's --storage-versions).
    if (def.convert && obj.apiVersion && obj.apiVersion !== apiVersionOf(def.group, def.storageVersion)) return def.convert(obj, def.storageVersion);
    return obj;
  }
  /** Def form → stored form. */
  toStore(def: ResourceDefinition, obj: KubeObject): KubeObject {
    if (def.storage && def.convert) return def.convert(obj, 'storage');
    const v = this.storageVersionOf(def);
    if (v !== def.storageVersion && def.convert) return def.convert(obj, v);
    return obj;
  }

  private fail(def: ResourceDefinition, name: string, e: unknown): ApiError {
    return storageToApiError(e, qualified(def, name));
  }

  private invalidIf(def: ResourceDefinition, obj: KubeObject, errs: FieldError[]): void {
    if (errs.length) throw errors.invalid(def.kind, def.group, obj.metadata?.name ?? '', errs);
  }

  async get(def: ResourceDefinition, namespace: string, name: string, resourceVersion?: string): Promise<KubeObject> {
    try {
      const rv = resourceVersion && resourceVersion !== '0' ? resourceVersion : undefined;
      return this.fromStore(def, await this.store.get(this.refOf(def, namespace, name), rv ? { resourceVersion: rv } : undefined));
    } catch (e) { throw this.fail(def, name, e); }
  }

  async list(def: ResourceDefinition, q: Omit<ListQuery, 'resource' | 'group'>): Promise<ListResult> {
    const ref = this.refOf(def, q.namespace, 'x');
    try {
      const res = await this.store.list({ ...q, resource: ref.resource, group: ref.group, namespace: def.namespaced ? q.namespace : '' });
      return def.storage ? { ...res, items: res.items.map((o) => this.fromStore(def, o)) } : res;
    } catch (e) { throw this.fail(def, '', e); }
  }

  private ttlOf(def: ResourceDefinition): number | undefined {
    return def.ttlSeconds?.();
  }

  /** Creates an object given in def form with metadata.namespace already set. */
  async create(def: ResourceDefinition, input: KubeObject, opts: WriteOptions = {}): Promise<KubeObject> {
    // A generated name that is taken is retried under another, from the input as it came.
    const retriable = !!input.metadata?.generateName && !input.metadata.name;
    for (let attempt = 1; ; attempt++) {
      // `input` itself when the caller handed it over and no retry needs it as it came (a
      // retry then gets freshInput's); otherwise a copy.
      const obj = !opts.inputOwned || (retriable && !opts.freshInput) ? cloneJson(input)
        : attempt === 1 ? input : opts.freshInput!();
      prepareCreateMeta(def, obj);
      def.defaults?.(obj);
      // Admission settles at once when the plugins find what they need in the cache (the
      // namespace, the pod's service account): no await then.
      const admitting = opts.internal ? undefined : this.admit('CREATE', def, '', obj, undefined, opts);
      if (admitting) await admitting;
      def.prepareForCreate?.(obj);
      opts.beforeValidate?.(obj, undefined);
      this.invalidIf(def, obj, def.validate?.(obj) ?? []);
      const validating = opts.internal ? undefined : this.validateAdmission('CREATE', def, '', obj, undefined, opts);
      if (validating) await validating;
      const ns = obj.metadata?.namespace ?? '';
      // Only service creates allocate (IPs, ports): other creates skip the transaction's awaits.
      const txn = def.group === '' && def.plural === 'services' && this.opts.services ? new WriteTxn() : undefined;
      try {
        if (txn) await this.opts.services!.onCreate(obj, txn, !!opts.dryRun);
        opts.beforeStore?.(obj, undefined);
        // `obj` is this call's own and not read after the write: the store may keep it as the result.
        const stored = await this.store.create(this.refOf(def, ns, obj.metadata!.name!), this.toStore(def, obj),
          { ttlSeconds: this.ttlOf(def), dryRun: opts.dryRun, adopt: true, onWritten: opts.onWritten });
        if (txn) await txn.commit();
        return this.fromStore(def, stored);
      } catch (e) {
        if (txn) await txn.rollback();
        if (isStorageError(e, 'KeyExists') && retriable && attempt < MAX_GENERATE_NAME_ATTEMPTS) continue;
        if (isStorageError(e, 'KeyExists') && retriable) {
          throw new ApiError(409, 'AlreadyExists', `${def.plural} "${obj.metadata?.name ?? ''}" already exists, the server was not able to generate a unique name for the object`,
            { name: obj.metadata?.name, group: def.group, kind: def.plural, retryAfterSeconds: 1 });
        }
        throw this.fail(def, obj.metadata?.name ?? '', e);
      }
    }
  }

  /**
   * Read-modify-write. `mutate` gets a private copy of the current object (def form; the
   * registry's own with `mutateReadsCurrent`) and returns the desired object; its
   * metadata.resourceVersion, when set, must match (409 otherwise). `mutate` runs again when
   * the write is retried (a conflict, or a stale cached read).
   */
  async update(def: ResourceDefinition, namespace: string, name: string,
    mutate: (current: KubeObject | undefined) => KubeObject | Promise<KubeObject>, opts: UpdateOptions = {}): Promise<{ object: KubeObject; created: boolean }> {
    const ref = this.refOf(def, namespace, name);
    // Only service updates allocate (IPs, ports): other updates skip the transaction's awaits.
    const txn = def.group === '' && def.plural === 'services' && this.opts.services && !opts.subresource ? new WriteTxn() : undefined;
    let deleteAfter = false;
    let result: KubeObject;
    try {
      result = await this.store.guaranteedUpdate(ref, async (storedCur) => {
        if (txn) await txn.rollback(); // a retried attempt starts clean
        if (!storedCur) throw new NotFoundForCreate();
        const cur = this.fromStore(def, storedCur);
        // Awaited only when it is a promise: PUT and PATCH mutate synchronously.
        let mutated = mutate(opts.mutateReadsCurrent ? cur : cloneJson(cur));
        if (mutated instanceof Promise) mutated = await mutated;
        const desired = opts.mutateReturnsFresh ? mutated : cloneJson(mutated);
        let obj = this.prepareUpdate(def, desired, cur, opts);
        if (obj instanceof Promise) obj = await obj;
        const validating = opts.internal ? undefined : this.validateAdmission('UPDATE', def, opts.subresource ?? '', obj, cur, opts);
        if (validating) await validating;
        if (txn) await this.opts.services!.onUpdate(obj, cur, txn, !!opts.dryRun);
        opts.beforeStore?.(obj, cur);
        // As Kubernetes' store: an update completes a pending deletion only when no finalizer
        // remains and the deletion is not graceful (a pod being stopped keeps its status writes).
        const grace = cur.metadata?.deletionGracePeriodSeconds;
        deleteAfter = !!cur.metadata?.deletionTimestamp && !(obj.metadata?.finalizers?.length) && !grace && !this.namespaceFinalizersPending(def, obj);
        return this.toStore(def, obj);
      }, { dryRun: opts.dryRun, ttlSeconds: this.ttlOf(def), onWritten: opts.onWritten });
      if (txn) await txn.commit();
    } catch (e) {
      if (txn) await txn.rollback();
      if (e instanceof NotFoundForCreate) {
        if (!(opts.allowCreate ?? CREATE_ON_UPDATE.has(def.plural))) throw errors.notFound(qualified(def, name));
        const desired = await mutate(undefined);
        desired.metadata = { ...(desired.metadata ?? {}), name, ...(def.namespaced ? { namespace } : {}) };
        if (desired.metadata.resourceVersion) throw errors.notFound(qualified(def, name));
        return { object: await this.create(def, desired, { ...opts, inputOwned: opts.inputOwned || opts.mutateReturnsFresh }), created: true };
      }
      throw this.fail(def, name, e);
    }
    let object = this.fromStore(def, result);
    if (deleteAfter && !opts.dryRun) {
      try {
        object = this.fromStore(def, await this.store.delete(ref, { preconditions: { uid: result.metadata?.uid, resourceVersion: result.metadata?.resourceVersion } }));
        await this.afterDelete(def, object);
      } catch (e) {
        if (!isStorageError(e, 'KeyNotFound') && !isStorageError(e, 'Conflict')) throw this.fail(def, name, e);
      }
    }
    return { object, created: false };
  }

  /**
   * The server's own status write on an object it read: `status` is merged into the stored
   * status only if the object is still at the resourceVersion `read` has (409 Conflict
   * otherwise, so the caller reads again). For charges that must not be counted twice (quota
   * usage, disruption budgets).
   */
  async updateStatusAt(def: ResourceDefinition, read: KubeObject, status: Record<string, unknown>): Promise<void> {
    const m = read.metadata ?? {};
    await this.update(def, m.namespace ?? '', m.name ?? '', (cur) => {
      const o = cur!;
      o.metadata = { ...o.metadata, resourceVersion: m.resourceVersion };
      o.status = { ...(o.status as Record<string, unknown> | undefined), ...status };
      return o;
    }, { subresource: 'status', internal: true, allowCreate: false });
  }

  /**
   * The finalizers an object keeps once deleted with `opts` (Kubernetes'
   * deletionFinalizersForGarbageCollection): the policy becomes the collector's `orphan` or
   * `foregroundDeletion` finalizer, Background drops both; with no policy, one the object already
   * carries stands, else the version's default. The same array when nothing changes.
   */
  private finalizersAfterDelete(existing: string[], opts: DeleteOptions): string[] {
    if (this.opts.garbageCollection === false) return existing;
    let wanted: string | undefined;
    switch (opts.propagationPolicy) {
      case 'Orphan': wanted = ORPHAN_FINALIZER; break;
      case 'Foreground': wanted = FOREGROUND_FINALIZER; break;
      case 'Background': wanted = undefined; break;
      default:
        if (existing.some(isGcFinalizer) || !opts.orphanByDefault) return existing;
        wanted = ORPHAN_FINALIZER;
    }
    const kept = existing.filter((f) => !isGcFinalizer(f));
    const next = wanted ? [...kept, wanted] : kept;
    return next.length === existing.length && next.every((f, i) => f === existing[i]) ? existing : next;
  }

  private namespaceFinalizersPending(def: ResourceDefinition, obj: KubeObject): boolean {
    if (def.group !== '' || def.plural !== 'namespaces') return false;
    const f = (obj.spec as { finalizers?: unknown[] } | undefined)?.finalizers;
    return Array.isArray(f) && f.length > 0;
  }

  private prepareUpdate(def: ResourceDefinition, desired: KubeObject, cur: KubeObject, opts: UpdateOptions): KubeObject | Promise<KubeObject> {
    const meta = (desired.metadata ??= {}), cm = cur.metadata ?? {};
    if (meta.resourceVersion && meta.resourceVersion !== cm.resourceVersion) throw errors.conflict(qualified(def, cm.name));
    if (!meta.uid) {
      if (this.opts.repairMalformedUpdates) meta.uid = cm.uid;
      else this.invalidIf(def, desired, [fieldErrors.invalid('metadata.uid', '', 'field is immutable')]);
    } else if (meta.uid !== cm.uid) {
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${cm.uid ?? ''}`, { name: cm.name, group: def.group, kind: def.plural });
    }
    if (meta.name === undefined || meta.name === '') meta.name = cm.name;
    if (def.namespaced && !meta.namespace) meta.namespace = cm.namespace;
    meta.resourceVersion = cm.resourceVersion;
    if (opts.subresource) {
      // Mutating admission sees the object as the client sent it, before the status rules.
      const admitting = opts.internal ? undefined : this.admit('UPDATE', def, opts.subresource, desired, cur, opts);
      if (admitting) return admitting.then(() => this.prepareStatusUpdate(def, desired, cur, opts));
      return this.prepareStatusUpdate(def, desired, cur, opts);
    }
    const obj = desired;
    def.defaults?.(obj);
    const admitting = opts.internal ? undefined : this.admit('UPDATE', def, '', obj, cur, opts);
    if (admitting) return admitting.then(() => this.finishUpdate(def, obj, cur, opts));
    return this.finishUpdate(def, obj, cur, opts);
  }

  /** A status(-like) subresource write: status (and managedFields) from `desired`, everything else as stored. */
  private prepareStatusUpdate(def: ResourceDefinition, desired: KubeObject, cur: KubeObject, opts: UpdateOptions): KubeObject {
    const obj: KubeObject = { ...cloneJson(cur), status: desired.status };
    obj.metadata = { ...cloneJson(cur.metadata ?? {}) };
    if (desired.metadata?.managedFields) obj.metadata.managedFields = desired.metadata.managedFields;
    def.prepareForStatusUpdate?.(obj, cur, opts.subresource, desired);
    prepareUpdateMeta(def, obj, cur);
    opts.beforeValidate?.(obj, cur);
    this.invalidIf(def, obj, def.validateStatus?.(obj, cur, opts.subresource) ?? []);
    return obj;
  }

  /** The resource's own update steps after mutating admission: prepare, metadata, validation. */
  private finishUpdate(def: ResourceDefinition, obj: KubeObject, cur: KubeObject, opts: UpdateOptions): KubeObject {
    const cm = cur.metadata ?? {};
    def.prepareForUpdate?.(obj, cur);
    prepareUpdateMeta(def, obj, cur);
    if (cm.deletionTimestamp) {
      const added = (obj.metadata?.finalizers ?? []).filter((f) => !(cm.finalizers ?? []).includes(f));
      if (added.length) this.invalidIf(def, obj, [fieldErrors.forbidden('metadata.finalizers', `no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`)]);
    }
    opts.beforeValidate?.(obj, cur);
    if (opts.skipSpecValidation) this.invalidIf(def, obj, validateObjectMetaUpdate(obj, cur));
    else this.invalidIf(def, obj, def.validate?.(obj, cur) ?? []);
    return obj;
  }

  private async afterDelete(def: ResourceDefinition, obj: KubeObject): Promise<void> {
    if (def.group === '' && def.plural === 'services' && this.opts.services) {
      await this.opts.services.onDelete(obj).catch((e: unknown) => this.log.warn({ err: e }, 'releasing service allocations failed'));
    }
  }

  private checkPreconditions(def: ResourceDefinition, cur: KubeObject, pre: DeleteOptions['preconditions']): void {
    if (pre?.uid && pre.uid !== cur.metadata?.uid) {
      throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${def.plural}${def.group ? '.' + def.group : ''} "${cur.metadata?.name ?? ''}": Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${cur.metadata?.uid ?? ''}`,
        { name: cur.metadata?.name, group: def.group, kind: def.plural });
    }
    if (pre?.resourceVersion && pre.resourceVersion !== cur.metadata?.resourceVersion) {
      throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${def.plural}${def.group ? '.' + def.group : ''} "${cur.metadata?.name ?? ''}": Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${cur.metadata?.resourceVersion ?? ''}`,
        { name: cur.metadata?.name, group: def.group, kind: def.plural });
    }
  }

  /**
   * Deletes, or marks for deletion when finalizers, a propagation finalizer or a grace period
   * keep the object. Returns the last state and whether it is gone.
   */
  async delete(def: ResourceDefinition, namespace: string, name: string, opts: DeleteOptions = {}): Promise<{ object: KubeObject; deleted: boolean }> {
    def.guardDelete?.(name);
    const ref = this.refOf(def, namespace, name);
    const target = { namespace: def.namespaced ? namespace : '', name };
    for (let attempt = 0; attempt < 16; attempt++) {
      let cur: KubeObject;
      try { cur = this.fromStore(def, await this.store.get(ref)); } catch (e) { throw this.fail(def, name, e); }
      this.checkPreconditions(def, cur, opts.preconditions);
      // As Kubernetes' store: admission sees the object about to go (again on a retried attempt).
      if (!opts.internal) {
        const admitting = this.runAdmission('admit', 'DELETE', def, '', undefined, cur, opts, target, opts);
        if (admitting) await admitting;
        const validating = this.runAdmission('validate', 'DELETE', def, '', undefined, cur, opts, target, opts);
        if (validating) await validating;
      }
      const meta = cur.metadata ?? {};
      const grace = def.gracePeriodSeconds?.(cur, opts.gracePeriodSeconds) ?? 0;
      const existingFinalizers = meta.finalizers ?? [];
      const finalizers = this.finalizersAfterDelete(existingFinalizers, opts);
      const isNamespace = def.group === '' && def.plural === 'namespaces';
      const keep = finalizers.length > 0 || grace > 0 || (isNamespace && this.namespaceFinalizersPending(def, cur));
      if (keep) {
        // Already being deleted with nothing new to record: report the current state.
        const alreadyDeleting = !!meta.deletionTimestamp;
        const shortens = alreadyDeleting && grace > 0 && (meta.deletionGracePeriodSeconds ?? Infinity) > grace;
        const finalizersChange = finalizers !== existingFinalizers;
        if (alreadyDeleting && !shortens && !finalizersChange) return { object: cur, deleted: false };
        try {
          const stored = await this.store.guaranteedUpdate(ref, (s) => {
            if (!s) throw new NotFoundForCreate();
            const o = this.fromStore(def, s);
            this.checkPreconditions(def, o, opts.preconditions);
            const m = (o.metadata ??= {});
            if (!m.deletionTimestamp || shortens) {
              m.deletionTimestamp = nowTimestamp(new Date(Date.now() + grace * 1000));
              m.deletionGracePeriodSeconds = grace;
            }
            const fs = this.finalizersAfterDelete(m.finalizers ?? [], opts);
            if (fs !== m.finalizers) { if (fs.length) m.finalizers = fs; else delete m.finalizers; }
            if (isNamespace) o.status = { ...((o.status as object | undefined) ?? {}), phase: 'Terminating' };
            return this.toStore(def, o);
          }, { dryRun: opts.dryRun });
          return { object: this.fromStore(def, stored), deleted: false };
        } catch (e) {
          if (e instanceof NotFoundForCreate) throw errors.notFound(qualified(def, name));
          throw this.fail(def, name, e);
        }
      }
      try {
        const last = await this.store.delete(ref, { preconditions: { uid: meta.uid, resourceVersion: meta.resourceVersion }, dryRun: opts.dryRun });
        const object = this.fromStore(def, last);
        if (!opts.dryRun) await this.afterDelete(def, object);
        return { object, deleted: true };
      } catch (e) {
        if (isStorageError(e, 'Conflict')) continue; // changed meanwhile: decide again
        throw this.fail(def, name, e);
      }
    }
    throw errors.conflict(qualified(def, name), 'the object kept changing while being deleted; please retry');
  }
}
