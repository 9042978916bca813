/**
 * The sync loop: changes from the informers ask for a sync; syncs run one at a time, at most
 * one per --min-sync-period (changes in between are batched into the next), each a single
 * `nft -f -` transaction. The first sync, every --sync-period, and any sync after a failure
 * are full: they rewrite all our chains and maps from scratch against the kernel's list of
 * our objects. Others only carry what changed since the last applied state.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { NftCommand } from './nft-command.js';
import { mergeFragments, portsFragment, type NftOptions, type NftState } from './nft-rules.js';
import { isNoop, transactionScript } from './nft-transaction.js';
import { servicePortsOf, slicesByService, type EndpointSliceObject, type ServiceObject } from './service-model.js';

/** One Service's rules, kept while neither it nor its EndpointSlices change. */
interface CachedService {
  svc: ServiceObject;
  slices: readonly EndpointSliceObject[];
  ports: number;
  fragment: NftState;
}

function sameRefs<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export interface ProxierOptions {
  nft: NftCommand;
  rules: NftOptions;
  nodeName: string;
  services: () => readonly ServiceObject[];
  slices: () => readonly EndpointSliceObject[];
  minSyncPeriodMs: number;
  syncPeriodMs: number;
  log: Logger;
}

export class ProxierMetrics {
  readonly registry = new Registry();
  readonly syncDuration = new Histogram({ name: 'kubeproxy_sync_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds', buckets: [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384], registers: [this.registry] });
  readonly fullDuration = new Histogram({ name: 'kubeproxy_sync_full_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds for full resyncs', buckets: [0.001, 0.004, 0.016, 0.064, 0.256, 1.024, 4.096, 16.384], registers: [this.registry] });
  readonly partialDuration = new Histogram({ name: 'kubeproxy_sync_partial_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds for partial resyncs', buckets: [0.001, 0.004, 0.016, 0.064, 0.256, 1.024, 4.096, 16.384], registers: [this.registry] });
  readonly lastSync = new Gauge({ name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds', help: 'The last time proxy rules were successfully synced', registers: [this.registry] });
  readonly failures = new Counter({ name: 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total', help: 'Failed nftables transactions', registers: [this.registry] });
  readonly services = new Gauge({ name: 'corectl_proxy_service_ports', help: 'Service ports programmed', registers: [this.registry] });
  readonly endpoints = new Gauge({ name: 'corectl_proxy_endpoints', help: 'Endpoint chains programmed', registers: [this.registry] });
}

export class NftProxier {
  readonly metrics = new ProxierMetrics();
  private applied: NftState | undefined;
  /** Informer objects are never modified in place, so identity tells a change. */
  private cache = new Map<string, CachedService>();
  private lastFullAt = 0;
  private lastRunAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private pending = false;
  private stopped = false;
  private waiters: Array<() => void> = [];
  /** Time of the last successful sync (ms since epoch), 0 before the first. */
  lastSuccessAt = 0;
  /** When a change was first seen and not yet programmed (ms since epoch), 0 if none. */
  queuedAt = 0;
  syncs = 0;

  constructor(private readonly o: ProxierOptions) {}

  /** Asks for a sync (batched by --min-sync-period). */
  requestSync(): void {
    if (this.stopped) return;
    if (this.queuedAt === 0) this.queuedAt = Date.now();
    this.pending = true;
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.running || this.stopped) return;
    // After a failure, retry no faster than once a second.
    const gap = this.applied === undefined && this.lastRunAt > 0 ? Math.max(this.o.minSyncPeriodMs, 1000) : this.o.minSyncPeriodMs;
    const wait = Math.max(0, this.lastRunAt + gap - Date.now());
    this.timer = setTimeout(() => { this.timer = undefined; this.running = this.loop(); }, wait);
  }

  private async loop(): Promise<void> {
    try {
      this.pending = false;
      this.lastRunAt = Date.now();
      const full = this.applied === undefined || Date.now() - this.lastFullAt >= this.o.syncPeriodMs;
      await this.syncOnce(full);
    } finally {
      this.running = undefined;
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
      if (this.pending) this.schedule();
    }
  }

  /** Resolves after the next sync finishes (tests). */
  nextSync(): Promise<void> {
    return new Promise((r) => this.waiters.push(r));
  }

  /** Builds the wanted state and applies it; a failure forces a full sync next time. */
  async syncOnce(full: boolean): Promise<void> {
    const start = process.hrtime.bigint();
    try {
      const { want, ports } = this.wanted();
      const kernel = full ? await this.o.nft.objects(this.o.rules.table) : undefined;
      const script = transactionScript(this.o.rules.table, want, full ? undefined : this.applied, kernel);
      if (full || !isNoop(script)) await this.o.nft.apply(script);
      this.applied = want;
      if (full) this.lastFullAt = Date.now();
      this.lastSuccessAt = Date.now();
      this.queuedAt = 0;
      this.syncs++;
      const secs = Number(process.hrtime.bigint() - start) / 1e9;
      this.metrics.syncDuration.observe(secs);
      (full ? this.metrics.fullDuration : this.metrics.partialDuration).observe(secs);
      this.metrics.lastSync.set(this.lastSuccessAt / 1000);
      this.metrics.services.set(ports);
      this.metrics.endpoints.set([...want.chains.keys()].filter((c) => c.startsWith('sep_')).length);
      this.o.log.debug({ full, servicePorts: ports, seconds: secs }, 'synced proxy rules');
    } catch (e) {
      this.applied = undefined;
      this.metrics.failures.inc();
      this.o.log.error({ err: (e as Error).message, full }, 'syncing proxy rules failed; retrying with a full sync');
      this.pending = true;
    }
  }

  /** The wanted state, rebuilding only the Services that (or whose slices) changed. */
  private wanted(): { want: NftState; ports: number } {
    const byService = slicesByService(this.o.slices());
    const next = new Map<string, CachedService>();
    let ports = 0;
    for (const svc of this.o.services()) {
      const key = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
      const slices = byService.get(key) ?? [];
      slices.sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
      let c = this.cache.get(key);
      if (!c || c.svc !== svc || !sameRefs(c.slices, slices)) {
        const list = servicePortsOf(svc, slices, this.o.nodeName);
        c = { svc, slices, ports: list.length, fragment: portsFragment(list, this.o.rules) };
      }
      next.set(key, c);
      ports += c.ports;
    }
    this.cache = next;
    return { want: mergeFragments([...next.values()].map((c) => c.fragment), this.o.rules), ports };
  }

  /** Runs until the signal aborts: a full sync now and every --sync-period. */
  async run(signal: AbortSignal): Promise<void> {
    const tick = setInterval(() => this.requestSync(), this.o.syncPeriodMs);
    this.requestSync();
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve(); else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    clearInterval(tick);
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Healthy as kube-proxy's /healthz: nothing queued for longer than 2 sync periods. */
  healthy(now = Date.now()): boolean {
    if (this.lastSuccessAt === 0) return now - (this.queuedAt || now) < 2 * this.o.syncPeriodMs;
    return this.queuedAt === 0 || now - this.queuedAt < 2 * this.o.syncPeriodMs;
  }
}
