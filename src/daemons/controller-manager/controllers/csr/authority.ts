/**
 * The cluster signing CA (--cluster-signing-cert-file, --cluster-signing-key-file) and the
 * certificates it issues, with the policy of Kubernetes' local signer (PermissiveSigningPolicy):
 *  - subject, public key and DNS/IP/email/URI SANs come from the request (its signature is
 *    verified first); every other requested extension is dropped;
 *  - key usage (critical) and extended key usage come from spec.usages; basic constraints say
 *    CA:FALSE (critical); the authority key identifier is the CA's subject key identifier;
 *  - notBefore is now minus 5 minutes; notAfter is now plus the TTL, minus those 5 minutes again
 *    unless the TTL is under 8 hours, and never beyond the CA's own notAfter;
 *  - the TTL is the configured duration, or spec.expirationSeconds when shorter (at least 10 min).
 */
import { randomBytes, type webcrypto } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { loadCA, type CertificateAuthority } from '../../../../util/pki.js';
import type { ParsedRequest } from './request.js';
import { loadX509, type X509 } from './x509.js';

export const BACKDATE_MS = 5 * 60_000;
/** Certificates living shorter than this keep their full TTL after backdating (5 min is ~1% of 8 h). */
export const SHORT_MS = 8 * 3600_000;
/** The shortest TTL a request may ask for: twice the backdate. */
export const MIN_TTL_MS = 10 * 60_000;

/** spec.usages → key usage bits (Go's x509.KeyUsage, the same bit order as RFC 5280). */
const KEY_USAGES: Record<string, number> = {
  'signing': 1, 'digital signature': 1, 'content commitment': 2, 'key encipherment': 4,
  'key agreement': 16, 'data encipherment': 8, 'cert sign': 32, 'crl sign': 64,
  'encipher only': 128, 'decipher only': 256,
};

/** spec.usages → extended key usage OIDs, listed in Go's ExtKeyUsage order (the order they are written in). */
const EXT_KEY_USAGES: ReadonlyArray<readonly [string, string]> = [
  ['any', '2.5.29.37.0'],
  ['server auth', '1.3.6.1.5.5.7.3.1'],
  ['client auth', '1.3.6.1.5.5.7.3.2'],
  ['code signing', '1.3.6.1.5.5.7.3.3'],
  ['email protection', '1.3.6.1.5.5.7.3.4'],
  ['s/mime', '1.3.6.1.5.5.7.3.4'],
  ['ipsec end system', '1.3.6.1.5.5.7.3.5'],
  ['ipsec tunnel', '1.3.6.1.5.5.7.3.6'],
  ['ipsec user', '1.3.6.1.5.5.7.3.7'],
  ['timestamping', '1.3.6.1.5.5.7.3.8'],
  ['ocsp signing', '1.3.6.1.5.5.7.3.9'],
  ['microsoft sgc', '1.3.6.1.4.1.311.10.3.3'],
  ['netscape sgc', '2.16.840.1.113730.4.1'],
];

/** Key usage bits and ordered, de-duplicated EKU OIDs; throws on a usage that is neither. */
export function usageExtensions(usages: readonly string[]): { keyUsage: number; extKeyUsages: string[] } {
  let keyUsage = 0;
  const wanted = new Set<string>();
  const unknown: string[] = [];
  for (const u of usages) {
    const bit = KEY_USAGES[u];
    if (bit !== undefined) keyUsage |= bit;
    else if (EXT_KEY_USAGES.some(([name]) => name === u)) wanted.add(u);
    else unknown.push(u);
  }
  if (unknown.length) throw new Error(`unrecognized usage values: [${unknown.map((u) => JSON.stringify(u)).join(' ')}]`);
  const oids: string[] = [];
  for (const [name, oid] of EXT_KEY_USAGES) if (wanted.has(name) && !oids.includes(oid)) oids.push(oid);
  return { keyUsage, extKeyUsages: oids };
}

/** The certificate lifetime: the configured one, or the requested one when shorter (never under 10 min). */
export function certificateTtl(configuredMs: number, expirationSeconds: number | undefined): number {
  if (expirationSeconds === undefined) return configuredMs;
  const requested = expirationSeconds * 1000;
  if (requested > configuredMs) return configuredMs;
  return Math.max(requested, MIN_TTL_MS);
}

/** notBefore/notAfter for a certificate issued at `now` by a CA valid until `caNotAfter`. */
export function validityWindow(now: number, ttlMs: number, caNotAfter: number): { notBefore: number; notAfter: number } {
  const notBefore = now - BACKDATE_MS;
  let notAfter = ttlMs < SHORT_MS ? now + ttlMs : now + ttlMs - BACKDATE_MS;
  if (notAfter >= caNotAfter) notAfter = caNotAfter;
  if (notBefore >= caNotAfter) throw new Error(`the signer has expired: NotAfter=${new Date(caNotAfter).toISOString()}`);
  if (now >= caNotAfter) throw new Error(`refusing to sign a certificate that expired in the past: NotAfter=${new Date(caNotAfter).toISOString()}`);
  return { notBefore, notAfter };
}

function serialNumber(): string {
  const b = randomBytes(16);
  b[0] = (b[0] ?? 0) & 0x7f; // a positive INTEGER below 2^128, as Kubernetes draws it
  return b.toString('hex');
}

/** The hash Go pairs with the CA key: by curve size for ECDSA, SHA-256 for RSA. */
function signingAlgorithm(key: webcrypto.CryptoKey): webcrypto.Algorithm | webcrypto.EcdsaParams {
  if (key.algorithm.name !== 'ECDSA') return { name: key.algorithm.name };
  const curve = (key.algorithm as webcrypto.EcKeyAlgorithm).namedCurve;
  return { name: 'ECDSA', hash: curve === 'P-384' ? 'SHA-384' : curve === 'P-521' ? 'SHA-512' : 'SHA-256' };
}

export class SigningAuthority {
  private constructor(private readonly ca: CertificateAuthority, private readonly caKeyId: string | undefined) {}

  /** Reads the CA pair; errors name the option that points at the bad file. */
  static async load(certFile: string, keyFile: string): Promise<SigningAuthority> {
    const certPem = await readFile(certFile, 'utf8').catch((e: NodeJS.ErrnoException) => { throw new Error(`--cluster-signing-cert-file ${certFile}: cannot read: ${e.code ?? e.message}`); });
    const keyPem = await readFile(keyFile, 'utf8').catch((e: NodeJS.ErrnoException) => { throw new Error(`--cluster-signing-key-file ${keyFile}: cannot read: ${e.code ?? e.message}`); });
    let ca: CertificateAuthority;
    try {
      ca = await loadCA(certPem, keyPem);
    } catch (e) {
      throw new Error(`--cluster-signing-cert-file ${certFile} / --cluster-signing-key-file ${keyFile}: ${(e as Error).message}`);
    }
    const x509 = await loadX509();
    const ski = ca.cert.getExtension(x509.SubjectKeyIdentifierExtension);
    return new SigningAuthority(ca, ski?.keyId);
  }

  /** Issues a certificate for the request; resolves the PEM text. */
  async sign(req: ParsedRequest, usages: readonly string[], ttlMs: number, now: number): Promise<string> {
    const x509 = await loadX509();
    if (!(await req.pkcs10.verify())) throw new Error('unable to verify certificate request signature');
    const { keyUsage, extKeyUsages } = usageExtensions(usages);
    const { notBefore, notAfter } = validityWindow(now, ttlMs, this.ca.cert.notAfter.getTime());
    const extensions: X509.Extension[] = [];
    if (keyUsage) extensions.push(new x509.KeyUsagesExtension(keyUsage, true));
    if (extKeyUsages.length) extensions.push(new x509.ExtendedKeyUsageExtension(extKeyUsages, false));
    extensions.push(new x509.BasicConstraintsExtension(false, undefined, true));
    if (this.caKeyId) extensions.push(new x509.AuthorityKeyIdentifierExtension(this.caKeyId));
    const sans: X509.JsonGeneralName[] = [
      ...req.dnsNames.map((value) => ({ type: 'dns' as const, value })),
      ...req.emailAddresses.map((value) => ({ type: 'email' as const, value })),
      ...req.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
      ...req.uris.map((value) => ({ type: 'url' as const, value })),
    ];
    // RFC 5280: the SAN extension is critical when it is the only identity (empty subject).
    if (sans.length) extensions.push(new x509.SubjectAlternativeNameExtension(sans, req.pkcs10.subjectName.toJSON().length === 0));
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serialNumber(),
      subject: req.pkcs10.subjectName,
      issuer: this.ca.cert.subjectName,
      notBefore: new Date(notBefore),
      notAfter: new Date(notAfter),
      publicKey: req.pkcs10.publicKey,
      signingKey: this.ca.key,
      signingAlgorithm: signingAlgorithm(this.ca.key),
      extensions,
    });
    return `${cert.toString('pem')}\n`;
  }
}
