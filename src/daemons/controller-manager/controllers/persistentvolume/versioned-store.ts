/**
 * The binder's own view of volumes or claims: the newest version it has seen, from the
 * informer or from its own writes. Binding makes four writes (volume spec, volume status,
 * claim spec, claim status); without this view a sync running before the informer delivered
 * them would act on the old objects, try to bind again and fail on conflicts, or pick a volume
 * it has just given to another claim.
 *
 * Contract: `update` keeps the stored object when it is newer than the one offered (by
 * resourceVersion, compared as revisions); an equal version replaces it, so periodic resyncs
 * still run. Objects are never modified in place: callers pass fresh copies.
 */
import type { KubeObject } from '../../../../api/resources/types.js';

function revision(o: KubeObject): bigint | undefined {
  try { return BigInt(o.metadata?.resourceVersion ?? ''); } catch { return undefined; }
}

export class VersionedStore {
  private readonly items = new Map<string, KubeObject>();

  constructor(private readonly keyOf: (o: KubeObject) => string) {}

  get(key: string): KubeObject | undefined { return this.items.get(key); }
  list(): KubeObject[] { return [...this.items.values()]; }
  delete(key: string): void { this.items.delete(key); }

  /** Stores `obj` unless the stored version is newer; true when `obj` is now the stored one. */
  update(obj: KubeObject): boolean {
    const key = this.keyOf(obj);
    const old = this.items.get(key);
    if (old) {
      const a = revision(old); const b = revision(obj);
      if (a !== undefined && b !== undefined && a > b) return false;
    }
    this.items.set(key, obj);
    return true;
  }
}
