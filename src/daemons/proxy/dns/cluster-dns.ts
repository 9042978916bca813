/**
 * Starts the cluster DNS: informers over the API (services, EndpointSlices, namespaces), the
 * upstreams of --resolv-conf, and the server on the given addresses. `corectl server` runs it;
 * it needs list/watch on those three resources.
 */
import type { Logger } from 'pino';
import { pino } from 'pino';
import { SharedInformerFactory } from '../../../client/informer-factory.js';
import type { RestClient } from '../../../client/rest-client.js';
import { ClusterDnsServer, type ListenAddress } from './dns-server.js';
import { Forwarder, hostUpstreams, type Upstream } from './forwarder.js';
import { informerView } from './informer-view.js';

export interface ClusterDnsConfig {
  readonly client: RestClient;
  readonly listen: readonly ListenAddress[];
  /** The cluster domain, e.g. cluster.local. */
  readonly clusterDomain: string;
  /** The host resolver file the other names go to. @default /etc/resolv.conf */
  readonly resolvConf?: string;
  /** Upstreams to use instead of --resolv-conf's (tests: a resolver on its own port). */
  readonly upstreams?: readonly Upstream[];
  /** @default 30 (kubeadm's Corefile) */
  readonly ttl?: number;
  readonly log?: Logger;
}

export interface ClusterDns {
  readonly addresses: readonly ListenAddress[];
  readonly server: ClusterDnsServer;
  /** Resolves once the caches are filled (false: stopped first). */
  synced(): Promise<boolean>;
  stop(): Promise<void>;
}

export async function startClusterDns(c: ClusterDnsConfig): Promise<ClusterDns> {
  const log = c.log ?? pino({ level: 'silent' });
  const ac = new AbortController();
  const factory = new SharedInformerFactory({ client: c.client, minResyncPeriodMs: 0, log: log.child({ component: 'informers' }) });
  const view = informerView(factory);
  const upstreams = c.upstreams ? [...c.upstreams] : await hostUpstreams(c.resolvConf ?? '/etc/resolv.conf', c.listen);
  if (!upstreams.length) log.warn({ resolvConf: c.resolvConf }, 'no upstream resolvers: names outside the cluster get SERVFAIL');
  const server = new ClusterDnsServer({ view, forwarder: new Forwarder(upstreams), zone: c.clusterDomain.replace(/\.$/, ''), ttl: c.ttl ?? 30, log });
  view.onChange(() => server.touch());
  factory.start(ac.signal);
  let addresses: ListenAddress[];
  try {
    addresses = await server.listen(c.listen);
  } catch (e) {
    ac.abort();
    await server.close();
    throw e;
  }
  log.info({ addresses, upstreams: upstreams.map((u) => u.host), domain: c.clusterDomain }, 'cluster DNS serving');
  return {
    addresses, server,
    synced: () => factory.waitForCacheSync(ac.signal),
    async stop() {
      ac.abort();
      await server.close();
      await factory.stopped();
    },
  };
}
