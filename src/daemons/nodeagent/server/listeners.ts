/**
 * Opens the agent's listeners: the secure port (HTTPS; --tls-cert-file/--tls-private-key-file,
 * or a self-signed pair kept in --cert-dir as nodeagent.crt/nodeagent.key; client certificates
 * checked against --client-ca-file), the read-only port (HTTP) and the health port (HTTP).
 * Port 0 on --read-only-port or --healthz-port disables that listener; on --port it picks a
 * free port (used by tests).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { join } from 'node:path';
import { closeServers, listen } from '../../../util/http-serving.js';
import { createSelfSignedServing, writePemFile } from '../../../util/pki.js';
import { agentHandler, agentUpgradeHandler, type AgentServerContext } from './agent-server.js';

export interface ListenerConfig {
  readonly address: string;
  readonly port: number;
  readonly readOnlyPort: number;
  readonly healthzBindAddress: string;
  readonly healthzPort: number;
  readonly tlsCertFile: string;
  readonly tlsPrivateKeyFile: string;
  readonly certDir: string;
  readonly clientCaFile: string;
  readonly hostname: string;
  readonly nodeIp: string;
  /** A pair from a kubelet-serving CSR (gate RotateNodeagentServerCertificate), used before the files. */
  readonly servingPair?: { cert: string; key: string };
}

export interface Listeners {
  readonly securePort: number;
  readonly readOnlyPort: number;
  readonly healthzPort: number;
  /** PEM of the serving certificate (with its CA when self-signed). */
  readonly servingCertPem: string;
  /** Serves a new certificate from the next TLS handshake on (certificate rotation). */
  setServingPair(cert: string, key: string): void;
  close(): Promise<void>;
}

async function servingPair(c: ListenerConfig): Promise<{ cert: string; key: string }> {
  if (c.servingPair && !c.tlsCertFile) return c.servingPair;
  if (c.tlsCertFile && c.tlsPrivateKeyFile) {
    return { cert: await readFile(c.tlsCertFile, 'utf8'), key: await readFile(c.tlsPrivateKeyFile, 'utf8') };
  }
  const certPath = join(c.certDir, 'nodeagent.crt');
  const keyPath = join(c.certDir, 'nodeagent.key');
  if (existsSync(certPath) && existsSync(keyPath)) return { cert: await readFile(certPath, 'utf8'), key: await readFile(keyPath, 'utf8') };
  const pair = await createSelfSignedServing({ host: c.hostname, dnsNames: [c.hostname, 'localhost'], ips: [...new Set(['127.0.0.1', c.nodeIp].filter(Boolean))] });
  await writePemFile(certPath, pair.certPem, 0o644);
  await writePemFile(keyPath, pair.keyPem, 0o600);
  return { cert: pair.certPem, key: pair.keyPem };
}

export async function openListeners(c: ListenerConfig, ctx: AgentServerContext): Promise<Listeners> {
  const opened: Server[] = [];
  try {
    const pair = await servingPair(c);
    const ca = c.clientCaFile ? await readFile(c.clientCaFile) : undefined;
    const secure = createHttpsServer({ cert: pair.cert, key: pair.key, requestCert: true, rejectUnauthorized: false, ...(ca ? { ca } : {}) }, agentHandler('secure', ctx));
    secure.on('upgrade', agentUpgradeHandler(ctx));
    opened.push(secure);
    const securePort = await listen(secure, c.port, c.address);
    let readOnlyPort = 0;
    if (c.readOnlyPort > 0) {
      const ro = createHttpServer(agentHandler('readonly', ctx));
      opened.push(ro);
      readOnlyPort = await listen(ro, c.readOnlyPort, c.address);
    }
    let healthzPort = 0;
    if (c.healthzPort > 0) {
      const hz = createHttpServer(agentHandler('healthz', ctx));
      opened.push(hz);
      healthzPort = await listen(hz, c.healthzPort, c.healthzBindAddress);
    }
    let servingCertPem = pair.cert;
    return {
      securePort, readOnlyPort, healthzPort,
      get servingCertPem() { return servingCertPem; },
      setServingPair: (cert, key) => { secure.setSecureContext({ cert, key, ...(ca ? { ca } : {}) }); servingCertPem = cert; },
      close: async () => { await closeServers(opened); },
    };
  } catch (e) {
    await closeServers(opened);
    throw e;
  }
}
