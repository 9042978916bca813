/**
 * The state of one deployment sync and the writes it makes. `d` is a private working copy:
 * after every write it takes the server's answer, so later writes in the same sync carry the
 * current resourceVersion (every write is a compare-and-swap; a stale cache means a 409 and
 * a retried sync, never a lost update).
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { ResourceRef, RestClient } from '../../deps.js';
import type { EventRecorder } from '../../events.js';
import { REVISION_ANNOTATION, replicas, type DeploymentStatus } from './util.js';

export const DEPLOYMENTS: ResourceRef = { group: 'apps', version: 'v1', resource: 'deployments' };
export const REPLICASETS: ResourceRef = { group: 'apps', version: 'v1', resource: 'replicasets' };

export interface Requeue {
  after(ms: number): void;
  rateLimited(): void;
}

export class DeploymentSync {
  d: KubeObject;

  constructor(
    readonly client: RestClient,
    readonly log: Logger,
    d: KubeObject,
    /** ReplicaSets this deployment controls (after adoption and release). */
    public rsList: KubeObject[],
    /** Pods by the uid of their controlling ReplicaSet (for Recreate). */
    readonly podMap: Map<string, KubeObject[]>,
    readonly requeue: Requeue,
    readonly events: EventRecorder,
  ) {
    this.d = structuredClone(d);
  }

  get namespace(): string { return this.d.metadata?.namespace ?? ''; }
  get name(): string { return this.d.metadata?.name ?? ''; }
  get status(): DeploymentStatus { return (this.d.status ??= {}) as DeploymentStatus; }

  private ref(r: ResourceRef): ResourceRef { return { ...r, namespace: this.namespace }; }

  private remember(rs: KubeObject): void {
    const uid = rs.metadata?.uid;
    const i = this.rsList.findIndex((x) => x.metadata?.uid === uid);
    if (i >= 0) this.rsList[i] = rs; else this.rsList.push(rs);
  }

  async createRS(rs: KubeObject): Promise<KubeObject> {
    const created = await this.client.create(this.ref(REPLICASETS), rs);
    this.remember(created);
    return created;
  }

  async updateRS(rs: KubeObject): Promise<KubeObject> {
    const updated = await this.client.update(this.ref(REPLICASETS), rs);
    this.remember(updated);
    return updated;
  }

  async deleteRS(rs: KubeObject): Promise<void> {
    try {
      await this.client.delete(this.ref(REPLICASETS), rs.metadata?.name ?? '', { preconditions: { uid: rs.metadata?.uid ?? '' } });
    } catch (e) {
      if (!(isApiError(e) && e.code === 404)) throw e;
    }
    this.rsList = this.rsList.filter((x) => x.metadata?.uid !== rs.metadata?.uid);
  }

  /** Writes `status` through the status subresource. */
  async writeStatus(status: DeploymentStatus = this.status): Promise<void> {
    const updated = await this.client.update(this.ref(DEPLOYMENTS), { ...this.d, status }, { subresource: 'status' });
    this.d = structuredClone(updated);
  }

  /**
   * Sets the deployment's revision annotation; true when it changed. An update checked by
   * resourceVersion, as Kubernetes' controller writes it: its role grants update, not patch.
   */
  async setRevision(revision: string): Promise<boolean> {
    if (this.d.metadata?.annotations?.[REVISION_ANNOTATION] === revision) return false;
    const meta = this.d.metadata ?? {};
    const patched = await this.client.update(this.ref(DEPLOYMENTS), {
      ...this.d, metadata: { ...meta, annotations: { ...meta.annotations, [REVISION_ANNOTATION]: revision } },
    });
    const status = this.d.status;
    this.d = structuredClone(patched);
    this.d.status = status;
    return true;
  }

  get desired(): number { return replicas(this.d); }
}
