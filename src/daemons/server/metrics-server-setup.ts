/**
 * The server's in-process metrics server (as k3s bundles metrics-server): started once the API
 * server is ready, with the admin credentials (towards the API server and the node agents,
 * whose serving certificates the cluster CA signs), registered at the node's address so the
 * aggregation layer reaches it. Off with --disable-metrics-server; a failure to start is
 * reported and the rest of the cluster runs on.
 */
import type { Logger } from 'pino';
import type { ClientConnection } from '../../client/coreconfig.js';
import { RestClient } from '../../client/rest-client.js';

export interface ServerMetrics { port: number; stop(): Promise<void> }

export async function startServerMetrics(o: { connection: ClientConnection; advertiseAddress?: string; log: Logger }): Promise<ServerMetrics> {
  const { startMetricsServer } = await import('../metrics-server/server.js');
  const client = new RestClient({ connection: o.connection, contentType: 'application/json', qps: 0, userAgent: 'corectl-server/metrics-server' });
  try {
    const running = await startMetricsServer({
      client, log: o.log, resolutionMs: 15_000, bindAddress: '0.0.0.0', port: 0, register: true,
      addressTypes: ['InternalIP', 'Hostname', 'ExternalIP'],
      ...(o.advertiseAddress ? { advertiseAddress: o.advertiseAddress } : {}),
      agentTls: {
        insecure: false, ...(o.connection.ca ? { ca: o.connection.ca } : {}),
        ...(o.connection.cert ? { cert: o.connection.cert } : {}), ...(o.connection.key ? { key: o.connection.key } : {}),
      },
    });
    return { port: running.port, async stop() { await running.stop(); client.close(); } };
  } catch (e) {
    client.close();
    throw e;
  }
}
