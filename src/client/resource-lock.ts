/**
 * Leader-election locks: the leader record kept on a Lease (coordination.k8s.io/v1, in its
 * spec), or as JSON in the `control-plane.alpha.kubernetes.io/leader` annotation of an
 * Endpoints or ConfigMap object. Updates carry the resourceVersion last read, so two
 * candidates racing for the lock cannot both win: the loser gets a 409 Conflict.
 */
import { microTime } from '../api/meta/time.js';
import { isApiError } from '../api/meta/status.js';
import type { KubeObject } from '../api/resources/types.js';
import type { ResourceRef, RestClient } from './rest-client.js';

export const LEADER_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';

/** Times are ms since the epoch; holderIdentity '' means released. */
export interface LeaderElectionRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: number;
  renewTime: number;
  leaderTransitions: number;
  /**
   * The lock object's resourceVersion when read (absent when writing). Candidates compare it
   * to notice renewals: annotation records hold whole seconds, so two renewals within one
   * second have identical records.
   */
  version?: string;
}

export interface ResourceLock {
  /** The current record, or undefined when the lock object does not exist. */
  get(signal?: AbortSignal): Promise<LeaderElectionRecord | undefined>;
  /** Creates the lock object; fails (409) if someone else created it first. */
  create(rec: LeaderElectionRecord, signal?: AbortSignal): Promise<void>;
  /** Replaces the record, conditional on the object not having changed since the last get. */
  update(rec: LeaderElectionRecord, signal?: AbortSignal): Promise<void>;
  describe(): string;
}

export type LockKind = 'leases' | 'endpoints' | 'configmaps';

/** MicroTime: RFC 3339 with exactly six fractional digits. */
export function formatMicroTime(ms: number): string {
  return microTime(ms);
}

function parseTime(v: unknown): number {
  if (typeof v !== 'string' || !v) return 0;
  const t = Date.parse(v);
  return Number.isNaN(t) ? 0 : t;
}

abstract class ObjectLock implements ResourceLock {
  protected current: KubeObject | undefined;
  constructor(protected readonly client: RestClient, protected readonly ref: ResourceRef, protected readonly name: string) {}

  protected abstract readRecord(obj: KubeObject): LeaderElectionRecord | undefined;
  protected abstract writeRecord(obj: KubeObject, rec: LeaderElectionRecord): KubeObject;

  async get(signal?: AbortSignal): Promise<LeaderElectionRecord | undefined> {
    try {
      this.current = await this.client.get(this.ref, this.name, signal ? { signal } : {});
    } catch (e) {
      if (isApiError(e) && e.code === 404) { this.current = undefined; return undefined; }
      throw e;
    }
    const rec = this.readRecord(this.current) ?? { holderIdentity: '', leaseDurationSeconds: 0, acquireTime: 0, renewTime: 0, leaderTransitions: 0 };
    const rv = this.current.metadata?.resourceVersion;
    return rv ? { ...rec, version: rv } : rec;
  }

  async create(rec: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
    const obj = this.writeRecord({ metadata: { name: this.name, namespace: this.ref.namespace ?? '' } }, rec);
    this.current = await this.client.create(this.ref, obj, signal ? { signal } : {});
  }

  async update(rec: LeaderElectionRecord, signal?: AbortSignal): Promise<void> {
    if (!this.current) throw new Error(`${this.describe()}: update before get`);
    this.current = await this.client.update(this.ref, this.writeRecord(this.current, rec), signal ? { signal } : {});
  }

  describe(): string { return `${this.ref.namespace ?? ''}/${this.name} (${this.ref.resource})`; }
}

export class LeaseLock extends ObjectLock {
  constructor(client: RestClient, namespace: string, name: string) {
    super(client, { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace }, name);
  }

  protected readRecord(obj: KubeObject): LeaderElectionRecord {
    const s = (obj.spec ?? {}) as Record<string, unknown>;
    return {
      holderIdentity: typeof s.holderIdentity === 'string' ? s.holderIdentity : '',
      leaseDurationSeconds: typeof s.leaseDurationSeconds === 'number' ? s.leaseDurationSeconds : 0,
      acquireTime: parseTime(s.acquireTime), renewTime: parseTime(s.renewTime),
      leaderTransitions: typeof s.leaseTransitions === 'number' ? s.leaseTransitions : 0,
    };
  }

  protected writeRecord(obj: KubeObject, rec: LeaderElectionRecord): KubeObject {
    const spec: Record<string, unknown> = { ...(obj.spec as Record<string, unknown> | undefined), holderIdentity: rec.holderIdentity, leaseDurationSeconds: rec.leaseDurationSeconds, leaseTransitions: rec.leaderTransitions };
    if (rec.acquireTime) spec.acquireTime = formatMicroTime(rec.acquireTime);
    if (rec.renewTime) spec.renewTime = formatMicroTime(rec.renewTime);
    return { ...obj, apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', spec };
  }
}

/** The annotation-based locks (Endpoints, ConfigMap). */
export class AnnotationLock extends ObjectLock {
  constructor(client: RestClient, kind: 'endpoints' | 'configmaps', namespace: string, name: string) {
    super(client, { group: '', version: 'v1', resource: kind, namespace }, name);
  }

  protected readRecord(obj: KubeObject): LeaderElectionRecord | undefined {
    const text = obj.metadata?.annotations?.[LEADER_ANNOTATION];
    if (!text) return undefined;
    let v: Record<string, unknown>;
    try { v = JSON.parse(text) as Record<string, unknown>; } catch { return undefined; }
    return {
      holderIdentity: typeof v.holderIdentity === 'string' ? v.holderIdentity : '',
      leaseDurationSeconds: typeof v.leaseDurationSeconds === 'number' ? v.leaseDurationSeconds : 0,
      acquireTime: parseTime(v.acquireTime), renewTime: parseTime(v.renewTime),
      leaderTransitions: typeof v.leaderTransitions === 'number' ? v.leaderTransitions : 0,
    };
  }

  protected writeRecord(obj: KubeObject, rec: LeaderElectionRecord): KubeObject {
    const text = JSON.stringify({
      holderIdentity: rec.holderIdentity, leaseDurationSeconds: rec.leaseDurationSeconds,
      // Sub-second times (still RFC 3339, which Go's parser accepts): with whole seconds two
      // renewals within one second would write identical objects, a no-op update that other
      // candidates cannot see, so they could time the lease out while the leader still leads.
      acquireTime: formatMicroTime(rec.acquireTime), renewTime: formatMicroTime(rec.renewTime), leaderTransitions: rec.leaderTransitions,
    });
    const kind = this.ref.resource === 'endpoints' ? 'Endpoints' : 'ConfigMap';
    return { ...obj, apiVersion: 'v1', kind, metadata: { ...obj.metadata, annotations: { ...obj.metadata?.annotations, [LEADER_ANNOTATION]: text } } };
  }
}

export function newResourceLock(kind: LockKind, client: RestClient, namespace: string, name: string): ResourceLock {
  return kind === 'leases' ? new LeaseLock(client, namespace, name) : new AnnotationLock(client, kind, namespace, name);
}
