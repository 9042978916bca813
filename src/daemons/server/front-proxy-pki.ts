/**
 * The front-proxy PKI of the aggregation layer, as kubeadm makes it: a CA of its own
 * (front-proxy-ca.crt/.key, apart from the cluster CA, so that no certificate the cluster CA
 * signs for a user can ever claim other users' identities in X-Remote-* headers) and the API
 * server's client pair front-proxy-client.crt/.key (CN front-proxy-client) signed by it.
 * Reused while the pair matches, is signed by that CA and has 30 days left; re-issued otherwise.
 * `frontProxyApiserverArgs` are the API server options that use them.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';

export const FRONT_PROXY_CLIENT = 'front-proxy-client';
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;

export function frontProxyPaths(pkiDir: string): { caCert: string; caKey: string; cert: string; key: string } {
  return {
    caCert: join(pkiDir, 'front-proxy-ca.crt'), caKey: join(pkiDir, 'front-proxy-ca.key'),
    cert: join(pkiDir, 'front-proxy-client.crt'), key: join(pkiDir, 'front-proxy-client.key'),
  };
}

/** The API server options of the aggregation layer with this PKI. */
export function frontProxyApiserverArgs(pkiDir: string): string[] {
  const p = frontProxyPaths(pkiDir);
  return [
    `--requestheader-client-ca-file=${p.caCert}`, `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
    '--requestheader-username-headers=X-Remote-User', '--requestheader-group-headers=X-Remote-Group',
    '--requestheader-extra-headers-prefix=X-Remote-Extra-',
    `--proxy-client-cert-file=${p.cert}`, `--proxy-client-key-file=${p.key}`,
    // Extension servers are reached at their endpoints: the API server's host need not route ClusterIPs.
    '--enable-aggregator-routing=true',
  ];
}

async function readPair(certPath: string, keyPath: string): Promise<{ cert: X509Certificate; certPem: string; keyPem: string } | undefined> {
  try {
    const [certPem, keyPem] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    const cert = new X509Certificate(certPem);
    return cert.checkPrivateKey(createPrivateKey(keyPem)) ? { cert, certPem, keyPem } : undefined;
  } catch {
    return undefined;
  }
}

const fresh = (c: X509Certificate): boolean => Date.parse(c.validTo) - Date.now() > RENEW_BEFORE_MS;

/** Creates what is missing or unusable; returns the names written ('front-proxy-ca', 'front-proxy-client'). */
export async function ensureFrontProxyPki(pkiDir: string): Promise<string[]> {
  const p = frontProxyPaths(pkiDir);
  const written: string[] = [];
  let ca = await readPair(p.caCert, p.caKey);
  const pki = await import('../../util/pki.js');
  let caForIssue;
  if (!ca || !ca.cert.ca || !fresh(ca.cert)) {
    const created = await pki.createCA({ commonName: 'corectl-front-proxy-ca' });
    await writeFileAtomic(p.caKey, created.keyPem, 0o600);
    await writeFileAtomic(p.caCert, created.certPem, 0o644);
    written.push('front-proxy-ca');
    ca = { cert: new X509Certificate(created.certPem), certPem: created.certPem, keyPem: created.keyPem };
    caForIssue = created;
  }
  const leaf = await readPair(p.cert, p.key);
  if (!leaf || !leaf.cert.verify(ca.cert.publicKey) || !fresh(leaf.cert) || !leaf.cert.subject.split('\n').includes(`CN=${FRONT_PROXY_CLIENT}`)) {
    caForIssue ??= await pki.loadCA(ca.certPem, ca.keyPem);
    const pair = await pki.issueCert({ ca: caForIssue, commonName: FRONT_PROXY_CLIENT, usages: 'client' });
    await writeFileAtomic(p.key, pair.keyPem, 0o600);
    await writeFileAtomic(p.cert, pair.certPem, 0o644);
    written.push(FRONT_PROXY_CLIENT);
  }
  return written;
}
