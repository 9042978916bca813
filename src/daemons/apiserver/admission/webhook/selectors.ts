/**
 * A webhook's namespaceSelector and objectSelector, as Kubernetes' matchers decide them.
 *
 * - namespaceSelector: a cluster-scoped resource other than namespaces always matches; a
 *   Namespace being created or updated is matched by its own labels, every other request by the
 *   labels of its namespace (read from the cache, then consistently when the cache lacks it: a
 *   namespace created a moment ago); a missing namespace fails the request with 404.
 * - objectSelector: the object's labels or, failing that, the old object's.
 * An empty selector matches everything without reading anything.
 */
import { errors } from '../../../../api/meta/status.js';
import { selectorMatches } from '../../../../api/resources/common/validation.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import type { KeyValue } from '../../../../storage/interface.js';
import type { ObjectStore, StoredEntry } from '../../../../storage/object-store-types.js';
import type { AdmissionAttributes } from '../types.js';
import type { LabelSelector } from './webhook.js';

type Labels = Readonly<Record<string, string>> | undefined;

/** Labels per stored namespace entry (entries are immutable; the cache hands out the same one while unchanged). */
const labelsByEntry = new WeakMap<KeyValue, Labels>();

async function labelsOf(entry: StoredEntry): Promise<Labels> {
  if (labelsByEntry.has(entry.kv)) return labelsByEntry.get(entry.kv);
  const ns = await entry.decode(entry.kv);
  const labels = ns.metadata?.labels;
  labelsByEntry.set(entry.kv, labels);
  return labels;
}

/** A namespace's labels; 404 NotFound when it does not exist. */
async function namespaceLabels(store: ObjectStore, name: string): Promise<Labels> {
  const ref = { group: '', resource: 'namespaces', namespace: '', name };
  const entry = store.peekEntry(ref) ?? await store.getEntry(ref, { resourceVersion: '0' }) ?? await store.getEntry(ref);
  if (!entry) throw errors.notFound({ resource: 'namespaces', name });
  return labelsOf(entry);
}

const isNamespaces = (a: AdmissionAttributes): boolean => a.def.group === '' && a.def.plural === 'namespaces';

/** Whether the request's namespace (or Namespace object) matches; true at once for an empty selector. */
export function matchesNamespaceSelector(store: ObjectStore, sel: LabelSelector | undefined, a: AdmissionAttributes): boolean | Promise<boolean> {
  if (!sel) return true;
  if (isNamespaces(a)) {
    if (a.subresource === '' && (a.operation === 'CREATE' || a.operation === 'UPDATE')) return selectorMatches(sel, a.object?.metadata?.labels);
    return namespaceLabels(store, a.name).then((l) => selectorMatches(sel, l));
  }
  if (a.namespace === '') return true;
  return namespaceLabels(store, a.namespace).then((l) => selectorMatches(sel, l));
}

function labelsMatch(sel: LabelSelector, obj: KubeObject | undefined): boolean {
  return obj !== undefined && selectorMatches(sel, obj.metadata?.labels);
}

/** Whether the object or the old object matches; true for an empty selector. */
export function matchesObjectSelector(sel: LabelSelector | undefined, a: AdmissionAttributes): boolean {
  if (!sel) return true;
  return labelsMatch(sel, a.object) || labelsMatch(sel, a.oldObject);
}
