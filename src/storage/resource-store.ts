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
import { isJsonRoundTripExact, jsonRoundTripCopy } from '../util/json-clone.js';
import { goEscape, goOrder, goStorageForm } from '../api/codec/go-json.js';

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

  /**
   * Encodes an object for storage; metadata.resourceVersion is never stored. Synchronous
   * without an at-rest transformer (the common case saves a promise per write). `adopt`: the
   * caller hands `obj` over and never reads or changes it again, so when it is exactly what
   * decoding the text gives, it becomes the written object itself instead of a copy.
   */
  encode(obj: KubeObject, key: string, adopt = false): EncodedObject | Promise<EncodedObject> {
    // Stored in the order Kubernetes' encoder writes (go-json.ts), so reads splice served JSON
    // from the stored bytes as they are.
    let text: string | undefined;
    let written: KubeObject | undefined;
    let plain: Buffer;
    let rvAt: number | undefined;
    if (this.codec === jsonCodec) {
      // A built-in kind: ordered, checked and (unless adopted) copied in one walk, with
      // resourceVersion's key kept in place for decodeWritten.
      const form = goStorageForm(obj, !adopt) as KubeObject | undefined;
      if (form !== undefined) {
        text = goEscape(JSON.stringify(form));
        written = form;
        plain = Buffer.from(text, 'utf8');
        rvAt = resourceVersionOffset(text, plain.length, form);
      } else {
        const stripped = goOrder(withoutResourceVersion(obj)) as KubeObject;
        text = goEscape(JSON.stringify(stripped));
        // What decoding the text gives: `obj` itself when adopted, else copied now (the caller
        // may change `obj` while the write is in flight), much cheaper than parsing the text
        // again; undefined when only a parse gives the exact result.
        if (typeof stripped === 'object' && stripped !== null && !Array.isArray(stripped)) {
          written = adopt ? (isJsonRoundTripExact(stripped) ? stripped : undefined) : jsonRoundTripCopy(stripped);
        }
        plain = Buffer.from(text, 'utf8');
      }
    } else {
      plain = this.codec.encode(goOrder(withoutResourceVersion(obj)) as KubeObject);
    }
    if (!this.transformer) return { plain, stored: plain, text, written, rvAt };
    return this.transformer.toStorage(plain, key).then((stored) => ({ plain, stored, text, written, rvAt }));
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

  /** decode() as a function value, made once per resource: entries (StoredEntry, list results) hand it out. */
  readonly decoder = (kv: KeyValue): Promise<KubeObject> => this.decode(kv);

  /** decodeSync() when the store allows it (canDecodeSync), else decode(). */
  decodeNow(kv: KeyValue): KubeObject | Promise<KubeObject> {
    return this.canDecodeSync ? this.decodeSync(kv) : this.decode(kv);
  }

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
    return setResourceVersion(obj, revision);
  }

  /** The object just encoded by encode(), as decoding its bytes gives it (a fresh object), at `revision`. */
  decodeWritten(e: EncodedObject, revision: number): KubeObject {
    const copy = e.written;
    if (copy !== undefined) {
      e.written = undefined; // handed out once: the caller owns it from here
      return setResourceVersion(copy, revision);
    }
    return setResourceVersion(e.text !== undefined ? jsonCodec.decodeText(e.text) : this.codec.decode(e.plain), revision);
  }
}

export interface EncodedObject {
  /** The codec's bytes (what decoding reads back). */
  readonly plain: Buffer;
  /** What is written to the backend: `plain` after the at-rest transformer. */
  readonly stored: Buffer;
  /** With the JSON codec: the text `plain` holds. */
  readonly text: string | undefined;
  /** With the JSON codec, when the object allows it: a private copy equal to decoding `text` (taken by decodeWritten). */
  written: KubeObject | undefined;
  /** See WrittenJson.rvAt. */
  readonly rvAt: number | undefined;
}

/**
 * The byte offset in `text` (the stored form of `form`, from goStorageForm) where Kubernetes
 * writes metadata.resourceVersion: the comma that starts the member after its slot. Only the
 * string members name, generateName, namespace, selfLink and uid come before the slot, and a
 * quote inside a JSON string is always escaped, so the first `,"<next key>":` after metadata's
 * brace is that member. Undefined when the text is not ASCII (offsets in characters and bytes
 * differ), or the slot is metadata's first or last member (no comma to find).
 */
function resourceVersionOffset(text: string, bytes: number, form: KubeObject): number | undefined {
  if (bytes !== text.length) return undefined;
  let slot = false;
  let before = false;
  let next: string | undefined;
  for (const k in form.metadata) {
    if (slot) { next = k; break; }
    if (k === 'resourceVersion') slot = true;
    else before = true;
  }
  if (!before || next === undefined) return undefined;
  const meta = text.indexOf('"metadata":{');
  if (meta < 0) return undefined;
  const at = text.indexOf(`,${goEscape(JSON.stringify(next))}:`, meta + 12);
  return at < 0 ? undefined : at;
}

/** Sets metadata.resourceVersion of a freshly decoded object (which the caller owns). */
/** ObjectMeta's fields that Go declares before resourceVersion. */
const BEFORE_RESOURCE_VERSION = new Set(['name', 'generateName', 'namespace', 'selfLink', 'uid']);

/**
 * Sets metadata.resourceVersion where ObjectMeta declares it (after uid), so the object stays
 * in Go's field order: in place when it goes last or is there already, else in a new metadata.
 */
function setResourceVersion(obj: KubeObject, revision: number): KubeObject {
  const meta: unknown = obj.metadata;
  if (typeof meta === 'object' && meta !== null && !Array.isArray(meta)) {
    const m = meta as Record<string, unknown>;
    const rv = String(revision);
    let later = false;
    if (!('resourceVersion' in m)) for (const k in m) if (!BEFORE_RESOURCE_VERSION.has(k)) { later = true; break; }
    if (!later) { m['resourceVersion'] = rv; return obj; }
    const out: Record<string, unknown> = {};
    let placed = false;
    for (const k in m) {
      if (!placed && !BEFORE_RESOURCE_VERSION.has(k)) { out['resourceVersion'] = rv; placed = true; }
      out[k] = m[k];
    }
    obj.metadata = out as KubeObject['metadata'];
  } else {
    obj.metadata = { ...(obj.metadata ?? {}), resourceVersion: String(revision) };
  }
  return obj;
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
  // Without key arrays: every member of `a` (undefined ones count as absent) must equal `b`'s,
  // and then `b` must have no more members than `a`.
  let members = 0;
  for (const k in ao) {
    if (!Object.hasOwn(ao, k)) continue;
    const v = ao[k];
    if (v === undefined) continue;
    members++;
    if (!Object.hasOwn(bo, k) || !jsonEqual(v, bo[k])) return false;
  }
  for (const k in bo) {
    if (Object.hasOwn(bo, k) && bo[k] !== undefined && --members < 0) return false;
  }
  return members === 0;
}
