/**
 * The read fast paths: GET and LIST answered from serializations remembered per stored entry
 * (entry-serializations.ts), in compact JSON or protobuf, for resources served by a watch cache.
 *
 * The general path decodes every object it reads and encodes every object it writes. Here the
 * store returns entries (ListQuery.entries) and an entry is decoded, converted and encoded only
 * the first time it is served in a given form; later reads reuse the bytes while the object is
 * unchanged (a changed object is a new entry). Bodies are byte for byte the general path's
 * (test/apiserver/read-fast-paths.test.ts compares them), reads have the same resourceVersion
 * semantics and errors. Anything else — Table, metadata-only, YAML, pretty output, resources
 * stored under another resource's name, kinds without a protobuf form — takes the general path
 * (these functions return false before reading).
 */
import { storageToApiError } from '../../../api/meta/storage-status.js';
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { messageForObject } from '../../../api/schema/registry.js';
import type { KeyValue } from '../../../storage/interface.js';
import type { ObjectStoreInternals } from '../../../storage/object-store.js';
import type { ListResult, ObjectRef, StoredEntry } from '../../../storage/object-store-types.js';
import { qualified } from '../registry/resource-registry.js';
import { entrySerializations, ownedUtf8 } from './entry-serializations.js';
import { pieceBytesFor, type BodySource } from '../body-writer.js';
import { encodeFor, writeBody } from './http-io.js';
import { jsonListSource, protobufListSource } from './list-body.js';
import { servedJsonOf, servesSplicedJson, storedInOtherVersion } from './served-json.js';
import { scanStored, splicePlan, type SplicePlan } from './json-splice.js';
import type { OutputFormat } from './negotiate.js';
import { encodeListItem, protobufListPlan } from './protobuf-entries.js';
import type { ListParams } from './read-handlers.js';
import { servedApiVersion, toServed, type Scope } from './scope.js';
import { goEscape, goOrderKind } from '../../../api/codec/go-json.js';

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

/** The list body's item form (toServed without kind and apiVersion, as Kubernetes lists items). */
export function listItem(s: Scope, o: KubeObject): KubeObject {
  const { kind: _k, apiVersion: _a, ...rest } = toServed(s, o);
  void _k; void _a;
  return rest as KubeObject;
}

/**
 * 'json' or 'protobuf' when the fast paths serve this request, else undefined: a whole object
 * or list, compact, of a resource stored under its own name and served by a watch cache (whose
 * entries are stable objects, so remembered bytes are found again).
 */
function fastEncoding(s: Scope, fmt: OutputFormat): 'json' | 'protobuf' | undefined {
  if (fmt.target !== 'object' || fmt.pretty || s.def.storage) return undefined;
  let enc: 'json' | 'protobuf';
  if (fmt.mediaType === 'application/json') enc = 'json';
  else if (fmt.mediaType === PROTOBUF && messageForObject(servedApiVersion(s), s.def.kind)) enc = 'protobuf';
  else return undefined;
  const store = s.registry.store as Partial<ObjectStoreInternals>;
  try {
    return store.watchCacheFor?.(s.def.group, s.def.plural) !== undefined ? enc : undefined;
  } catch {
    return undefined; // a closed store: the general path reports it
  }
}

async function decodeEntry(s: Scope, decode: (kv: KeyValue) => Promise<KubeObject>, kv: KeyValue, name: string): Promise<KubeObject> {
  try {
    return await decode(kv);
  } catch (e) {
    throw storageToApiError(e, qualified(s.def, name));
  }
}

/**
 * GET as a one-key read of the stored entry (ListQuery.name), answered with the entry's
 * remembered body when another GET made it. Same read as registry.get (resourceVersion '0'
 * reads like unset, as there) and same bytes as respondObject.
 */
export async function getFromEntry(s: Scope, fmt: OutputFormat): Promise<boolean> {
  const enc = fastEncoding(s, fmt);
  if (!enc) return false;
  const ref = s.registry.refOf(s.def, s.namespace, s.name);
  const rv = s.query.get('resourceVersion');
  const consistent = !rv || rv === '0';
  // Without a promise when the watch cache can vouch for a consistent read (LevelDB).
  const peeked = consistent ? s.registry.store.peekEntry(ref, true) : null;
  const entry = peeked !== null ? peeked : await readEntry(s, ref, consistent ? undefined : rv!);
  if (entry === null) return false;
  if (!entry) throw errors.notFound(qualified(s.def, s.name));
  const { kv, decode } = entry;
  const contentType = enc === 'json' ? fmt.contentType ?? 'application/json' : PROTOBUF;
  const cache = entrySerializations(s.def, enc === 'json' ? 'json-get' : 'protobuf-get', s.version);
  let body = cache.get(kv);
  if (body === undefined && entry.plainJson && servesSplicedJson(s, fmt)) {
    body = servedJsonOf(s, kv.value, kv.modRevision);
    if (body !== undefined) cache.set(kv, body);
  }
  if (body === undefined) {
    const served = toServed(s, s.registry.fromStore(s.def, await decodeEntry(s, decode, kv, s.name)));
    const encoded = encodeFor(fmt, served);
    if (encoded.contentType !== contentType) {
      // No protobuf form for this object after all: what the general path sends, not remembered.
      writeBody(s.res, 200, encoded.body, encoded.contentType);
      return true;
    }
    body = copyOut(encoded.body);
    cache.set(kv, body);
  }
  writeBody(s.res, 200, body, contentType);
  return true;
}

/**
 * The entry a GET reads through the list path (ListQuery.name): the read registry.get makes,
 * undefined when there is no such object, null when the store hands out no entries (the
 * general path answers then).
 */
async function readEntry(s: Scope, ref: ObjectRef, resourceVersion: string | undefined): Promise<StoredEntry | undefined | null> {
  let res: ListResult;
  try {
    res = await s.registry.store.list({
      group: ref.group, resource: ref.resource, namespace: ref.namespace, name: ref.name, entries: true,
      ...(resourceVersion ? { resourceVersion } : {}),
    });
  } catch (e) {
    throw storageToApiError(e, qualified(s.def, s.name));
  }
  const { entries, decode } = res;
  if (!entries || !decode) return null;
  const kv = entries[0];
  return kv ? { kv, decode, plainJson: res.plainJson === true } : undefined;
}

/** An exact-size copy that owns its memory (encoders may return slices of shared pools). */
function copyOut(b: Buffer): Buffer {
  const owned = Buffer.allocUnsafeSlow(b.length);
  b.copy(owned);
  return owned;
}

/**
 * LIST assembled from per-entry item serializations: an item is decoded and encoded the first
 * time it is listed in this form and reused by later lists while the object is unchanged.
 */
export async function listFromEntries(s: Scope, p: ListParams, fmt: OutputFormat): Promise<boolean> {
  const enc = fastEncoding(s, fmt);
  if (!enc) return false;
  const apiVersion = servedApiVersion(s);
  const plan = enc === 'protobuf' ? protobufListPlan(apiVersion, s.def.listKind) : undefined;
  if (enc === 'protobuf' && !plan) return false;
  const res = await s.registry.list(s.def, { namespace: s.namespace, ...p, entries: true });
  const { entries, decode } = res;
  if (!entries || !decode) return false;
  const cache = entrySerializations(s.def, enc === 'json' ? 'json-item' : 'protobuf-item', s.version);
  const splice = res.plainJson === true && servesSplicedJson(s, fmt);
  // An item is its remembered bytes, or (plain JSON) its remembered splice plan, written
  // straight into the body: no per-item buffer, so a cold list costs one scan per item.
  const items: (Buffer | SplicePlan)[] = new Array<Buffer | SplicePlan>(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const kv = entries[i]!;
    let item: Buffer | SplicePlan | undefined = splice ? splicePlans.get(kv) : undefined;
    if (item === undefined) item = cache.get(kv);
    if (item === undefined && splice) {
      const stored = scanStored(kv.value);
      if (stored && !storedInOtherVersion(s, stored)) {
        item = splicePlan(stored);
        splicePlans.set(kv, item);
      }
    }
    if (item === undefined) {
      const obj = listItem(s, await decodeEntry(s, decode, kv, ''));
      if (plan) {
        try {
          item = encodeListItem(plan, obj);
        } catch {
          return false; // the general path falls back to JSON for the whole list
        }
      } else {
        item = ownedUtf8(goEscape(JSON.stringify(goOrderKind(apiVersion, s.def.kind, obj))));
      }
      cache.set(kv, item);
    }
    items[i] = item;
  }
  const metadata: Record<string, unknown> = { resourceVersion: res.resourceVersion };
  if (res.continue) metadata.continue = res.continue;
  if (res.remainingItemCount !== undefined && res.continue) metadata.remainingItemCount = res.remainingItemCount;
  // Made piece by piece as the connection drains (list-body.ts), not as one buffer.
  const piece = pieceBytesFor(s.res);
  let body: BodySource;
  if (plan) {
    try {
      body = protobufListSource(plan, apiVersion, s.def.listKind, metadata, items as Buffer[], piece);
    } catch {
      return false; // no protobuf form for this list after all: the general path answers
    }
  } else body = jsonListSource(s.def.listKind, apiVersion, metadata, entries, items, piece);
  writeBody(s.res, 200, body, plan ? PROTOBUF : fmt.contentType ?? 'application/json');
  return true;
}

/**
 * Splice plans of stored entries (a plan depends on the stored bytes alone, so one map serves
 * every resource and version that splices; held weakly, like the serializations).
 */
const splicePlans = new WeakMap<KeyValue, SplicePlan>();
