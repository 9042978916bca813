/**
 * The `corectl apiserver` child the node benches start: LevelDB in `dir`, the bench PKI, the
 * ServiceAccount admission plugin off, coreconfigs for the admin and one node identity, waited
 * for until /readyz answers 200. The admin transport (for /metrics) and client are closed by
 * the teardown.
 */
import { join } from 'node:path';
import { loadCoreconfig, type ClientConnection } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { Http2Transport, readBody } from '../../src/client/transport.js';
import { createBenchPki, freePort, spawnDaemon, until, type Daemon } from '../lib-cluster/processes.js';
import type { Teardown } from './teardown.js';

export interface BenchApiserver {
  readonly daemon: Daemon;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** Coreconfig files: the admin's and the node identity's. */
  readonly adminCfg: string;
  readonly nodeCfg: string;
  readonly conn: ClientConnection;
  readonly transport: Http2Transport;
  readonly client: RestClient;
}

export async function startBenchApiserver(o: { cliFile: string; dir: string; nodeUser: string; verbose?: boolean; nodeArgs?: string[]; maxRetries?: number }, teardown: Teardown): Promise<BenchApiserver> {
  const pki = await createBenchPki(o.dir);
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  const [adminCfg, nodeCfg] = await Promise.all([pki.coreconfig('bench-admin', server), pki.coreconfig(o.nodeUser, server)]);
  const daemon = spawnDaemon(o.cliFile, 'apiserver', [
    '--bind-address=127.0.0.1', `--secure-port=${port}`, `--tls-cert-file=${pki.servingCertFile}`, `--tls-private-key-file=${pki.servingKeyFile}`,
    `--client-ca-file=${pki.caFile}`, `--data-dir=${join(o.dir, 'data')}`, `--cert-dir=${join(o.dir, 'certs')}`,
    // No controller manager here makes service accounts or kube-root-ca.crt, so pods go without
    // the token volume (as in Kubernetes' own integration tests).
    '--disable-admission-plugins=ServiceAccount',
  ], { verbose: o.verbose ?? false, ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}) });
  teardown.add('apiserver', () => daemon.stop());
  const conn = await loadCoreconfig({ path: adminCfg });
  const transport = new Http2Transport(conn, { pingIntervalMs: 0 });
  teardown.add('admin transport', () => transport.close());
  await until('apiserver /readyz', async () => {
    const res = await transport.request({ method: 'GET', path: '/readyz', signal: AbortSignal.timeout(2000) });
    await readBody(res.body);
    return res.status === 200 ? true : undefined;
  }, 30_000, [daemon]);
  const client = new RestClient({ connection: conn, qps: 0, contentType: 'application/json', ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}) });
  teardown.add('admin client', () => client.close());
  return { daemon, server, adminCfg, nodeCfg, conn, transport, client };
}
