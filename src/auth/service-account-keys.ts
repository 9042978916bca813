/**
 * Service-account token keys: the signing key (--service-account-signing-key-file, a PEM RSA or
 * ECDSA private key) and the verification keys (--service-account-key-file: PEM private or
 * public keys or certificates, several per file). The JWS algorithm follows the key: RSA signs
 * RS256, ECDSA ES256/ES384/ES512 by curve. The key id is Kubernetes' one: the unpadded base64url
 * SHA-256 of the DER (SPKI) public key, so tokens carry the same `kid` as a real cluster's.
 */
import { createHash, createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';

export interface SigningKey {
  readonly key: KeyObject;
  readonly alg: string;
  readonly kid: string;
}

export interface VerificationKey {
  readonly key: KeyObject;
  readonly alg: string;
  readonly kid: string;
}

/** The JWS algorithm for a key (public or private); throws on an unsupported type or curve. */
export function algorithmFor(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    if (curve === 'secp384r1') return 'ES384';
    if (curve === 'secp521r1') return 'ES512';
    throw new Error(`unsupported EC curve ${String(curve)}: use P-256, P-384 or P-521`);
  }
  throw new Error(`unsupported key type ${String(key.asymmetricKeyType)}: use RSA or ECDSA`);
}

export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('base64url');
}

export function signingKeyFromPem(pem: string | Buffer): SigningKey {
  const key = createPrivateKey(pem);
  return { key, alg: algorithmFor(key), kid: keyIdOf(createPublicKey(key)) };
}

export function verificationKeyOf(publicKey: KeyObject): VerificationKey {
  return { key: publicKey, alg: algorithmFor(publicKey), kid: keyIdOf(publicKey) };
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

/** Every key in a PEM text; private keys count by their public part. */
export function verificationKeysFromPem(text: string, where: string): VerificationKey[] {
  const out: VerificationKey[] = [];
  for (const m of text.matchAll(PEM_BLOCK)) {
    const block = m[0];
    const type = m[1] ?? '';
    let pub: KeyObject;
    try {
      if (type === 'CERTIFICATE') pub = new X509Certificate(block).publicKey;
      else if (type.includes('PRIVATE KEY')) pub = createPublicKey(createPrivateKey(block));
      else if (type.includes('PUBLIC KEY')) pub = createPublicKey(block);
      else continue;
      out.push(verificationKeyOf(pub));
    } catch (e) {
      throw new Error(`${where}: cannot read the ${type} block: ${(e as Error).message}`, { cause: e });
    }
  }
  if (out.length === 0) throw new Error(`${where}: no PEM key or certificate found`);
  return out;
}

export async function readSigningKey(file: string): Promise<SigningKey> {
  const pem = await readFile(file);
  try {
    return signingKeyFromPem(pem);
  } catch (e) {
    throw new Error(`"${file}": ${(e as Error).message}`, { cause: e });
  }
}

export async function readVerificationKeys(files: readonly string[]): Promise<VerificationKey[]> {
  const out: VerificationKey[] = [];
  for (const f of files) out.push(...verificationKeysFromPem(await readFile(f, 'utf8'), `"${f}"`));
  return out;
}

/** Keys deduplicated by key id (the signing key's public part is often listed twice). */
export function uniqueKeys(keys: readonly VerificationKey[]): VerificationKey[] {
  const seen = new Map<string, VerificationKey>();
  for (const k of keys) if (!seen.has(k.kid)) seen.set(k.kid, k);
  return [...seen.values()];
}
