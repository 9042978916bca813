/**
 * Served JSON spliced from a stored value (json-splice.ts) for one object: GET's first
 * serialization of an entry (entry-reads.ts), and the answer to a create or update, whose
 * stored bytes the store hands back (WrittenJson), so the object just written is not encoded a
 * second time. Bodies are byte for byte what respondObject writes
 * (test/apiserver/written-responses.test.ts compares them).
 */
import { apiVersionOf, type KubeObject, type ResourceDefinition } from '../../../api/resources/types.js';
import type { WrittenJson } from '../../../storage/object-store-types.js';
import { writeBody } from './http-io.js';
import { scanStored, spliceServed, type StoredJson } from './json-splice.js';
import type { OutputFormat } from './negotiate.js';
import { convertsOnServe, respondObject, servedApiVersion, warningHeaders, type Scope } from './scope.js';

/** `"kind":K,"apiVersion":V` of each definition's served versions, as bytes. */
const prefixes = new WeakMap<ResourceDefinition, Map<string, Buffer>>();

/** The kind and apiVersion members that served JSON starts with (remembered per version). */
export function servedTypePrefix(s: Scope): Buffer {
  let byVersion = prefixes.get(s.def);
  if (byVersion === undefined) prefixes.set(s.def, byVersion = new Map());
  let prefix = byVersion.get(s.version);
  if (prefix === undefined) {
    prefix = Buffer.from(`"kind":${JSON.stringify(s.def.kind)},"apiVersion":${JSON.stringify(servedApiVersion(s))}`, 'utf8');
    byVersion.set(s.version, prefix);
  }
  return prefix;
}

/** True when a stored value is in another version than the definition's (it must be converted to serve). */
export function storedInOtherVersion(s: Scope, scanned: StoredJson): boolean {
  return s.def.convert !== undefined && scanned.apiVersion !== undefined && scanned.apiVersion !== ''
    && scanned.apiVersion !== apiVersionOf(s.def.group, s.def.storageVersion);
}

/**
 * The compact served JSON of a stored plain-JSON value at `revision`, spliced; undefined when
 * the value is not in the canonical form the splice needs, or was stored in another version
 * than the definition's (it must be converted). Callers check that serving converts nothing.
 * `oneShot`: the body is written once and not kept (see spliceServed).
 */
export function servedJsonOf(s: Scope, stored: Buffer, revision: number, oneShot = false): Buffer | undefined {
  const scanned = scanStored(stored);
  if (scanned === undefined || storedInOtherVersion(s, scanned)) return undefined;
  return spliceServed(scanned, revision, servedTypePrefix(s), oneShot);
}

/**
 * True when the answer is the compact JSON object in the definition's own form (no conversion,
 * not stored as another resource): then stored plain JSON can be spliced into it.
 */
export function servesSplicedJson(s: Scope, fmt: OutputFormat): boolean {
  return fmt.target === 'object' && fmt.mediaType === 'application/json' && !fmt.pretty && !s.def.storage && !convertsOnServe(s);
}

/**
 * respondObject for the object a create or update returned (`obj`, def form), given what the
 * store told of the write: when `obj` is the stored object itself and the answer is the
 * compact JSON object, the body is spliced from the stored bytes.
 */
export function respondWritten(s: Scope, code: number, obj: KubeObject, fmt: OutputFormat, written: WrittenJson | undefined): void {
  if (written !== undefined && written.object === obj && servesSplicedJson(s, fmt)) {
    const body = (written.rvAt !== undefined ? servedJsonAt(servedTypePrefix(s), written.json, written.rvAt, written.revision) : undefined)
      ?? servedJsonOf(s, written.json, written.revision, true);
    if (body !== undefined) {
      writeBody(s.res, code, body, fmt.contentType ?? 'application/json', warningHeaders(s));
      return;
    }
  }
  respondObject(s, code, obj, fmt);
}

/**
 * servedJsonOf for a value whose resourceVersion offset the store knew (WrittenJson.rvAt): the
 * same bytes, without scanning the value. `prefix` is servedTypePrefix's. Undefined when the
 * stored kind and apiVersion are not the served ones (the scan's path converts or rewrites them). The body is written once (a
 * slice of Node's pool, see spliceServed).
 */
export function servedJsonAt(prefix: Buffer, stored: Buffer, rvAt: number, revision: number): Buffer | undefined {
  const n = prefix.length;
  // `{` + the served `"kind":K,"apiVersion":V` + `,`, byte for byte.
  if (stored.length <= n + 1 || stored[0] !== 0x7b || stored[n + 1] !== 0x2c || rvAt <= n + 1 || rvAt >= stored.length) return undefined;
  for (let i = 0; i < n; i++) if (stored[i + 1] !== prefix[i]) return undefined;
  const rv = `,"resourceVersion":"${revision}"`;
  const out = Buffer.allocUnsafe(stored.length + rv.length + 1);
  stored.copy(out, 0, 0, rvAt);
  out.write(rv, rvAt, 'latin1');
  stored.copy(out, rvAt + rv.length, rvAt);
  out[out.length - 1] = 0x0a;
  return out;
}
