/**
 * A simulated node for the fake-nodes bench: the node agent's own heartbeat parts, unchanged —
 * NodeStatusManager (register, status every --node-status-update-frequency, posted only when it
 * changed or every 5 minutes) and NodeLease (Lease in kube-node-lease renewed every 10 s) — plus
 * the agent's pod informer (list + watch of pods with spec.nodeName=<node>), on a `fake` runtime
 * and a RestClient built from the agent's default client options. What a full agent adds on
 * top (pod workers, relist of the local runtime, servers) stays inside the agent process and
 * never reaches the API server while the node has no pods, so it is left out to keep thousands
 * of nodes in one process cheap.
 * Contract: `start` returns once the loops are running; they end when the signal aborts.
 * Request timings go to the shared SimStats.
 */
import { pino, type Logger } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import { SharedInformerFactory } from '../../src/client/informer-factory.js';
import { RestClient, type PatchType, type ResourceRef, type RestClientOptions, type WriteOptions } from '../../src/client/rest-client.js';
import type { HostFacts } from '../../src/daemons/nodeagent/host-facts.js';
import { NodeLease } from '../../src/daemons/nodeagent/lease.js';
import type { NodeResources } from '../../src/daemons/nodeagent/node-resources.js';
import { NodeStatusManager } from '../../src/daemons/nodeagent/node-status.js';
import type { RuntimeBackend } from '../../src/daemons/nodeagent/runtime/runtime.js';
import { podInformer } from '../../src/daemons/nodeagent/sources/apiserver-source.js';

/** Counters and latencies (ms) since the last reset, per kind of write. */
export class SimStats {
  leaseOk = 0;
  leaseFail = 0;
  statusPosts = 0;
  statusFail = 0;
  otherWrites = 0;
  leaseLatency: number[] = [];

  record(resource: string, subresource: string | undefined, ms: number, ok: boolean): void {
    if (resource === 'leases') {
      if (ok) { this.leaseOk++; this.leaseLatency.push(ms); } else this.leaseFail++;
    } else if (resource === 'nodes' && subresource === 'status') {
      if (ok) this.statusPosts++; else this.statusFail++;
    } else {
      this.otherWrites++;
    }
  }

  take(): { leaseOk: number; leaseFail: number; statusPosts: number; statusFail: number; otherWrites: number; leaseLatency: number[] } {
    const out = { leaseOk: this.leaseOk, leaseFail: this.leaseFail, statusPosts: this.statusPosts, statusFail: this.statusFail, otherWrites: this.otherWrites, leaseLatency: this.leaseLatency };
    this.leaseOk = this.leaseFail = this.statusPosts = this.statusFail = this.otherWrites = 0;
    this.leaseLatency = [];
    return out;
  }
}

/** The agent's RestClient with its writes timed (the node agent only writes with create, update and patch). */
export class TimedRestClient extends RestClient {
  constructor(opts: RestClientOptions, private readonly stats: SimStats) { super(opts); }

  private async timed<T>(ref: ResourceRef, sub: string | undefined, f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      const r = await f();
      this.stats.record(ref.resource, sub, performance.now() - t0, true);
      return r;
    } catch (e) {
      this.stats.record(ref.resource, sub, performance.now() - t0, false);
      throw e;
    }
  }

  override create<T extends KubeObject = KubeObject>(ref: ResourceRef, obj: KubeObject, opts: WriteOptions & { subresource?: string; name?: string } = {}): Promise<T> {
    return this.timed(ref, opts.subresource, () => super.create<T>(ref, obj, opts));
  }

  override update<T extends KubeObject = KubeObject>(ref: ResourceRef, obj: KubeObject, opts: WriteOptions & { subresource?: string } = {}): Promise<T> {
    return this.timed(ref, opts.subresource, () => super.update<T>(ref, obj, opts));
  }

  override patch<T extends KubeObject = KubeObject>(ref: ResourceRef, name: string, type: PatchType, patch: unknown, opts: WriteOptions & { subresource?: string; force?: boolean } = {}): Promise<T> {
    return this.timed(ref, opts.subresource, () => super.patch<T>(ref, name, type, patch, opts));
  }
}

export interface SimulatedNodeOptions {
  readonly name: string;
  readonly ip: string;
  /** The node's client: a TimedRestClient with the agent's settings (one per node, or shared by a few). */
  readonly client: RestClient;
  readonly updateFrequencyMs: number;
  readonly leaseRenewIntervalMs?: number;
  /** Host facts of this machine; name and addresses are replaced per node. */
  readonly host: HostFacts;
  readonly resources: NodeResources;
  readonly runtime: RuntimeBackend;
  readonly podWatch: boolean;
  readonly log?: Logger;
}

export class SimulatedNode {
  readonly client: RestClient;
  readonly status: NodeStatusManager;
  readonly lease: NodeLease;
  private readonly loops: Promise<void>[] = [];
  private readonly log: Logger;

  constructor(private readonly o: SimulatedNodeOptions) {
    const log = o.log ?? pino({ level: 'silent' });
    this.log = log;
    this.client = o.client;
    const host: HostFacts = { ...o.host, nodeName: o.name, hostname: o.name, internalIp: o.ip };
    this.status = new NodeStatusManager({
      client: this.client, runtime: o.runtime, host, resources: o.resources, labels: {}, taints: [], providerId: '', port: 10250,
      updateFrequencyMs: o.updateFrequencyMs, log,
    });
    const ns = this.status;
    this.lease = new NodeLease({ client: this.client, nodeName: o.name, nodeUid: () => ns.uid, ...(o.leaseRenewIntervalMs ? { renewIntervalMs: o.leaseRenewIntervalMs } : {}), log });
  }

  get registered(): boolean { return this.status.registered; }

  /** Starts the agent's loops exactly as main.ts wires them: status (registering first), Lease after registration, pod informer. */
  start(signal: AbortSignal): void {
    const ns = this.status;
    const lease = this.lease;
    this.loops.push(ns.run(signal));
    // main.ts polls every 50 ms; thousands of unregistered nodes in one process would make that
    // tens of thousands of timers a second during a ramp, so poll every 500 ms (the Lease only
    // starts up to that much later; nothing else on the wire changes).
    this.loops.push((async () => { while (!ns.registered && !signal.aborted) await new Promise((r) => setTimeout(r, 500)); await lease.run(signal); })());
    if (this.o.podWatch) {
      const factory = new SharedInformerFactory({ client: this.client, minResyncPeriodMs: 0, log: this.log });
      podInformer(factory, this.o.name);
      factory.start(signal);
      this.loops.push(factory.stopped());
    }
  }

  /** Waits for the loops to end (after the signal aborted); the client is the caller's to close. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.loops);
  }
}
