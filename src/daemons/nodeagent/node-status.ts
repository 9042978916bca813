/**
 * Node registration and status (KEP-589 style): the status is computed every
 * --node-status-update-frequency and posted only when it changed (heartbeat times aside), when
 * the Node's conditions in the API differ from ours (the node lifecycle controller set them
 * Unknown while this agent could not reach any API server: it must say Ready again as soon as
 * it can, as the kubelet compares with the Node it reads), or when the last post is older
 * than 5 minutes; liveness is the Lease (lease.ts).
 * Contract: `run` never throws; API failures are logged and retried on the next tick.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import { GIT_VERSION } from '../../version.js';
import type { HostFacts } from './host-facts.js';
import type { NodeResources } from './node-resources.js';
import { kubeTime } from './pod-types.js';
import type { RuntimeBackend } from './runtime/runtime.js';
import { abortableSleep } from '../../util/abort.js';

export const NODES = { group: '', version: 'v1', resource: 'nodes' } as const;
/** Status is re-posted at least this often even when nothing changed. */
export const NODE_STATUS_REPORT_MS = 5 * 60_000;

export interface NodeStatusOptions {
  readonly client: RestClient;
  readonly runtime: RuntimeBackend;
  readonly host: HostFacts;
  readonly resources: NodeResources;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly { key: string; value: string; effect: string }[];
  readonly providerId: string;
  readonly port: number;
  readonly updateFrequencyMs: number;
  /** The pressure conditions in force (the eviction manager); none when absent. */
  readonly pressure?: () => ReadonlySet<string>;
  readonly log: Logger;
  /** Annotations the Node is registered with (e.g. controller-managed attach/detach). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** status.volumesInUse (volumes/csi-node.ts). */
  readonly volumesInUse?: () => Promise<string[]>;
}

interface Condition { type: string; status: string; reason: string; message: string; lastHeartbeatTime?: string; lastTransitionTime?: string }

export class NodeStatusManager {
  /** The Node's uid once registered (for the Lease's owner reference). */
  uid = '';
  registered = false;
  private lastPosted = 0;
  private lastKey = '';
  private transitions = new Map<string, { status: string; at: string }>();

  constructor(private readonly o: NodeStatusOptions) {}

  private nodeLabels(): Record<string, string> {
    return {
      ...this.o.labels,
      'kubernetes.io/hostname': this.o.host.hostname,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': this.o.host.architecture,
      'beta.kubernetes.io/os': 'linux',
      'beta.kubernetes.io/arch': this.o.host.architecture,
    };
  }

  /** Creates the Node, or adopts an existing one (adding our labels). Retries with backoff until the signal aborts. */
  async register(signal: AbortSignal): Promise<void> {
    const name = this.o.host.nodeName;
    let wait = 500;
    while (!signal.aborted) {
      try {
        const spec: Record<string, unknown> = {};
        if (this.o.taints.length) spec.taints = this.o.taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }));
        if (this.o.providerId) spec.providerID = this.o.providerId;
        try {
          const created = await this.o.client.create(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: this.nodeLabels(), ...(this.o.annotations ? { annotations: { ...this.o.annotations } } : {}) }, spec }, { signal });
          this.uid = created.metadata?.uid ?? '';
          this.o.log.info({ node: name }, 'node registered');
        } catch (e) {
          if (!isApiError(e) || e.status.code !== 409) throw e;
          const existing = await this.o.client.patch(NODES, name, 'merge', { metadata: { labels: this.nodeLabels(), ...(this.o.annotations ? { annotations: { ...this.o.annotations } } : {}) } }, { signal });
          this.uid = existing.metadata?.uid ?? '';
          this.o.log.info({ node: name }, 'node already registered; labels updated');
        }
        this.registered = true;
        return;
      } catch (e) {
        if (signal.aborted) return;
        this.o.log.warn({ err: (e as Error).message, retryInMs: wait }, 'unable to register node');
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(wait * 2, 7000);
      }
    }
  }

  private async conditions(now: string): Promise<Condition[]> {
    let ready = true;
    let message = 'kubelet is posting ready status';
    try {
      const st = await this.o.runtime.status();
      if (!st.runtimeReady || !st.networkReady) {
        ready = false;
        const bad = st.conditions.filter((c) => !c.status).map((c) => `${c.type}=false reason:${c.reason} message:${c.message}`);
        message = `container runtime status check may not have completed yet: ${bad.join(', ')}`;
      }
    } catch (e) {
      ready = false;
      message = `container runtime is down: ${(e as Error).message}`;
    }
    const p = this.o.pressure?.() ?? new Set<string>();
    const conds: Condition[] = [
      p.has('MemoryPressure')
        ? { type: 'MemoryPressure', status: 'True', reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' }
        : { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
      p.has('DiskPressure')
        ? { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' }
        : { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
      p.has('PIDPressure')
        ? { type: 'PIDPressure', status: 'True', reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' }
        : { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
      { type: 'Ready', status: ready ? 'True' : 'False', reason: ready ? 'KubeletReady' : 'KubeletNotReady', message },
    ];
    for (const c of conds) {
      const prev = this.transitions.get(c.type);
      if (!prev || prev.status !== c.status) this.transitions.set(c.type, { status: c.status, at: now });
      c.lastHeartbeatTime = now;
      c.lastTransitionTime = this.transitions.get(c.type)?.at ?? now;
    }
    return conds;
  }

  /** The node status as of now. */
  async computeStatus(): Promise<Record<string, unknown>> {
    const now = kubeTime(Date.now());
    let runtimeVersion = 'unknown://unknown';
    try {
      const v = await this.o.runtime.version();
      runtimeVersion = `${v.runtimeName}://${v.runtimeVersion}`;
    } catch { /* reported through the Ready condition */ }
    let images: { names: string[]; sizeBytes: number }[] = [];
    try {
      images = (await this.o.runtime.listImages()).map((i) => ({ names: [...i.repoDigests, ...i.repoTags], sizeBytes: i.size }))
        .sort((a, b) => b.sizeBytes - a.sizeBytes).slice(0, 50);
    } catch { /* keep the list empty */ }
    const h = this.o.host;
    return {
      capacity: this.o.resources.capacity,
      allocatable: this.o.resources.allocatable,
      conditions: await this.conditions(now),
      addresses: [{ type: 'InternalIP', address: h.internalIp }, { type: 'Hostname', address: h.hostname }],
      daemonEndpoints: { kubeletEndpoint: { Port: this.o.port } },
      nodeInfo: {
        machineID: h.machineId, systemUUID: h.machineId, bootID: h.bootId, kernelVersion: h.kernelVersion, osImage: h.osImage,
        containerRuntimeVersion: runtimeVersion, kubeletVersion: GIT_VERSION, kubeProxyVersion: '',
        operatingSystem: 'linux', architecture: h.architecture,
      },
      images,
      ...(this.o.volumesInUse ? { volumesInUse: await this.o.volumesInUse().then((l) => (l.length ? l : null), () => null) } : {}),
    };
  }

  /** Posts the status if it changed or is due; true when posted. */
  async tick(force = false, signal?: AbortSignal): Promise<boolean> {
    const status = await this.computeStatus();
    const key = JSON.stringify(status, (k, v: unknown) => (k === 'lastHeartbeatTime' ? undefined : v));
    const due = Date.now() - this.lastPosted >= NODE_STATUS_REPORT_MS;
    if (!force && !due && key === this.lastKey && !(await this.serverDiffers(status, signal))) return false;
    const node = await this.o.client.patch<KubeObject>(NODES, this.o.host.nodeName, 'merge', { status }, { subresource: 'status', ...(signal ? { signal } : {}) });
    if (node.metadata?.uid) this.uid = node.metadata.uid;
    this.lastKey = key;
    this.lastPosted = Date.now();
    return true;
  }

  /** True when the Node in the API (its cached state) carries other condition statuses than `status`. */
  private async serverDiffers(status: Record<string, unknown>, signal?: AbortSignal): Promise<boolean> {
    const node = await this.o.client.get(NODES, this.o.host.nodeName, { resourceVersion: '0', ...(signal ? { signal } : {}) });
    const theirs = new Map((((node.status as { conditions?: Condition[] } | undefined)?.conditions) ?? []).map((c) => [c.type, c.status]));
    return ((status.conditions ?? []) as Condition[]).some((c) => theirs.get(c.type) !== c.status);
  }

  async run(signal: AbortSignal): Promise<void> {
    await this.register(signal);
    let first = true;
    while (!signal.aborted) {
      try {
        await this.tick(first, signal);
        first = false;
      } catch (e) {
        if (signal.aborted) return;
        if (isApiError(e) && e.status.code === 404) {
          this.o.log.warn('node object was deleted; registering again');
          await this.register(signal);
          first = true;
          continue;
        }
        this.o.log.warn({ err: (e as Error).message }, 'error updating node status, will retry');
      }
      await abortableSleep(this.o.updateFrequencyMs, signal);
    }
  }
}

