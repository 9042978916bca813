/**
 * Serializations of stored entries, shared by every request that serves the same entry.
 *
 * A stored entry (KeyValue) is immutable, and the watch cache hands out the same entry object
 * for as long as the object is unchanged, so what a request makes of an entry — decode, convert
 * to the served version, serialize — can be remembered on the entry's identity and reused by
 * the next request asking for the same encoding. That turns a LIST of 10 000 cached objects
 * from 10 000 decodes and one big JSON.stringify into a join of remembered strings.
 *
 * Contract: the value cached under an encoding must be a pure function of the entry and of
 * everything the encoding id names (resource, served version, form), so any request may reuse
 * it. Entries are held weakly: a serialization lives as long as its entry is referenced (by the
 * cache's current state or its event history) and no longer. Serializations are exact-size
 * buffers: a GET body is written as it is, a list body is one Buffer.concat of its items.
 */
import type { KeyValue } from '../../../storage/interface.js';

/** Per resource definition, per form, per served version. */
const caches = new WeakMap<object, Map<string, Map<string, WeakMap<KeyValue, Buffer>>>>();

/**
 * The remembered serializations of one encoding: the resource `def` (a definition object), the
 * `form` (e.g. 'json-item') and the served `version`. Found by the definition's identity and two
 * short keys, so a request builds no encoding id.
 */
export function entrySerializations(def: object, form: string, version: string): WeakMap<KeyValue, Buffer> {
  let byForm = caches.get(def);
  if (!byForm) caches.set(def, byForm = new Map());
  let byVersion = byForm.get(form);
  if (!byVersion) byForm.set(form, byVersion = new Map());
  let m = byVersion.get(version);
  if (!m) byVersion.set(version, m = new WeakMap());
  return m;
}

/**
 * `text` as an exact-size buffer of its own (not a slice of Node's shared pool, which a kept
 * small buffer would pin whole).
 */
export function ownedUtf8(text: string): Buffer {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'));
  b.write(text, 'utf8');
  return b;
}
