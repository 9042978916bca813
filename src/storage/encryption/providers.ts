/**
 * The at-rest encryption providers, byte-compatible with kube-apiserver
 * (k8s.io/apiserver/pkg/storage/value/encrypt): after the prefix `k8s:enc:<kind>:v1:<name>:`
 *  - aescbc:    16-byte random IV || AES-CBC(PKCS#7 padded plaintext); AES-128/192/256 by key size
 *  - aesgcm:    12-byte random nonce || AES-GCM ciphertext || 16-byte tag; the storage key is the
 *               additional authenticated data
 *  - secretbox: 24-byte random nonce || NaCl secretbox (16-byte Poly1305 tag || XSalsa20 ciphertext)
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { secretboxOpen, secretboxSeal } from './secretbox.js';
import type { EncryptionProvider } from './transformer.js';

export const identityProvider: EncryptionProvider = {
  kind: 'identity',
  prefix: '',
  seal: (plain) => plain,
  open: (sealed) => sealed,
};

function providerPrefix(kind: string, name: string): string {
  return `k8s:enc:${kind}:v1:${name}:`;
}

function aesAlgorithm(mode: 'cbc' | 'gcm', key: Buffer): string {
  if (![16, 24, 32].includes(key.length)) throw new RangeError(`AES key must be 16, 24 or 32 bytes, got ${key.length}`);
  return `aes-${key.length * 8}-${mode}`;
}

export function aescbcProvider(name: string, key: Buffer): EncryptionProvider {
  const algorithm = aesAlgorithm('cbc', key);
  return {
    kind: 'aescbc',
    prefix: providerPrefix('aescbc', name),
    seal(plain) {
      const iv = randomBytes(16);
      const c = createCipheriv(algorithm, key, iv); // PKCS#7 padding is node's default
      return Buffer.concat([iv, c.update(plain), c.final()]);
    },
    open(sealed) {
      if (sealed.length < 16) throw new Error('the stored data was shorter than the required size');
      if ((sealed.length - 16) % 16 !== 0) throw new Error('the stored data is not a multiple of the block size');
      const d = createDecipheriv(algorithm, key, sealed.subarray(0, 16));
      return Buffer.concat([d.update(sealed.subarray(16)), d.final()]);
    },
  };
}

export function aesgcmProvider(name: string, key: Buffer): EncryptionProvider {
  const algorithm = aesAlgorithm('gcm', key) as 'aes-128-gcm';
  return {
    kind: 'aesgcm',
    prefix: providerPrefix('aesgcm', name),
    seal(plain, storageKey) {
      const nonce = randomBytes(12);
      const c = createCipheriv(algorithm, key, nonce);
      c.setAAD(Buffer.from(storageKey, 'utf8'));
      return Buffer.concat([nonce, c.update(plain), c.final(), c.getAuthTag()]);
    },
    open(sealed, storageKey) {
      if (sealed.length < 12 + 16) throw new Error('the stored data was shorter than the required size');
      const d = createDecipheriv(algorithm, key, sealed.subarray(0, 12));
      d.setAAD(Buffer.from(storageKey, 'utf8'));
      d.setAuthTag(sealed.subarray(sealed.length - 16));
      return Buffer.concat([d.update(sealed.subarray(12, sealed.length - 16)), d.final()]);
    },
  };
}

export function secretboxProvider(name: string, key: Buffer): EncryptionProvider {
  if (key.length !== 32) throw new RangeError(`secretbox key must be 32 bytes, got ${key.length}`);
  return {
    kind: 'secretbox',
    prefix: providerPrefix('secretbox', name),
    seal(plain) {
      const nonce = randomBytes(24);
      return Buffer.concat([nonce, secretboxSeal(plain, nonce, key)]);
    },
    open(sealed) {
      if (sealed.length < 24 + 16) throw new Error('the stored data was shorter than the required size');
      const m = secretboxOpen(sealed.subarray(24), sealed.subarray(0, 24), key);
      if (!m) throw new Error('secretbox: message authentication failed');
      return m;
    },
  };
}
