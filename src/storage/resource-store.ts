/**
 * Per-resource storage state of the object store: which backend (or watch cache over it)
 * serves the resource, the key prefix, and the conversion between objects and stored bytes
 * (codec, then the at-rest transformer).
 */
import type { KubeObject } from '../api/resources/types.js';
import { jsonCodec, type ObjectCodec } from './codec.js';
import type { ValueTransformer } from './encryption/transformer.js';
import { StorageError, isStorageError } from './errors.js';
import type { Backend, KeyValue } from './interface.js';
import type { WatchCache } from './watch-cache/watch-cache.js';

export class ResourceStore {
  constructor(
    readonly group: string,
    readonly resource: string,
    /** Where reads and watches go: the watch cache when enabled, else the raw backend. */
    readonly backend: Backend,
    /** The raw backend (writes go through `backend`, which passes them on unchanged). */
    readonly raw: Backend,
    readonly cache: WatchCache | undefined,
    /** '<prefix>/<segment>/' */
    readonly keyPrefix: string,
    private readonly codec: ObjectCodec,
    private readonly transformer: ValueTransformer | undefined,
  ) {}

  /** Encodes an object for storage; metadata.resourceVersion is never stored. */
  async encode(obj: KubeObject, key: string): Promise<{ plain: Buffer; stored: Buffer }> {
    const plain = this.codec.encode(withoutResourceVersion(obj));
    const stored = this.transformer ? await this.transformer.toStorage(plain, key) : plain;
    return { plain, stored };
  }

  /** Decodes a stored value into a fresh object whose resourceVersion is `revision`. */
  async decode(kv: KeyValue, revision = kv.modRevision): Promise<KubeObject> {
    let plain = kv.value;
    if (this.transformer) {
      try {
        plain = await this.transformer.fromStorage(kv.value, kv.key);
      } catch (e) {
        throw new StorageError('Internal', `cannot decrypt ${kv.key}: ${(e as Error).message}`, { key: kv.key }, { cause: e });
      }
    }
    return this.decodeValue(kv, plain, revision);
  }

  /** True when stored values are plaintext, so decodeSync may be used (no at-rest transformer). */
  get canDecodeSync(): boolean { return this.transformer === undefined; }

  /**
   * True when stored values are exactly JSON.stringify of the object without
   * metadata.resourceVersion (the JSON codec, no at-rest transformer): readers may splice them
   * instead of decoding.
   */
  get storesPlainJson(): boolean { return this.transformer === undefined && this.codec === jsonCodec; }

  /** decode() without a promise, for stores without an at-rest transformer (see canDecodeSync). */
  decodeSync(kv: KeyValue, revision = kv.modRevision): KubeObject {
    if (this.transformer) throw new StorageError('Internal', `${kv.key}: stored values need the async decode`);
    return this.decodeValue(kv, kv.value, revision);
  }

  private decodeValue(kv: KeyValue, plain: Buffer, revision: number): KubeObject {
    let obj: KubeObject;
    try {
      obj = this.codec.decode(plain);
    } catch (e) {
      if (isStorageError(e)) throw new StorageError(e.code, `${kv.key}: ${e.message}`, { key: kv.key }, { cause: e });
      throw new StorageError('Internal', `cannot decode ${kv.key}: ${(e as Error).message}`, { key: kv.key }, { cause: e });
    }
    obj.metadata = { ...(obj.metadata ?? {}), resourceVersion: String(revision) };
    return obj;
  }

  /** Decodes the plaintext form of an object (used to hand back what was just written). */
  decodePlain(plain: Buffer, revision: number): KubeObject {
    const obj = this.codec.decode(plain);
    obj.metadata = { ...(obj.metadata ?? {}), resourceVersion: String(revision) };
    return obj;
  }
}

function withoutResourceVersion(obj: KubeObject): KubeObject {
  if (!obj.metadata || obj.metadata.resourceVersion === undefined) return obj;
  const { resourceVersion: _rv, ...meta } = obj.metadata;
  return { ...obj, metadata: meta };
}

/** Structural equality of JSON values (key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  if (ak.length !== bk.length) return false;
  for (const k of ak) if (!jsonEqual(ao[k], bo[k])) return false;
  return true;
}
