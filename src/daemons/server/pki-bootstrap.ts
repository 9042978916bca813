/**
 * The server's PKI under `<data-dir>/pki/`, created on first start and reused afterwards.
 *
 * Files (keys 0600, certificates 0644, ECDSA P-256):
 *   ca.crt/.key                            the cluster CA (10 years)
 *   apiserver.crt/.key                     API server serving pair
 *   apiserver-nodeagent-client.crt/.key    CN corectl-apiserver-nodeagent-client, no group: the API
 *                                          server's client identity towards node agents
 *   admin.crt/.key                         CN corectl-admin, O system:masters (admin.coreconfig)
 *   controller-manager.crt/.key            CN system:kube-controller-manager
 *   scheduler.crt/.key                     CN system:kube-scheduler
 *   nodeagent-client.crt/.key              CN system:node:<node>, O system:nodes
 *   proxy.crt/.key                         CN system:kube-proxy (RBAC: system:node-proxier)
 *   nodeagent.crt/.key                     node agent serving pair
 *   sa.key / sa.pub                        service-account token signing pair
 *
 * Every start checks each pair and re-issues only what is unusable: missing, key not matching
 * the certificate (a crash between the two writes), not signed by the current CA, expiring
 * within `renewBeforeMs`, or lacking a subject or SAN now required (the advertise address
 * changed, the node was renamed). A new CA therefore re-issues every leaf. Each file is
 * written atomically (temp + rename), key before certificate. The certificate library is
 * loaded only when something must be issued: a restart that reuses everything needs only
 * node:crypto.
 */
import { X509Certificate, createPrivateKey, createPublicKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { chmod, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { canonicalIp } from '../../util/ip.js';
import type { CertificateAuthority } from '../../util/pki.js';
import { writeFileAtomic } from './atomic-write.js';

export interface PkiPaths {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
  /** `<dir>/<leaf>.crt` / `.key` by leaf name. */
  cert(leaf: LeafName): string;
  key(leaf: LeafName): string;
}

export const LEAF_NAMES = [
  'apiserver', 'apiserver-nodeagent-client', 'admin', 'controller-manager', 'scheduler', 'nodeagent-client', 'nodeagent', 'proxy',
] as const;
export type LeafName = typeof LEAF_NAMES[number];

export function pkiPaths(dir: string): PkiPaths {
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    serviceAccountKey: join(dir, 'sa.key'),
    serviceAccountPub: join(dir, 'sa.pub'),
    cert: (leaf) => join(dir, `${leaf}.crt`),
    key: (leaf) => join(dir, `${leaf}.key`),
  };
}

export const ADMIN_USER = 'corectl-admin';
export const MASTERS_GROUP = 'system:masters';
/** The API server's identity towards node agents (kubeadm's kube-apiserver-kubelet-client). */
export const NODEAGENT_CLIENT_USER = 'corectl-apiserver-nodeagent-client';

export interface PkiRequest {
  /** `<data-dir>/pki`. */
  dir: string;
  nodeName: string;
  /** SANs of the API server serving certificate. */
  apiserverDnsNames: readonly string[];
  apiserverIps: readonly string[];
  /** SANs of the node agent serving certificate. */
  nodeagentDnsNames: readonly string[];
  nodeagentIps: readonly string[];
  /** Re-issue leaves expiring sooner than this. @default 30 days */
  renewBeforeMs?: number;
  /** Check and issue only these leaves (the CA and service-account keys always). @default all */
  only?: readonly LeafName[];
}

/** What the API server needs to start and be checked (the rest can follow once it is ready). */
export const APISERVER_LEAVES: readonly LeafName[] = ['apiserver', 'apiserver-nodeagent-client', 'admin'];

export interface PkiResult {
  paths: PkiPaths;
  /** True when the CA was created now (first start, or the old one was unusable). */
  caCreated: boolean;
  /** What was written now: 'ca', leaf names, 'sa'. Empty on a clean restart. */
  written: string[];
  /** SHA-256 fingerprint of the CA certificate. */
  caFingerprint: string;
}

interface LeafSpec {
  name: LeafName;
  commonName: string;
  organizations: string[];
  usages: 'server' | 'client';
  dnsNames: readonly string[];
  ips: readonly string[];
}

const DAY_MS = 24 * 3600 * 1000;

function leafSpecs(req: PkiRequest): LeafSpec[] {
  const client = (name: LeafName, commonName: string, organizations: string[] = []): LeafSpec =>
    ({ name, commonName, organizations, usages: 'client', dnsNames: [], ips: [] });
  return [
    { name: 'apiserver', commonName: 'corectl-apiserver', organizations: [], usages: 'server', dnsNames: req.apiserverDnsNames, ips: req.apiserverIps },
    // Not system:masters (kubeadm gave up the same for apiserver-kubelet-client): a user of its
    // own, which RBAC binds to what node agents need (system:kubelet-api-admin's rules).
    client('apiserver-nodeagent-client', NODEAGENT_CLIENT_USER),
    client('admin', ADMIN_USER, [MASTERS_GROUP]),
    client('controller-manager', 'system:kube-controller-manager'),
    client('scheduler', 'system:kube-scheduler'),
    client('nodeagent-client', `system:node:${req.nodeName}`, ['system:nodes']),
    { name: 'nodeagent', commonName: req.nodeName, organizations: [], usages: 'server', dnsNames: req.nodeagentDnsNames, ips: req.nodeagentIps },
    client('proxy', 'system:kube-proxy'),
  ];
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** The certificate and key at these paths, when both parse and belong together. */
async function readPair(certPath: string, keyPath: string): Promise<{ cert: X509Certificate; key: KeyObject; certPem: string; keyPem: string } | undefined> {
  const [certPem, keyPem] = await Promise.all([readOptional(certPath), readOptional(keyPath)]);
  if (certPem === undefined || keyPem === undefined) return undefined;
  try {
    const cert = new X509Certificate(certPem);
    const key = createPrivateKey(keyPem);
    return cert.checkPrivateKey(key) ? { cert, key, certPem, keyPem } : undefined;
  } catch {
    return undefined;
  }
}

function subjectParts(cert: X509Certificate): { cn: string; orgs: string[] } {
  const lines = cert.subject.split('\n');
  const cn = lines.find((l) => l.startsWith('CN='))?.slice(3) ?? '';
  const orgs = lines.filter((l) => l.startsWith('O=')).map((l) => l.slice(2));
  return { cn, orgs };
}

function sans(cert: X509Certificate): { dns: Set<string>; ips: Set<string> } {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const part of (cert.subjectAltName ?? '').split(/,\s*/)) {
    if (part.startsWith('DNS:')) dns.add(part.slice(4).toLowerCase());
    else if (part.startsWith('IP Address:')) ips.add(canonicalIp(part.slice(11)) ?? part.slice(11));
  }
  return { dns, ips };
}

/** Why an existing leaf cannot be kept, or undefined when it can. */
function leafProblem(cert: X509Certificate, ca: X509Certificate, spec: LeafSpec, renewBeforeMs: number): string | undefined {
  if (!cert.verify(ca.publicKey)) return 'not signed by the current CA';
  if (Date.parse(cert.validTo) - Date.now() < renewBeforeMs) return 'expires soon';
  const { cn, orgs } = subjectParts(cert);
  if (cn !== spec.commonName) return `subject CN is ${cn}`;
  if ([...spec.organizations].sort().join(',') !== [...orgs].sort().join(',')) return 'subject organizations differ';
  const have = sans(cert);
  for (const d of spec.dnsNames) if (!have.dns.has(d.toLowerCase())) return `no SAN ${d}`;
  for (const ip of spec.ips) if (!have.ips.has(canonicalIp(ip) ?? ip)) return `no SAN ${ip}`;
  return undefined;
}

async function writePair(certPath: string, keyPath: string, pair: { certPem: string; keyPem: string }): Promise<void> {
  // Key first: a crash in between leaves a mismatched pair, which the next start re-issues.
  await writeFileAtomic(keyPath, pair.keyPem, 0o600);
  await writeFileAtomic(certPath, pair.certPem, 0o644);
}

const generateKeyPairAsync = promisify(generateKeyPair);

async function ensureServiceAccountKeys(paths: PkiPaths): Promise<boolean> {
  const keyPem = await readOptional(paths.serviceAccountKey);
  let key: KeyObject | undefined;
  if (keyPem !== undefined) {
    try { key = createPrivateKey(keyPem); } catch { key = undefined; }
  }
  let wrote = false;
  if (!key) {
    const pair = await generateKeyPairAsync('ec', { namedCurve: 'prime256v1' });
    key = pair.privateKey;
    await writeFileAtomic(paths.serviceAccountKey, key.export({ type: 'pkcs8', format: 'pem' }).toString(), 0o600);
    wrote = true;
  }
  const pubPem = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();
  if (wrote || await readOptional(paths.serviceAccountPub) !== pubPem) {
    await writeFileAtomic(paths.serviceAccountPub, pubPem, 0o644);
    wrote = true;
  }
  return wrote;
}

/** Creates or completes the PKI in `req.dir`; see the file comment for what is checked. */
export async function bootstrapPki(req: PkiRequest): Promise<PkiResult> {
  const paths = pkiPaths(req.dir);
  const renewBeforeMs = req.renewBeforeMs ?? 30 * DAY_MS;
  await mkdir(req.dir, { recursive: true, mode: 0o700 });
  await chmod(req.dir, 0o700);
  const written: string[] = [];

  const existingCa = await readPair(paths.caCert, paths.caKey);
  const caUsable = existingCa !== undefined && existingCa.cert.ca && Date.parse(existingCa.cert.validTo) - Date.now() > renewBeforeMs;
  // The signing CA; the certificate library is loaded on first need only.
  let caForIssue: () => Promise<CertificateAuthority>;
  let caPem: string;
  if (existingCa && caUsable) {
    const { certPem, keyPem } = existingCa;
    caPem = certPem;
    let loaded: Promise<CertificateAuthority> | undefined;
    caForIssue = () => (loaded ??= import('../../util/pki.js').then((m) => m.loadCA(certPem, keyPem)));
  } else {
    const { createCA } = await import('../../util/pki.js');
    const created = await createCA({ commonName: 'corectl-ca' });
    await writePair(paths.caCert, paths.caKey, created);
    written.push('ca');
    caPem = created.certPem;
    caForIssue = () => Promise.resolve(created);
  }
  const caCert = new X509Certificate(caPem);

  const leaves = leafSpecs(req).filter((spec) => !req.only || req.only.includes(spec.name)).map(async (spec) => {
    const existing = await readPair(paths.cert(spec.name), paths.key(spec.name));
    if (existing && leafProblem(existing.cert, caCert, spec, renewBeforeMs) === undefined) return;
    const [{ issueCert }, ca] = await Promise.all([import('../../util/pki.js'), caForIssue()]);
    const pair = await issueCert({
      ca, commonName: spec.commonName, organizations: spec.organizations, usages: spec.usages,
      dnsNames: [...spec.dnsNames], ips: [...spec.ips],
    });
    await writePair(paths.cert(spec.name), paths.key(spec.name), pair);
    written.push(spec.name);
  });
  const sa = ensureServiceAccountKeys(paths).then((w) => { if (w) written.push('sa'); });
  await Promise.all([...leaves, sa]);
  return { paths, caCreated: written.includes('ca'), written, caFingerprint: caCert.fingerprint256 };
}
