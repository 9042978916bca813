/**
 * The cluster-info kubeconfig published in kube-public (kubeadm's shape: one cluster with its
 * server URL and CA, no user, no context) and the CA pin of `kubeadm join`: `sha256:` and the
 * lowercase hex SHA-256 of the CA certificate's DER SubjectPublicKeyInfo.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { dump, load } from 'js-yaml';
import { splitPemCertificates } from '../../util/pki.js';

export interface ClusterInfo {
  /** https://host:port */
  readonly server: string;
  /** PEM of the cluster CA (one or more certificates). */
  readonly caPem: string;
}

export function clusterInfoKubeconfig(info: ClusterInfo): string {
  return dump({
    apiVersion: 'v1',
    clusters: [{ cluster: { 'certificate-authority-data': Buffer.from(info.caPem).toString('base64'), server: info.server }, name: '' }],
    contexts: null,
    'current-context': '',
    kind: 'Config',
    preferences: {},
    users: null,
  }, { lineWidth: -1 });
}

/** The first cluster's server and CA; throws a one-line reason when there is none. */
export function parseClusterInfoKubeconfig(text: string): ClusterInfo {
  let doc: unknown;
  try { doc = load(text); } catch (e) { throw new Error(`cluster-info kubeconfig is not YAML: ${(e as Error).message.split('\n')[0]}`); }
  const clusters = (doc as { clusters?: unknown } | null)?.clusters;
  const first = Array.isArray(clusters) ? (clusters[0] as { cluster?: Record<string, unknown> } | undefined)?.cluster : undefined;
  const server = first?.server;
  const caData = first?.['certificate-authority-data'];
  if (typeof server !== 'string' || !server) throw new Error('cluster-info kubeconfig names no cluster server');
  if (typeof caData !== 'string' || !caData) throw new Error('cluster-info kubeconfig has no certificate-authority-data');
  const caPem = Buffer.from(caData, 'base64').toString('utf8');
  if (splitPemCertificates(caPem).length === 0) throw new Error('cluster-info kubeconfig: certificate-authority-data holds no PEM certificate');
  return { server, caPem };
}

/** `sha256:<hex>` of one certificate's public key (kubeadm's --discovery-token-ca-cert-hash). */
export function caCertHash(certPem: string): string {
  const spki = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/** The hashes of every certificate in a PEM bundle. */
export function caCertHashes(bundlePem: string): string[] {
  return splitPemCertificates(bundlePem).map(caCertHash);
}
