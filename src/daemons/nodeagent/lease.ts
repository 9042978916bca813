/**
 * The node heartbeat: a coordination.k8s.io/v1 Lease in kube-node-lease named after the node,
 * renewed every 10 s (leaseDurationSeconds 40), owned by the Node so it goes with it.
 * Contract: `run` never throws; a failed renewal is retried with a short backoff, bounded by
 * the renew interval.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import { kubeMicroTime } from './pod-types.js';
import { abortableSleep } from '../../util/abort.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
export const LEASE_DURATION_SECONDS = 40;
export const LEASE_RENEW_INTERVAL_MS = 10_000;
const LEASES = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: NODE_LEASE_NAMESPACE } as const;

export interface NodeLeaseOptions {
  readonly client: RestClient;
  readonly nodeName: string;
  /** The Node's uid ('' while unknown: the owner reference is added once known). */
  readonly nodeUid: () => string;
  readonly renewIntervalMs?: number;
  readonly log: Logger;
}

export class NodeLease {
  renewals = 0;
  private lease: KubeObject | undefined;

  constructor(private readonly o: NodeLeaseOptions) {}

  private desired(base: KubeObject | undefined): KubeObject {
    const uid = this.o.nodeUid();
    const meta = { ...(base?.metadata ?? {}), name: this.o.nodeName, namespace: NODE_LEASE_NAMESPACE };
    if (uid && !(meta.ownerReferences ?? []).some((r) => r.uid === uid)) {
      meta.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: this.o.nodeName, uid }];
    }
    return {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: meta,
      spec: { holderIdentity: this.o.nodeName, leaseDurationSeconds: LEASE_DURATION_SECONDS, renewTime: kubeMicroTime(Date.now()) },
    };
  }

  /** One renewal (creating the Lease when absent). */
  async renew(signal?: AbortSignal): Promise<void> {
    const opts = signal ? { signal } : {};
    if (!this.lease) {
      try {
        this.lease = await this.o.client.get(LEASES, this.o.nodeName, opts);
      } catch (e) {
        if (!isApiError(e) || e.status.code !== 404) throw e;
        this.lease = await this.o.client.create(LEASES, this.desired(undefined), opts);
        this.renewals++;
        return;
      }
    }
    try {
      this.lease = await this.o.client.update(LEASES, this.desired(this.lease), opts);
      this.renewals++;
    } catch (e) {
      this.lease = undefined; // conflict or gone: re-read next time
      throw e;
    }
  }

  async run(signal: AbortSignal): Promise<void> {
    const interval = this.o.renewIntervalMs ?? LEASE_RENEW_INTERVAL_MS;
    while (!signal.aborted) {
      let wait = interval;
      try {
        await this.renew(signal);
      } catch (e) {
        if (signal.aborted) return;
        this.o.log.warn({ err: (e as Error).message }, 'failed to renew node lease');
        wait = Math.min(interval, 1000);
      }
      await abortableSleep(wait, signal);
    }
  }
}
