/**
 * The informer's local cache: objects by key (`namespace/name`, or `name` for cluster-scoped
 * objects) plus secondary indexes computed by index functions ("namespace" always present).
 *
 * Contract: objects handed out are the cached instances; callers must treat them as read-only
 * (copy before changing). Index functions must be pure and fast.
 */
import type { KubeObject } from '../api/resources/types.js';

/** Values an object is indexed under (none: not indexed). */
export type IndexFunc = (obj: KubeObject) => string[];

export const NAMESPACE_INDEX = 'namespace';

export function keyOf(obj: KubeObject): string {
  const m = obj.metadata ?? {};
  const name = m.name ?? '';
  return m.namespace ? `${m.namespace}/${name}` : name;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export const namespaceIndexFunc: IndexFunc = (obj) => (obj.metadata?.namespace ? [obj.metadata.namespace] : []);

export class Indexer {
  private readonly items = new Map<string, KubeObject>();
  private readonly funcs = new Map<string, IndexFunc>([[NAMESPACE_INDEX, namespaceIndexFunc]]);
  private readonly indices = new Map<string, Map<string, Set<string>>>([[NAMESPACE_INDEX, new Map()]]);

  /** Adds index functions; existing objects are indexed at once. */
  addIndexers(funcs: Record<string, IndexFunc>): void {
    for (const [name, f] of Object.entries(funcs)) {
      if (this.funcs.has(name)) throw new Error(`indexer "${name}" already exists`);
      this.funcs.set(name, f);
      this.indices.set(name, new Map());
      for (const [key, obj] of this.items) this.indexOne(name, f, key, obj);
    }
  }

  private indexOne(name: string, f: IndexFunc, key: string, obj: KubeObject): void {
    const idx = this.indices.get(name) as Map<string, Set<string>>;
    for (const v of f(obj)) {
      let set = idx.get(v);
      if (!set) idx.set(v, set = new Set());
      set.add(key);
    }
  }

  private unindexOne(name: string, f: IndexFunc, key: string, obj: KubeObject): void {
    const idx = this.indices.get(name) as Map<string, Set<string>>;
    for (const v of f(obj)) {
      const set = idx.get(v);
      if (!set) continue;
      set.delete(key);
      if (set.size === 0) idx.delete(v);
    }
  }

  /** Stores (adds or replaces) an object; returns the previous one. */
  set(obj: KubeObject): KubeObject | undefined {
    const key = keyOf(obj);
    const old = this.items.get(key);
    for (const [name, f] of this.funcs) {
      if (old) this.unindexOne(name, f, key, old);
      this.indexOne(name, f, key, obj);
    }
    this.items.set(key, obj);
    return old;
  }

  /** Removes by key; returns the removed object. */
  deleteKey(key: string): KubeObject | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    for (const [name, f] of this.funcs) this.unindexOne(name, f, key, old);
    this.items.delete(key);
    return old;
  }

  getByKey(key: string): KubeObject | undefined { return this.items.get(key); }
  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }
  has(key: string): boolean { return this.items.has(key); }
  get size(): number { return this.items.size; }
  keys(): string[] { return [...this.items.keys()]; }
  list(): KubeObject[] { return [...this.items.values()]; }

  /** Objects whose index function `indexName` yields `value`. */
  byIndex(indexName: string, value: string): KubeObject[] {
    const idx = this.indices.get(indexName);
    if (!idx) throw new Error(`index "${indexName}" does not exist`);
    return [...(idx.get(value) ?? [])].map((k) => this.items.get(k) as KubeObject);
  }

  indexKeys(indexName: string, value: string): string[] {
    const idx = this.indices.get(indexName);
    if (!idx) throw new Error(`index "${indexName}" does not exist`);
    return [...(idx.get(value) ?? [])];
  }

  /** Objects in a namespace (all objects when namespace is undefined). */
  listNamespace(namespace?: string): KubeObject[] {
    return namespace === undefined ? this.list() : this.byIndex(NAMESPACE_INDEX, namespace);
  }
}
