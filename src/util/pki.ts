/**
 * Certificate generation for serving and client identities: a cluster CA, certificates it
 * issues, self-signed serving pairs, PEM read/write. Keys are ECDSA P-256 by default (fast to
 * generate; accepted by Go and Node TLS stacks). Uses @peculiar/x509 on Node's webcrypto.
 */
import { webcrypto, createPrivateKey, randomBytes, X509Certificate as NodeX509 } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type * as X509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
const crypto = webcrypto;

/**
 * @peculiar/x509 is loaded on first use: it costs a large part of a second to load, and daemons
 * given their certificate files never need it. It resolves its providers through tsyringe, which
 * needs the Reflect metadata API, hence reflect-metadata first.
 */
let x509lib: Promise<typeof X509> | undefined;
export function loadX509(): Promise<typeof X509> {
  x509lib ??= (async () => {
    await import('reflect-metadata');
    const lib = await import('@peculiar/x509');
    lib.cryptoProvider.set(crypto);
    return lib;
  })();
  return x509lib;
}

export type KeyAlgorithm = 'ecdsa' | 'rsa';

/** A certificate with its private key, both as PEM text. */
export interface CertKeyPem {
  certPem: string;
  keyPem: string;
}

/** A certificate authority able to issue certificates. */
export interface CertificateAuthority extends CertKeyPem {
  cert: X509.X509Certificate;
  key: CryptoKey;
}

export interface IssueOptions {
  ca: CertificateAuthority;
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ips?: string[];
  usages: 'server' | 'client' | 'both';
  /** Validity in milliseconds; default one year. */
  validityMs?: number;
  keyAlgorithm?: KeyAlgorithm;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;
const ECDSA: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const RSA: webcrypto.RsaHashedKeyGenParams = { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' };

async function generateKeys(alg: KeyAlgorithm = 'ecdsa'): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(alg === 'rsa' ? RSA : ECDSA, true, ['sign', 'verify']);
}

function serial(): string {
  const b = randomBytes(16);
  b[0] = (b[0] ?? 0) & 0x7f; // positive INTEGER
  return b.toString('hex');
}

async function exportKeyPem(key: CryptoKey): Promise<string> {
  const x509 = await loadX509();
  const der = await crypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Imports a PEM private key (PKCS#8, PKCS#1 RSA or SEC1 EC) as a signing CryptoKey. */
export async function importPrivateKeyPem(pem: string): Promise<CryptoKey> {
  const ko = createPrivateKey(pem);
  const der = ko.export({ type: 'pkcs8', format: 'der' });
  if (ko.asymmetricKeyType === 'ec') {
    const curve = ko.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === 'secp384r1' ? 'P-384' : curve === 'secp521r1' ? 'P-521' : 'P-256';
    return crypto.subtle.importKey('pkcs8', der, { name: 'ECDSA', namedCurve }, true, ['sign']);
  }
  if (ko.asymmetricKeyType === 'rsa') {
    return crypto.subtle.importKey('pkcs8', der, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, true, ['sign']);
  }
  throw new Error(`unsupported private key type ${ko.asymmetricKeyType ?? 'unknown'}`);
}

function signingAlgorithm(key: CryptoKey): webcrypto.Algorithm | webcrypto.EcdsaParams {
  return key.algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : { name: 'RSASSA-PKCS1-v1_5' };
}

/** Creates a self-signed certificate authority. */
export async function createCA(opts: { commonName: string; validityMs?: number; keyAlgorithm?: KeyAlgorithm }): Promise<CertificateAuthority> {
  const x509 = await loadX509();
  const keys = await generateKeys(opts.keyAlgorithm);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: [{ CN: [opts.commonName] }],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + (opts.validityMs ?? 10 * YEAR_MS)),
    keys,
    signingAlgorithm: signingAlgorithm(keys.privateKey),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, key: keys.privateKey, certPem: cert.toString('pem') + '\n', keyPem: await exportKeyPem(keys.privateKey) + '\n' };
}

/** Loads a CA from PEM (the first certificate in certPem is the CA). */
export async function loadCA(certPem: string, keyPem: string): Promise<CertificateAuthority> {
  const x509 = await loadX509();
  const first = splitPemCertificates(certPem)[0];
  if (!first) throw new Error('no certificate in CA PEM');
  return { cert: new x509.X509Certificate(first), key: await importPrivateKeyPem(keyPem), certPem, keyPem };
}

/** Issues a certificate signed by `ca`. Returns the leaf certificate PEM (without the CA) and its key. */
export async function issueCert(opts: IssueOptions): Promise<CertKeyPem> {
  const x509 = await loadX509();
  const keys = await generateKeys(opts.keyAlgorithm);
  const now = Date.now();
  const subject: X509.JsonName = [{ CN: [opts.commonName] }];
  for (const o of opts.organizations ?? []) subject.push({ O: [o] });
  const eku: string[] = [];
  if (opts.usages !== 'client') eku.push(x509.ExtendedKeyUsage.serverAuth);
  if (opts.usages !== 'server') eku.push(x509.ExtendedKeyUsage.clientAuth);
  const keyUsage = x509.KeyUsageFlags.digitalSignature |
    (keys.privateKey.algorithm.name === 'ECDSA' ? 0 : x509.KeyUsageFlags.keyEncipherment);
  const extensions: X509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(keyUsage, true),
    new x509.ExtendedKeyUsageExtension(eku, false),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(opts.ca.cert.publicKey),
  ];
  const sans: X509.JsonGeneralName[] = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  if (sans.length) extensions.push(new x509.SubjectAlternativeNameExtension(sans, false));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: opts.ca.cert.subjectName,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + (opts.validityMs ?? YEAR_MS)),
    publicKey: keys.publicKey,
    signingKey: opts.ca.key,
    signingAlgorithm: signingAlgorithm(opts.ca.key),
    extensions,
  });
  return { certPem: cert.toString('pem') + '\n', keyPem: await exportKeyPem(keys.privateKey) + '\n' };
}

/**
 * A self-signed serving pair the way Kubernetes makes one when no certificate is given: a
 * throw-away CA named `<host>-ca@<unix>` signs a serving certificate for `<host>@<unix>`; the
 * certificate PEM holds the leaf followed by that CA, so clients can pin the CA.
 */
export async function createSelfSignedServing(opts: { host: string; dnsNames: string[]; ips: string[] }): Promise<CertKeyPem & { caPem: string }> {
  const stamp = Math.floor(Date.now() / 1000);
  const ca = await createCA({ commonName: `${opts.host}-ca@${stamp}`, validityMs: YEAR_MS });
  const leaf = await issueCert({ ca, commonName: `${opts.host}@${stamp}`, dnsNames: opts.dnsNames, ips: opts.ips, usages: 'server' });
  return { certPem: leaf.certPem + ca.certPem, keyPem: leaf.keyPem, caPem: ca.certPem };
}

/** The PEM blocks of every certificate in a bundle, in order. */
export function splitPemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** Names a serving certificate answers to: subject CN and DNS SANs (IPs are never SNI names). */
export function certificateDnsNames(certPem: string): { commonName: string; dnsNames: string[] } {
  const first = splitPemCertificates(certPem)[0];
  if (!first) return { commonName: '', dnsNames: [] };
  const c = new NodeX509(first);
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(c.subject)?.[1] ?? '';
  const dnsNames = (c.subjectAltName ?? '').split(/,\s*/)
    .filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4));
  return { commonName: cn, dnsNames };
}

/** Writes a file atomically (temp + rename) with the given mode, creating the directory. */
export async function writePemFile(path: string, pem: string, mode = 0o600): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, pem, { mode });
  await rename(tmp, path);
}

export async function readPemFile(path: string): Promise<string> {
  return readFile(path, 'utf8');
}
