/**
 * `corectl metrics-server`: the metrics.k8s.io API (kubectl top, the autoscaler) from the node
 * agents' resource metrics, registered with the API server's aggregation layer, as Kubernetes'
 * metrics-server (k3s bundles one; `corectl server` runs one in-process).
 */
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { loadCoreconfig } from '../../client/coreconfig.js';
import { RestClient } from '../../client/rest-client.js';
import type { MetricsServerConfig } from '../../flags/metrics-server.js';
import { startMetricsServer } from './server.js';

export async function run(config: MetricsServerConfig, ctx: { log: Logger; signal: AbortSignal }): Promise<number> {
  const log = ctx.log.child({ component: 'metrics-server' });
  let client: RestClient | undefined;
  try {
    const connection = await loadCoreconfig({ ...(config.coreconfig ? { path: config.coreconfig } : {}), ...(config.master ? { master: config.master } : {}) });
    client = new RestClient({ connection, qps: 20, burst: 40, contentType: 'application/json', userAgent: 'corectl-metrics-server', log: log.child({ component: 'client' }) });
    const ca = config.kubeletCertificateAuthority ? await readFile(config.kubeletCertificateAuthority) : connection.ca;
    let serving;
    if (config.tlsCertFile) {
      const [certPem, keyPem] = await Promise.all([readFile(config.tlsCertFile, 'utf8'), readFile(config.tlsPrivateKeyFile, 'utf8')]);
      serving = { certPem, keyPem, caPem: certPem };
    }
    const running = await startMetricsServer({
      client, log, resolutionMs: config.metricResolution, bindAddress: config.bindAddress, port: config.securePort,
      addressTypes: config.kubeletPreferredAddressTypes, register: config.registerApiservice,
      ...(config.advertiseAddress ? { advertiseAddress: config.advertiseAddress } : {}),
      ...(serving ? { serving } : {}),
      agentTls: {
        insecure: config.kubeletInsecureTls, ...(ca ? { ca } : {}),
        ...(connection.cert ? { cert: connection.cert } : {}), ...(connection.key ? { key: connection.key } : {}), ...(connection.token ? { token: connection.token } : {}),
      },
    });
    log.info({ port: running.port }, `metrics-server ready: serving on port ${running.port}`);
    await new Promise<void>((resolve) => { if (ctx.signal.aborted) resolve(); else ctx.signal.addEventListener('abort', () => resolve(), { once: true }); });
    await running.stop();
    return 0;
  } catch (e) {
    process.stderr.write(`metrics-server: ${(e as Error).message}\n`);
    return 1;
  } finally {
    client?.close();
  }
}
