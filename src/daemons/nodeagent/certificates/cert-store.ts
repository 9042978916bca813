/**
 * Certificate pairs in --cert-dir as Kubernetes' kubelet keeps them: each issued pair is one file
 * `<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem` (certificate chain, then the private key; mode 0600) and
 * the symlink `<prefix>-current.pem` names the one in use. The symlink is replaced with a
 * rename, so a reader sees the old pair or the new one, never half of either.
 * Prefixes: nodeagent-client (kubelet-client) and nodeagent-server (kubelet-server).
 */
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { splitPemCertificates } from '../../../util/pki.js';

export const CLIENT_PREFIX = 'nodeagent-client';
export const SERVING_PREFIX = 'nodeagent-server';

export interface StoredPair {
  readonly certPem: string;
  readonly keyPem: string;
  /** The leaf's validity, ms since the epoch. */
  readonly notBefore: number;
  readonly notAfter: number;
}

export function currentPath(certDir: string, prefix: string): string {
  return join(certDir, `${prefix}-current.pem`);
}

function stamp(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())}-${p(d.getUTCHours())}-${p(d.getUTCMinutes())}-${p(d.getUTCSeconds())}`;
}

/** Parses a pair file's text (certificates, then the key); throws when either is missing. */
export function parsePair(text: string): StoredPair {
  const certs = splitPemCertificates(text);
  const key = /-----BEGIN ([A-Z ]*PRIVATE KEY)-----[\s\S]+?-----END \1-----/.exec(text)?.[0];
  const leaf = certs[0];
  if (!leaf || !key) throw new Error('the file holds no certificate and private key');
  const x = new X509Certificate(leaf);
  return { certPem: certs.join('\n') + '\n', keyPem: key + '\n', notBefore: Date.parse(x.validFrom), notAfter: Date.parse(x.validTo) };
}

/** The current pair, or undefined when there is none or it does not parse. */
export async function loadCurrent(certDir: string, prefix: string): Promise<StoredPair | undefined> {
  try {
    return parsePair(await readFile(currentPath(certDir, prefix), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Writes a new dated pair file and points the current symlink at it; returns the pair. */
export async function storePair(certDir: string, prefix: string, certPem: string, keyPem: string, now = new Date()): Promise<StoredPair> {
  const pair = parsePair(certPem.trimEnd() + '\n' + keyPem);
  await mkdir(certDir, { recursive: true, mode: 0o755 });
  const file = `${prefix}-${stamp(now)}.pem`;
  await writeFile(join(certDir, file), pair.certPem + pair.keyPem, { mode: 0o600 });
  const updated = join(certDir, `${prefix}-updated.pem`);
  await rm(updated, { force: true });
  await symlink(file, updated);
  await rename(updated, currentPath(certDir, prefix));
  return pair;
}
