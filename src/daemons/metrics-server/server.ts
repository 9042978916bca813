/**
 * One metrics server: scrapes the node agents every resolution period into the store, serves
 * the metrics API over HTTPS to the API server's front proxy, and (unless told not to)
 * registers itself with the aggregator. `startMetricsServer` is used by `corectl
 * metrics-server` and in-process by `corectl server`.
 */
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import type { RestClient } from '../../client/rest-client.js';
import { isLoopbackIp } from '../../util/ip.js';
import { createSelfSignedServing } from '../../util/pki.js';
import { MetricsAccess, readFrontProxyConfig } from './access.js';
import { createMetricsHandler } from './api.js';
import { MetricsStore } from './metrics-store.js';
import { registerApiService, SERVICE_NAME, SERVICE_NAMESPACE } from './registration.js';
import { Scraper, type AgentTls } from './scraper.js';

export interface MetricsServerOptions {
  client: RestClient;
  log: Logger;
  /** Credentials and trust for the node agents. */
  agentTls: AgentTls;
  addressTypes: readonly string[];
  resolutionMs: number;
  bindAddress: string;
  /** 0 picks a free port. */
  port: number;
  /** Serving pair; default a self-signed one for metrics-server.kube-system.svc. */
  serving?: { certPem: string; keyPem: string; caPem: string };
  /** Register the Service, Endpoints and APIService (with this address; default the first non-loopback IPv4). */
  register: boolean;
  advertiseAddress?: string;
}

export interface RunningMetricsServer {
  port: number;
  store: MetricsStore;
  scraper: Scraper;
  stop(): Promise<void>;
}

export function firstNonLoopbackIpv4(): string | undefined {
  return Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

export async function startMetricsServer(o: MetricsServerOptions): Promise<RunningMetricsServer> {
  const address = o.advertiseAddress || firstNonLoopbackIpv4();
  // Endpoints refuse loopback addresses (as Kubernetes'): say so before anything starts.
  if (o.register && (!address || isLoopbackIp(address))) {
    throw new Error(`cannot register at ${address || 'no address'}: the API server reaches extension servers at a non-loopback address (--advertise-address)`);
  }
  const frontProxy = await readFrontProxyConfig(o.client);
  const serving = o.serving ?? await createSelfSignedServing({
    host: SERVICE_NAME, dnsNames: [`${SERVICE_NAME}.${SERVICE_NAMESPACE}.svc`, `${SERVICE_NAME}.${SERVICE_NAMESPACE}.svc.cluster.local`, 'localhost'],
    ips: ['127.0.0.1', ...(address ? [address] : [])],
  });
  const store = new MetricsStore();
  const scraper = new Scraper({ client: o.client, store, tls: o.agentTls, addressTypes: o.addressTypes, log: o.log.child({ component: 'scraper' }) });
  const access = new MetricsAccess(o.client, frontProxy);
  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem, ca: frontProxy.caPem, requestCert: true, rejectUnauthorized: false },
    createMetricsHandler({ store, scraper, access }));
  server.on('tlsClientError', (e) => o.log.debug({ err: e.message }, 'TLS handshake failed'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.bindAddress, () => { server.off('error', reject); resolve(); });
  });
  const port = (server.address() as AddressInfo).port;
  const abort = new AbortController();
  let round: Promise<void> = Promise.resolve();
  const scrape = (): void => {
    round = scraper.scrapeAll(abort.signal).catch((e: unknown) => { if (!abort.signal.aborted) o.log.warn({ err: (e as Error).message }, 'scrape failed'); });
  };
  scrape();
  const timer = setInterval(scrape, o.resolutionMs);
  const stop = async (): Promise<void> => {
    clearInterval(timer);
    abort.abort();
    await round;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  if (o.register) {
    try {
      await registerApiService(o.client, { address: address!, port, caPem: serving.caPem });
    } catch (e) {
      await stop();
      throw e;
    }
    o.log.info({ address, port }, 'registered v1beta1.metrics.k8s.io');
  }
  o.log.info({ port }, 'metrics server serving');
  return { port, store, scraper, stop };
}
