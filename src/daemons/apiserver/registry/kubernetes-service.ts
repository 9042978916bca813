/**
 * The `kubernetes` service in `default` (first service IP, 443 → secure port) and its
 * endpoints (the Endpoints, and the EndpointSlice of kubernetes-endpointslice.ts) listing the API
 * servers, reconciled per --endpoint-reconciler-type:
 *  - master-count: add our address; keep at most --apiserver-count addresses (ours kept);
 *  - lease: each server keeps a TTL'd lease object (/registry/masterleases/<ip>); the endpoints
 *    list every live lease;
 *  - none: the service exists, the endpoints are left alone.
 * Runs every reconcile interval until stopped; on stop our address is withdrawn (master-count,
 * lease). With --secure-port=0 there is nothing to publish, and it does not run.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { services } from '../../../api/resources/core/services.js';
import { endpoints } from '../../../api/resources/core/endpoints.js';
import { isStorageError } from '../../../storage/errors.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import type { ResourceRegistry } from './resource-registry.js';
import type { IpAllocator } from './ip-allocator.js';
import { writeKubernetesEndpointSlice } from './kubernetes-endpointslice.js';
import { endpointIpProblems } from '../../../api/resources/discovery/endpointslices.js';

export interface KubernetesServiceOptions {
  registry: ResourceRegistry;
  store: ObjectStore;
  ips: IpAllocator;
  advertiseAddress: string;
  securePort: number;
  reconcilerType: string;
  apiserverCount: number;
  /** --core-service-node-port: non-zero makes the service type NodePort on this port. */
  nodePort?: number;
  intervalMs: number;
  log: Logger;
}

const LEASE_TTL_SECONDS = 15;
type Obj = Record<string, unknown>;

export class KubernetesServiceReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private started = false;

  constructor(private readonly o: KubernetesServiceOptions) {}

  async start(): Promise<void> {
    // --secure-port=0: no listener, so no address to publish (a service port 0 is invalid).
    if (this.o.securePort === 0) {
      this.o.log.info('--secure-port=0: the kubernetes service and its endpoints are not published');
      return;
    }
    this.started = true;
    // Another API server starting at once may write the same objects between a read and a write here.
    await this.reconcile().catch((e: unknown) => {
      if (isApiError(e, 'AlreadyExists') || isApiError(e, 'Conflict')) return this.reconcile();
      throw e;
    });
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.reconcile().catch((e: unknown) => this.o.log.warn({ err: e }, 'kubernetes service reconcile failed')).finally(() => { this.running = undefined; });
    }, this.o.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    if (!this.started || this.o.reconcilerType === 'none') return;
    try {
      if (this.o.reconcilerType === 'lease') {
        await this.o.store.delete(this.leaseRef()).catch(() => undefined);
        await this.writeEndpoints(await this.leaseAddresses());
      } else {
        const cur = await this.currentAddresses();
        await this.writeEndpoints(cur.filter((a) => a !== this.o.advertiseAddress));
      }
    } catch (e) {
      this.o.log.warn({ err: e }, 'withdrawing this API server from the kubernetes endpoints failed');
    }
  }

  async reconcile(): Promise<void> {
    await this.ensureService();
    switch (this.o.reconcilerType) {
      case 'none': return;
      case 'lease': {
        await this.renewLease();
        await this.writeEndpoints(await this.leaseAddresses());
        return;
      }
      default: {
        const cur = await this.currentAddresses();
        let want = cur.includes(this.o.advertiseAddress) ? cur : [...cur, this.o.advertiseAddress];
        if (want.length > Math.max(1, this.o.apiserverCount)) {
          want = [this.o.advertiseAddress, ...want.filter((a) => a !== this.o.advertiseAddress)].slice(0, Math.max(1, this.o.apiserverCount));
        }
        await this.writeEndpoints(want);
      }
    }
  }

  private serviceSpec(): Obj {
    return { type: this.serviceType(), clusterIP: this.o.ips.firstIp(), sessionAffinity: 'None', ports: [this.servicePort()] };
  }

  private serviceType(): string { return this.o.nodePort ? 'NodePort' : 'ClusterIP'; }

  private servicePort(): Obj {
    return { name: 'https', port: 443, protocol: 'TCP', targetPort: this.o.securePort, ...(this.o.nodePort ? { nodePort: this.o.nodePort } : {}) };
  }

  private async ensureService(): Promise<void> {
    const { registry } = this.o;
    let existing: KubeObject | undefined;
    try { existing = await registry.get(services, 'default', 'kubernetes'); } catch (e) { if (!isApiError(e, 'NotFound')) throw e; }
    if (!existing) {
      try {
        await registry.create(services, {
          apiVersion: 'v1', kind: 'Service',
          metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
          spec: this.serviceSpec(),
        }, { internal: true });
      } catch (e) {
        // Another API server starting at once made it first: its IP allocation may fail
        // (the IP is taken) before the name clash shows, so look for the service itself.
        if (!isApiError(e, 'AlreadyExists')) await registry.get(services, 'default', 'kubernetes').catch(() => { throw e; });
      }
      return;
    }
    const spec = (existing.spec ?? {}) as Obj;
    const ports = spec.ports as Obj[] | undefined;
    const p = ports?.[0];
    if (ports?.length !== 1 || p?.port !== 443 || p?.targetPort !== this.o.securePort || p?.name !== 'https'
      || spec.type !== this.serviceType() || p?.nodePort !== (this.o.nodePort || undefined)) {
      await registry.update(services, 'default', 'kubernetes', (cur) => {
        const o = cur!;
        const spec = (o.spec ??= {}) as Obj;
        spec.type = this.serviceType();
        spec.ports = [this.servicePort()];
        delete o.metadata!.resourceVersion;
        return o;
      }, { internal: true });
    }
  }

  private async currentAddresses(): Promise<string[]> {
    try {
      const ep = await this.o.registry.get(endpoints, 'default', 'kubernetes');
      const subsets = (ep.subsets as Obj[] | undefined) ?? [];
      return subsets.flatMap((s) => ((s.addresses as Obj[] | undefined) ?? []).map((a) => String(a.ip)));
    } catch (e) {
      if (isApiError(e, 'NotFound')) return [];
      throw e;
    }
  }

  private async writeEndpoints(addresses: string[]): Promise<void> {
    // Endpoints refuse what an EndpointSlice refuses (a loopback advertise address, say): such an
    // address is left out of both rather than failing every reconcile.
    const sorted = [...new Set(addresses)].filter((a) => endpointIpProblems(a).length === 0).sort();
    const subsets = sorted.length ? [{ addresses: sorted.map((ip) => ({ ip })), ports: [{ name: 'https', port: this.o.securePort, protocol: 'TCP' }] }] : [];
    await this.o.registry.update(endpoints, 'default', 'kubernetes', (cur) => {
      const o: KubeObject = cur ?? { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'kubernetes', namespace: 'default' } };
      o.metadata = { ...(o.metadata ?? {}), labels: { ...(o.metadata?.labels ?? {}), 'endpointslice.kubernetes.io/skip-mirror': 'true' } };
      delete o.metadata.resourceVersion;
      if (subsets.length) o.subsets = subsets; else delete o.subsets;
      return o;
    }, { internal: true });
    await writeKubernetesEndpointSlice(this.o.registry, this.o.ips.firstIp(), sorted, this.o.securePort);
  }

  private leaseRef(): { resource: string; group: string; namespace: string; name: string } {
    return { resource: 'masterleases', group: '', namespace: '', name: this.o.advertiseAddress };
  }

  private async renewLease(): Promise<void> {
    await this.o.store.guaranteedUpdate(this.leaseRef(), (cur) => ({
      apiVersion: 'v1', kind: 'Endpoints',
      metadata: { ...(cur?.metadata ?? {}), name: this.o.advertiseAddress, annotations: { renewTime: new Date().toISOString() } },
    }), { ttlSeconds: LEASE_TTL_SECONDS });
  }

  private async leaseAddresses(): Promise<string[]> {
    try {
      const res = await this.o.store.list({ resource: 'masterleases', group: '', namespace: '' });
      return res.items.map((o) => o.metadata?.name ?? '').filter(Boolean);
    } catch (e) {
      if (isStorageError(e, 'KeyNotFound')) return [];
      throw e;
    }
  }
}
