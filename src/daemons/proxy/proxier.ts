/**
 * The sync loop: changes from the informers ask for a sync; syncs run one at a time, at most
 * one per --min-sync-period (changes in between are batched into the next), each one
 * transaction of the mode's rule writer (nft-writer.ts). The first sync, every --sync-period,
 * and any sync after a failure are full: they rewrite all our rules from scratch. Others only
 * carry what changed since the last applied state (as far as the writer can tell).
 */
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ConntrackCleaner } from './conntrack.js';
import type { NftCommand } from './nft-command.js';
import type { NftOptions } from './nft-rules.js';
import { NftWriter } from './nft-writer.js';
import type { RuleWriter } from './rule-writer.js';
import type { EndpointSliceObject, ServiceObject } from './service-model.js';

export interface ProxierOptions {
  /** The mode's rule writer; default nftables through `nft` with `rules`. */
  writer?: RuleWriter;
  nft?: NftCommand;
  rules?: NftOptions;
  nodeName: string;
  services: () => readonly ServiceObject[];
  slices: () => readonly EndpointSliceObject[];
  minSyncPeriodMs: number;
  syncPeriodMs: number;
  log: Logger;
  /** Clears stale UDP conntrack entries after each applied sync (none: not cleared). */
  conntrack?: ConntrackCleaner;
}

export class ProxierMetrics {
  readonly registry = new Registry();
  readonly syncDuration = new Histogram({ name: 'kubeproxy_sync_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds', buckets: [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384], registers: [this.registry] });
  readonly fullDuration = new Histogram({ name: 'kubeproxy_sync_full_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds for full resyncs', buckets: [0.001, 0.004, 0.016, 0.064, 0.256, 1.024, 4.096, 16.384], registers: [this.registry] });
  readonly partialDuration = new Histogram({ name: 'kubeproxy_sync_partial_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds for partial resyncs', buckets: [0.001, 0.004, 0.016, 0.064, 0.256, 1.024, 4.096, 16.384], registers: [this.registry] });
  readonly lastSync = new Gauge({ name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds', help: 'The last time proxy rules were successfully synced', registers: [this.registry] });
  readonly failures = new Counter({ name: 'kubeproxy_sync_proxy_rules_failures_total', help: 'Failed rule transactions (nft or iptables-restore)', registers: [this.registry] });
  readonly services = new Gauge({ name: 'corectl_proxy_service_ports', help: 'Service ports programmed', registers: [this.registry] });
  readonly endpoints = new Gauge({ name: 'corectl_proxy_endpoints', help: 'Endpoint chains programmed', registers: [this.registry] });
}

export class Proxier {
  readonly metrics = new ProxierMetrics();
  private readonly writer: RuleWriter;
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

  constructor(private readonly o: ProxierOptions) {
    if (o.writer) this.writer = o.writer;
    else if (o.nft && o.rules) this.writer = new NftWriter(o.nft, o.rules, o.nodeName);
    else throw new Error('Proxier: a writer, or nft and rules, are needed');
  }

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
    const gap = !this.writer.hasApplied && this.lastRunAt > 0 ? Math.max(this.o.minSyncPeriodMs, 1000) : this.o.minSyncPeriodMs;
    const wait = Math.max(0, this.lastRunAt + gap - Date.now());
    this.timer = setTimeout(() => { this.timer = undefined; this.running = this.loop(); }, wait);
  }

  private async loop(): Promise<void> {
    try {
      this.pending = false;
      this.lastRunAt = Date.now();
      const full = !this.writer.hasApplied || Date.now() - this.lastFullAt >= this.o.syncPeriodMs;
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
      const counts = await this.writer.sync(this.o.services(), this.o.slices(), full);
      if (full) this.lastFullAt = Date.now();
      this.lastSuccessAt = Date.now();
      this.queuedAt = 0;
      this.syncs++;
      const secs = Number(process.hrtime.bigint() - start) / 1e9;
      this.metrics.syncDuration.observe(secs);
      (full ? this.metrics.fullDuration : this.metrics.partialDuration).observe(secs);
      this.metrics.lastSync.set(this.lastSuccessAt / 1000);
      this.metrics.services.set(counts.ports);
      this.metrics.endpoints.set(counts.endpoints);
      this.o.log.debug({ full, servicePorts: counts.ports, seconds: secs }, 'synced proxy rules');
      // After the rules: a deleted flow's next packet must meet the new ones.
      await this.o.conntrack?.applied(counts.udpPorts);
    } catch (e) {
      this.writer.reset();
      this.metrics.failures.inc();
      this.o.log.error({ err: (e as Error).message, full }, 'syncing proxy rules failed; retrying with a full sync');
      this.pending = true;
    }
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

/** The nftables mode's proxier (the name the tests and main use). */
export { Proxier as NftProxier };
