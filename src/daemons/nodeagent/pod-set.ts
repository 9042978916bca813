/**
 * The merged desired pod set: each source (api, file, http, server) replaces or edits its own
 * part; the union, keyed by pod uid, is what the agent runs. Listeners hear about every pod
 * whose object changed (added, updated) or that left every source (removed).
 * Contract: synchronous; listeners are called in order, after the set is updated, and must
 * not throw (they only hand work to pod workers).
 */
import { podUid, type Pod } from './pod-types.js';

export type PodSource = 'api' | 'file' | 'http' | 'server';

export interface PodSetListener {
  (change: { type: 'upsert'; pod: Pod } | { type: 'remove'; uid: string; last: Pod }): void;
}

export class PodSet {
  private readonly bySource = new Map<PodSource, Map<string, Pod>>();
  private readonly listeners: PodSetListener[] = [];
  private readonly sourcesSeen = new Set<PodSource>();

  onChange(l: PodSetListener): void { this.listeners.push(l); }

  /** True once the source delivered its first full set. */
  sourceReady(s: PodSource): boolean { return this.sourcesSeen.has(s); }

  private part(s: PodSource): Map<string, Pod> {
    let m = this.bySource.get(s);
    if (!m) this.bySource.set(s, m = new Map());
    return m;
  }

  get(uid: string): Pod | undefined {
    for (const m of this.bySource.values()) {
      const p = m.get(uid);
      if (p) return p;
    }
    return undefined;
  }

  all(): Pod[] {
    const out = new Map<string, Pod>();
    for (const m of this.bySource.values()) for (const [uid, p] of m) out.set(uid, p);
    return [...out.values()];
  }

  list(s: PodSource): Pod[] { return [...this.part(s).values()]; }

  private emitUpsert(pod: Pod): void { for (const l of this.listeners) l({ type: 'upsert', pod }); }
  private emitRemove(uid: string, last: Pod): void {
    if (this.get(uid)) return; // still wanted by another source
    for (const l of this.listeners) l({ type: 'remove', uid, last });
  }

  /** Replaces the whole part of one source; unchanged objects (same JSON) are not re-announced. */
  replace(s: PodSource, pods: readonly Pod[]): void {
    this.sourcesSeen.add(s);
    const part = this.part(s);
    const fresh = new Map(pods.map((p) => [podUid(p), p]));
    for (const [uid, old] of [...part]) {
      if (fresh.has(uid)) continue;
      part.delete(uid);
      this.emitRemove(uid, old);
    }
    for (const [uid, p] of fresh) {
      const old = part.get(uid);
      if (old && (old === p || JSON.stringify(old) === JSON.stringify(p))) continue;
      part.set(uid, p);
      this.emitUpsert(p);
    }
  }

  upsert(s: PodSource, pod: Pod): void {
    this.part(s).set(podUid(pod), pod);
    this.emitUpsert(pod);
  }

  remove(s: PodSource, uid: string): boolean {
    const part = this.part(s);
    const old = part.get(uid);
    if (!old) return false;
    part.delete(uid);
    this.emitRemove(uid, old);
    return true;
  }
}
