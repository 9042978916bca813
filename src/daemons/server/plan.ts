/**
 * The server's plan, made before anything is written or started: where everything lives, the
 * node name, the runtime, each daemon's parsed config, the API server URL the local clients use
 * and the names the serving certificates must carry. Option problems throw FlagError.
 */
import { readFile } from 'node:fs/promises';
import type { ApiserverConfig } from '../../flags/apiserver.js';
import type { ControllerManagerConfig } from '../../flags/controller-manager.js';
import { FlagError } from '../../flags/flag-error.js';
import type { NodeagentConfig } from '../../flags/nodeagent.js';
import type { ProxyConfig } from '../../flags/proxy.js';
import type { SchedulerConfig } from '../../flags/scheduler.js';
import type { ServerConfig, ServerPart } from '../../flags/server.js';
import { KUBERNETES_SERVICE_NAMES, firstServiceIp, resolveAdvertiseAddress } from '../apiserver/tls/serving-certs.js';
import { coreconfigPaths, type ServerCoreconfigs } from './admin-coreconfig.js';
import { nthServiceIp, type ClusterDnsPlan } from './cluster-dns-setup.js';
import { isLoopbackIp } from '../../util/ip.js';
import {
  composeParts, configFileArgs, derivedArgs, resolveNodeName, resolveRuntime, serverLayout,
  type ComposedPart, type PartArgs, type ServerLayout,
} from './daemon-args.js';
import { pkiPaths, type PkiPaths, type PkiRequest } from './pki-bootstrap.js';
import { proxyOffReason } from './proxy-part.js';

export interface ServerPlan {
  readonly layout: ServerLayout;
  readonly pki: PkiPaths;
  readonly coreconfigs: ServerCoreconfigs;
  readonly nodeName: string;
  readonly runtime: 'remote' | 'fake';
  /** True when --container-runtime was not given and the endpoint decided. */
  readonly runtimeDefaulted: boolean;
  readonly apiserver: ComposedPart<ApiserverConfig>;
  readonly controllerManager: ComposedPart<ControllerManagerConfig>;
  readonly scheduler: ComposedPart<SchedulerConfig>;
  readonly nodeagent: ComposedPart<NodeagentConfig>;
  readonly proxy: ComposedPart<ProxyConfig>;
  /** Why the service proxy does not run (undefined when it does). */
  readonly proxyOff: string | undefined;
  /** https://host:port the local clients (kubectl, the in-process daemons) use. */
  readonly apiserverUrl: string;
  /** The API server's URL for other machines (the advertise address): published in cluster-info for joining nodes. */
  readonly advertisedUrl: string;
  /** Everything bootstrapPki needs besides the directory. */
  readonly certificates: Omit<PkiRequest, 'dir'>;
  /** The parts to run, in start order. */
  readonly enabled: readonly ServerPart[];
  /** Whether the in-process metrics server runs (not with --disable-metrics-server). */
  readonly metricsServer: boolean;
  /** The cluster DNS (cluster-dns-setup.ts); undefined with --disable-cluster-dns. */
  readonly clusterDns?: ClusterDnsPlan;
  /** The default local-path StorageClass (local-storage-setup.ts); undefined with --disable-local-storage. */
  readonly localStorage?: { readonly helperImage: string };
}

function isUnspecified(ip: string): boolean {
  return ip === '' || ip === '0.0.0.0' || ip === '::';
}

function urlHost(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

function unique(list: Array<string | undefined>): string[] {
  return [...new Set(list.filter((x): x is string => x !== undefined && x !== ''))];
}

export async function planServer(config: ServerConfig): Promise<ServerPlan> {
  const layout = serverLayout(config.dataDir);
  const pki = pkiPaths(layout.pkiDir);
  const coreconfigs = coreconfigPaths(layout.dataDir);
  const defaultNode = resolveNodeName(config);
  const runtime = resolveRuntime(config);
  let file: PartArgs = { apiserver: [], 'controller-manager': [], scheduler: [], nodeagent: [], proxy: [] };
  if (config.config) {
    let text: string;
    try {
      text = await readFile(config.config, 'utf8');
    } catch (e) {
      throw new FlagError(`--config: cannot read ${config.config}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, 'config');
    }
    file = configFileArgs(text, config.config);
  }
  const derived = derivedArgs({ server: config, layout, pki, coreconfigs, nodeName: defaultNode, runtime });
  const parts = composeParts(config, derived, file, config.config);
  const apiserver = parts.apiserver as ComposedPart<ApiserverConfig>;
  let nodeagent = parts.nodeagent as ComposedPart<NodeagentConfig>;
  const a = apiserver.config;
  if (a.securePort <= 0) throw new FlagError('--secure-port: the server needs the API server\'s secure port (1-65535)', 'secure-port');
  // A --nodeagent-arg=--hostname-override wins over --node-name: certificates follow it.
  const nodeName = nodeagent.config.hostnameOverride || defaultNode;
  if (nodeName !== defaultNode) resolveNodeName({ nodeName });
  const advertise = resolveAdvertiseAddress({ advertiseAddress: a.advertiseAddress, bindAddress: a.bindAddress });
  const localHost = isUnspecified(a.bindAddress) ? '127.0.0.1' : a.bindAddress;
  const nodeIp = nodeagent.config.nodeIp || advertise;
  const enabled: ServerPart[] = ['apiserver'];
  if (!config.disableControllerManager) enabled.push('controller-manager');
  if (!config.disableScheduler) enabled.push('scheduler');
  if (!config.disableAgent) enabled.push('nodeagent');
  const proxyOff = proxyOffReason({ disabled: config.disableProxy, runtime });
  if (!proxyOff) enabled.push('proxy');
  let clusterDns: ClusterDnsPlan | undefined;
  if (config.clusterDnsPort < 1 || config.clusterDnsPort > 65535) throw new FlagError('--cluster-dns-port: want a port (1-65535)', 'cluster-dns-port');
  if (!config.disableClusterDns) {
    const n = nodeagent.config;
    const serviceIp = nthServiceIp(a.serviceClusterIpRange, 10);
    // The Service's IP needs a service proxy to route it; without one the node's address serves
    // pods directly, which a resolv.conf can name only on port 53.
    const proxied = (enabled as readonly string[]).includes('proxy');
    // A loopback node address is the pod's own inside its network namespace: pods keep the
    // host's resolvers then (the DNS still serves the host).
    const reachable = !isLoopbackIp(nodeIp);
    const agentClusterDns = n.clusterDns.length || !reachable ? [] : proxied && serviceIp ? [serviceIp] : config.clusterDnsPort === 53 ? [nodeIp] : [];
    clusterDns = { nodeIp, port: config.clusterDnsPort, serviceIp, domain: n.clusterDomain || 'cluster.local', resolvConf: n.resolvConf || '/etc/resolv.conf', agentClusterDns };
    // A --nodeagent-arg=--cluster-dns/--cluster-domain of the user's wins.
    if (agentClusterDns.length) nodeagent = { ...nodeagent, config: { ...n, clusterDns: [...agentClusterDns], clusterDomain: clusterDns.domain } };
  }
  return {
    metricsServer: !config.disableMetricsServer,
    layout, pki, coreconfigs, nodeName, runtime, runtimeDefaulted: config.containerRuntime === '', apiserver, nodeagent, enabled, proxyOff,
    proxy: parts.proxy as ComposedPart<ProxyConfig>,
    ...(clusterDns ? { clusterDns } : {}),
    ...(config.disableLocalStorage ? {} : { localStorage: { helperImage: config.localStorageHelperImage } }),
    controllerManager: parts['controller-manager'] as ComposedPart<ControllerManagerConfig>,
    scheduler: parts.scheduler as ComposedPart<SchedulerConfig>,
    apiserverUrl: `https://${urlHost(localHost)}:${a.securePort}`,
    advertisedUrl: `https://${urlHost(advertise)}:${a.securePort}`,
    certificates: {
      nodeName,
      apiserverDnsNames: unique(['localhost', nodeName, ...KUBERNETES_SERVICE_NAMES]),
      apiserverIps: unique([advertise, '127.0.0.1', isUnspecified(a.bindAddress) ? undefined : a.bindAddress, firstServiceIp(a.serviceClusterIpRange)]),
      nodeagentDnsNames: unique([nodeName, 'localhost']),
      nodeagentIps: unique(['127.0.0.1', nodeIp]),
    },
  };
}
