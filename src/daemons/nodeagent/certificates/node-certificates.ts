/**
 * The node agent's certificates from the cluster, wired for main.ts:
 *  - `clientCredentials`: --bootstrap-coreconfig (bootstrap.ts) and, with --rotate-certificates
 *    (gate RotateNodeagentClientCertificate, on by default), the client pair to start from: the
 *    unexpired nodeagent-client-current.pem in --cert-dir wins over the coreconfig's own files,
 *    as the kubelet's certificate store prefers its current pair;
 *  - `clientRotator`: rotates that pair and swaps it into the client's transport;
 *  - `servingRotator` (gate RotateNodeagentServerCertificate, no --tls-cert-file): the serving
 *    pair from kubernetes.io/kubelet-serving CSRs for the node's host name and InternalIP.
 *    Until the first is issued the secure port serves the self-signed pair (Kubernetes' kubelet
 *    serves nothing then; logs and exec through an API server that checks node certificates
 *    wait for the issued one either way).
 */
import type { Logger } from 'pino';
import type { ClientConnection } from '../../../client/coreconfig.js';
import type { RestClient } from '../../../client/rest-client.js';
import type { NodeagentConfig } from '../../../flags/nodeagent.js';
import { bootstrapClientCertificate } from './bootstrap.js';
import { CLIENT_PREFIX, SERVING_PREFIX, loadCurrent, parsePair, type StoredPair } from './cert-store.js';
import { CLIENT_SIGNER, SERVING_SIGNER } from './csr.js';
import { CertificateRotator } from './rotation.js';

type Config = Pick<NodeagentConfig, 'coreconfig' | 'bootstrapCoreconfig' | 'certDir' | 'rotateCertificates' | 'featureGates' | 'tlsCertFile' | 'runonce'>;

export function rotatesClient(c: Config): boolean {
  return c.rotateCertificates && c.featureGates['RotateNodeagentClientCertificate'] !== false;
}

export function rotatesServing(c: Config): boolean {
  return c.featureGates['RotateNodeagentServerCertificate'] === true && !c.tlsCertFile;
}

/** Runs the bootstrap when --bootstrap-coreconfig is given and --coreconfig is missing or expired. */
export async function bootstrapIfNeeded(c: Config, nodeName: string, signal: AbortSignal, log: Logger): Promise<void> {
  if (!c.bootstrapCoreconfig || !c.coreconfig || c.runonce) return;
  await bootstrapClientCertificate({ coreconfig: c.coreconfig, bootstrapCoreconfig: c.bootstrapCoreconfig, certDir: c.certDir, nodeName, signal, log });
}

/** The connection to use and, when rotating, the pair it starts from. */
export async function clientCredentials(c: Config, connection: ClientConnection): Promise<{ connection: ClientConnection; pair?: StoredPair }> {
  if (!rotatesClient(c) || !connection.cert || !connection.key) return { connection };
  const stored = await loadCurrent(c.certDir, CLIENT_PREFIX);
  if (stored && stored.notAfter > Date.now()) {
    return { connection: { ...connection, cert: Buffer.from(stored.certPem), key: Buffer.from(stored.keyPem) }, pair: stored };
  }
  return { connection, pair: parsePair(connection.cert.toString('utf8').trimEnd() + '\n' + connection.key.toString('utf8')) };
}

export function clientRotator(c: Config, client: RestClient, nodeName: string, pair: StoredPair, log: Logger): CertificateRotator {
  return new CertificateRotator({
    client, certDir: c.certDir, prefix: CLIENT_PREFIX, log,
    request: () => ({ signerName: CLIENT_SIGNER, nodeName }),
    onRotated: (p) => client.transport.updateClientCertificate(Buffer.from(p.certPem), Buffer.from(p.keyPem)),
  }, pair);
}

/** The stored serving pair when still valid (to open the listener with). */
export async function storedServingPair(c: Config): Promise<StoredPair | undefined> {
  const stored = await loadCurrent(c.certDir, SERVING_PREFIX);
  return stored && stored.notAfter > Date.now() ? stored : undefined;
}

export function servingRotator(
  c: Config, client: RestClient, names: { nodeName: string; hostname: string; ip: string },
  initial: StoredPair | undefined, install: (p: StoredPair) => void, log: Logger,
): CertificateRotator {
  return new CertificateRotator({
    client, certDir: c.certDir, prefix: SERVING_PREFIX, log,
    request: () => ({ signerName: SERVING_SIGNER, nodeName: names.nodeName, dnsNames: [names.hostname], ips: names.ip ? [names.ip] : [] }),
    onRotated: install,
  }, initial);
}
