/**
 * Value transformers: what the object store applies to stored bytes of a resource (encryption
 * at rest). `key` is the storage key; AEAD providers bind it as authenticated data so a value
 * copied to another key does not decrypt.
 */
export interface ValueTransformer {
  toStorage(data: Buffer, key: string): Promise<Buffer>;
  fromStorage(data: Buffer, key: string): Promise<Buffer>;
}

/** One configured provider with its key: a fixed prefix on every value it writes. */
export interface EncryptionProvider {
  /** 'identity', 'aescbc', 'aesgcm', 'secretbox'. */
  readonly kind: string;
  /** Prefix of values it writes ('' for identity), e.g. 'k8s:enc:aescbc:v1:key1:'. */
  readonly prefix: string;
  seal(plain: Buffer, key: string): Buffer;
  /** Throws when the value does not decrypt (wrong key, tampering). */
  open(sealed: Buffer, key: string): Buffer;
}

export const ENCRYPTED_MARKER = 'k8s:enc:';

/**
 * The first provider writes; reading picks the provider by the value's prefix. Values without
 * the `k8s:enc:` marker are plaintext and read as is only when identity is configured (so
 * turning encryption on keeps old plaintext readable, as Kubernetes does).
 */
export class PrefixTransformer implements ValueTransformer {
  private readonly readers: EncryptionProvider[];
  private readonly identity: boolean;

  constructor(private readonly providers: readonly EncryptionProvider[]) {
    if (providers.length === 0) throw new RangeError('at least one encryption provider is needed');
    this.readers = providers.filter((p) => p.prefix !== '');
    this.identity = providers.some((p) => p.prefix === '');
  }

  async toStorage(data: Buffer, key: string): Promise<Buffer> {
    const writer = this.providers[0]!;
    if (writer.prefix === '') return data;
    return Buffer.concat([Buffer.from(writer.prefix, 'utf8'), writer.seal(data, key)]);
  }

  async fromStorage(data: Buffer, key: string): Promise<Buffer> {
    let lastError: unknown;
    for (const p of this.readers) {
      if (!startsWith(data, p.prefix)) continue;
      try {
        return p.open(data.subarray(Buffer.byteLength(p.prefix)), key);
      } catch (e) {
        lastError = e; // two keys may share a prefix only by misconfiguration; try the next
      }
    }
    if (this.identity && !startsWith(data, ENCRYPTED_MARKER)) return data;
    if (lastError) throw new Error(`failed to decrypt stored value: ${(lastError as Error).message}`, { cause: lastError });
    throw new Error(startsWith(data, ENCRYPTED_MARKER)
      ? `no configured provider matches the stored value's prefix ${JSON.stringify(prefixOf(data))}`
      : 'stored value is not encrypted and the identity provider is not configured');
  }
}

function startsWith(data: Buffer, prefix: string): boolean {
  const p = Buffer.from(prefix, 'utf8');
  return data.length >= p.length && data.subarray(0, p.length).equals(p);
}

function prefixOf(data: Buffer): string {
  // k8s:enc:<provider>:v1:<name>: — five colons
  const s = data.subarray(0, 256).toString('latin1');
  let idx = -1;
  for (let i = 0; i < 5; i++) { idx = s.indexOf(':', idx + 1); if (idx < 0) return s.slice(0, 32); }
  return s.slice(0, idx + 1);
}
