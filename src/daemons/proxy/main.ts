/**
 * `corectl proxy`: kube-proxy's role on one node. Watches Services and EndpointSlices and
 * programs one nftables table of ours (`ip corectl-proxy` by default; `ip6 corectl-proxy` too
 * once there is an IPv6 Service, see dual-stack-writer.ts), or with --proxy-mode=iptables
 * chains of ours (CPX-*, in ip6tables too for IPv6 Services) plus one jump from each built-in
 * chain it hooks, so that ClusterIPs, NodePorts, externalIPs and LoadBalancer IPs reach the
 * Services' endpoints. It never changes a table or chain it did not create (beyond those
 * jumps). `--cleanup` deletes the tables and exits; a normal stop leaves the rules in place (as
 * kube-proxy), so traffic keeps flowing across a restart, unless --cleanup-on-exit asks to
 * delete them. After each sync, stale UDP conntrack entries are cleared (conntrack.ts).
 */
import { spawnSync } from 'node:child_process';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { loadCoreconfig } from '../../client/coreconfig.js';
import { SharedInformerFactory } from '../../client/informer-factory.js';
import { RestClient } from '../../client/rest-client.js';
import type { ProxyConfig } from '../../flags/proxy.js';
import { withOwnSignal } from '../../util/abort.js';
import { ConntrackCleaner } from './conntrack.js';
import { DualStackWriter, dualStackNft } from './dual-stack-writer.js';
import { IptablesWriter } from './iptables-writer.js';
import { NftCommand } from './nft-command.js';
import { Proxier } from './proxier.js';
import { startProxyServers, type ProxyServers } from './servers.js';
import type { EndpointSliceObject, ServiceObject } from './service-model.js';

export interface RunContext {
  log: Logger;
  signal: AbortSignal;
  /** Put before nft and iptables commands; tests run them in a network namespace. */
  commandPrefix?: readonly string[];
  onServing?: (servers: ProxyServers) => void;
  onProxier?: (proxier: Proxier) => void;
}

/** The node's InternalIPs (its primary addresses), [] when the Node is not there. */
async function primaryAddresses(client: RestClient, nodeName: string): Promise<string[]> {
  try {
    const node = await client.get({ group: '', version: 'v1', resource: 'nodes' }, nodeName) as { status?: { addresses?: Array<{ type?: string; address?: string }> } };
    return (node.status?.addresses ?? []).filter((a) => a.type === 'InternalIP' && a.address && isIP(a.address) !== 0).map((a) => a.address as string);
  } catch {
    return [];
  }
}

/** Cleanup needs no options: it removes every chain of ours. */
const RULES_FOR_CLEANUP = { masqueradeBit: 14, masqueradeAll: false, clusterCidrs: [], nodePortCidrs: [] };

/** A start-up refusal: one line, exit 1. */
class ProxyStartupError extends Error {}

export async function run(config: ProxyConfig, ctx: RunContext): Promise<number> {
  try {
    return await withOwnSignal(ctx.signal, (signal) => runWith(config, { ...ctx, signal }));
  } catch (e) {
    if (e instanceof ProxyStartupError) {
      process.stderr.write(`proxy: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

async function runWith(config: ProxyConfig, ctx: RunContext): Promise<number> {
  const log = ctx.log;
  const prefix = ctx.commandPrefix ?? [];
  const nft = new NftCommand([...prefix, 'nft']);
  const has = (argv: string[]): boolean => spawnSync(argv[0] as string, argv.slice(1), { stdio: 'ignore', timeout: 10_000 }).status === 0;
  const hasNft = has([...prefix, 'nft', '--version']);
  const hasIptables = has([...prefix, 'iptables-restore', '--version']);
  const hasIp6tables = has([...prefix, 'ip6tables-restore', '--version']);
  if (config.cleanup) {
    // As kube-proxy's --cleanup: whatever either mode left.
    if (hasNft) {
      log.info({ table: `ip ${config.nftTable}`, existed: await nft.deleteTable(config.nftTable) }, 'cleaned up nftables');
      log.info({ table: `ip6 ${config.nftTable}`, existed: await nft.deleteTable(config.nftTable, 'ip6').catch(() => false) }, 'cleaned up nftables');
    }
    if (hasIptables) log.info({ existed: await new IptablesWriter(RULES_FOR_CLEANUP, '', prefix).cleanup() }, 'cleaned up iptables');
    if (hasIp6tables) log.info({ existed: await new IptablesWriter({ ...RULES_FOR_CLEANUP, family: 'ip6' }, '', prefix).cleanup().catch(() => false) }, 'cleaned up ip6tables');
    return 0;
  }
  if (config.proxyMode === 'nftables' && !hasNft) throw new ProxyStartupError('--proxy-mode=nftables needs the nft command (Debian package nftables)');
  if (config.proxyMode === 'iptables' && !hasIptables) throw new ProxyStartupError('--proxy-mode=iptables needs iptables-restore (Debian package iptables)');
  const nodeName = (config.hostnameOverride || hostname()).toLowerCase();
  const connection = await loadCoreconfig({ ...(config.coreconfig ? { path: config.coreconfig } : {}), ...(config.master ? { master: config.master } : {}) });
  const client = new RestClient({
    connection, qps: config.coreApiQps, burst: config.coreApiBurst, contentType: config.coreApiContentType,
    userAgent: 'corectl-proxy', log: log.child({ component: 'client' }),
  });
  const informers = new SharedInformerFactory({ client, minResyncPeriodMs: config.configSyncPeriod, log: log.child({ component: 'informers' }) });
  const services = informers.informerFor({ group: '', version: 'v1', resource: 'services' });
  const slices = informers.informerFor({ group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' });
  const cidrs = (text: string, v6 = false): string[] => text.split(',').map((s) => s.trim()).filter((s) => s && s.includes(':') === v6 && s !== 'primary');
  const nodePortCidrs = cidrs(config.nodeportAddresses.join(','));
  const nodePortCidrs6 = cidrs(config.nodeportAddresses.join(','), true);
  if (config.nodeportAddresses.includes('primary')) {
    const primary = await primaryAddresses(client, nodeName);
    if (!primary.some((ip) => isIP(ip) === 4)) log.warn({ node: nodeName }, '--nodeport-addresses=primary: the node has no IPv4 InternalIP yet; NodePorts listen on every local address');
    nodePortCidrs.push(...primary.filter((ip) => isIP(ip) === 4).map((ip) => `${ip}/32`));
    nodePortCidrs6.push(...primary.filter((ip) => isIP(ip) === 6).map((ip) => `${ip}/128`));
  }
  const rules = {
    table: config.nftTable, masqueradeBit: config.iptablesMasqueradeBit, masqueradeAll: config.masqueradeAll,
    clusterCidrs: cidrs(config.clusterCidr), nodePortCidrs,
  };
  const rules6 = { ...rules, family: 'ip6' as const, clusterCidrs: cidrs(config.clusterCidr, true), nodePortCidrs: nodePortCidrs6 };
  // IPv6 through ip6tables where it is installed (IPv4 alone otherwise).
  const ipt6 = new IptablesWriter(rules6, nodeName, prefix);
  const iptablesWriter = (): IptablesWriter | DualStackWriter => (!hasIp6tables ? new IptablesWriter(rules, nodeName, prefix)
    : new DualStackWriter(new IptablesWriter(rules, nodeName, prefix), ipt6, async () => { const c = await ipt6.ourChains(); return c.nat.length + c.filter.length > 0; }));
  // As kube-proxy: without the conntrack tool, stale UDP flows stay until they time out.
  const hasConntrack = has([...prefix, 'conntrack', '--version']);
  if (!hasConntrack) log.warn('the conntrack command is missing (Debian package conntrack): UDP flows to removed endpoints are not cleared');
  const proxier = new Proxier({
    nodeName, log: log.child({ component: config.proxyMode }),
    writer: config.proxyMode === 'iptables' ? iptablesWriter() : dualStackNft(nft, rules, rules6, nodeName),
    services: () => services.indexer.list() as unknown as ServiceObject[],
    slices: () => slices.indexer.list() as unknown as EndpointSliceObject[],
    minSyncPeriodMs: config.minSyncPeriod, syncPeriodMs: config.syncPeriod,
    ...(hasConntrack ? { conntrack: new ConntrackCleaner([...prefix, 'conntrack'], log.child({ component: 'conntrack' })) } : {}),
  });
  ctx.onProxier?.(proxier);
  const synced = { done: false };
  const changed = (): void => { if (synced.done) proxier.requestSync(); };
  // Resyncs (onUpdate with the same object) carry no change: the periodic full sync covers them.
  const handler = { onAdd: changed, onUpdate: (a: unknown, b: unknown) => { if (a !== b) changed(); }, onDelete: changed };
  services.addEventHandler(handler);
  slices.addEventHandler(handler);
  let servers: ProxyServers | undefined;
  try {
    servers = await startProxyServers({ healthz: config.healthzBindAddress, metrics: config.metricsBindAddress, mode: config.proxyMode }, proxier, log);
    ctx.onServing?.(servers);
    informers.start(ctx.signal);
    log.info({ node: nodeName, table: `ip ${config.nftTable}` }, 'waiting for the Service and EndpointSlice caches');
    if (!(await informers.waitForCacheSync(ctx.signal))) return 0;
    synced.done = true;
    await proxier.run(ctx.signal);
    return 0;
  } finally {
    if (config.cleanupOnExit) {
      const deleteTables = async (): Promise<boolean> => {
        const v4 = await nft.deleteTable(config.nftTable);
        return (await nft.deleteTable(config.nftTable, 'ip6').catch(() => false)) || v4;
      };
      const cleanupIptables = async (): Promise<boolean> => {
        const v4 = await new IptablesWriter(rules, nodeName, prefix).cleanup();
        return (hasIp6tables && (await ipt6.cleanup().catch(() => false))) || v4;
      };
      await (config.proxyMode === 'iptables' ? cleanupIptables() : deleteTables()).then(
        (had) => log.info({ mode: config.proxyMode, existed: had }, 'removed the rules on exit'),
        (e: Error) => log.error({ err: e.message }, 'could not remove the rules on exit'),
      );
    }
    await informers.stopped();
    await servers?.close();
    client.close();
  }
}
