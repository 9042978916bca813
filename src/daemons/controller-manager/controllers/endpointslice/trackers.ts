/**
 * Two pieces of bookkeeping the endpointslice controller keeps per service:
 *  - SliceTracker remembers the generation of every slice it wrote (and the slices it
 *    deleted), so that a sync never plans from an informer cache that has not yet seen the
 *    controller's own writes (that would create duplicate slices), and so that only changes
 *    made by someone else trigger a sync;
 *  - TriggerTimes computes the `endpoints.kubernetes.io/last-change-trigger-time` annotation:
 *    the service's creation time on its first sync, afterwards the earliest change (a pod's
 *    Ready transition, the service's creation) not seen by the previous sync.
 * Both are touched by one worker per service at a time (the work queue's guarantee).
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import { LABEL_SERVICE_NAME } from '../../../../api/resources/discovery/endpointslices.js';
import { readyCondition } from '../controller-utils.js';

const DELETION_EXPECTED = -1;

/** The key of the service a slice belongs to (namespace/name), from its service-name label. */
export function serviceKeyOf(slice: KubeObject): string | undefined {
  const name = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
  return name ? `${slice.metadata?.namespace ?? ''}/${name}` : undefined;
}

function generationOf(slice: KubeObject): number {
  return typeof slice.metadata?.generation === 'number' ? slice.metadata.generation : 0;
}

export class SliceTracker {
  /** service key → slice uid → generation written (or DELETION_EXPECTED). */
  private readonly byService = new Map<string, Map<string, number>>();

  private of(slice: KubeObject, create = false): Map<string, number> | undefined {
    const key = serviceKeyOf(slice);
    if (!key) return undefined;
    let m = this.byService.get(key);
    if (!m && create) this.byService.set(key, m = new Map());
    return m;
  }

  has(slice: KubeObject): boolean {
    return this.of(slice)?.has(slice.metadata?.uid ?? '') ?? false;
  }

  /** True for a slice this controller did not write at this generation (someone else changed it). */
  shouldSync(slice: KubeObject): boolean {
    const g = this.of(slice)?.get(slice.metadata?.uid ?? '');
    return g === undefined || generationOf(slice) > g;
  }

  /** Whether the cached slices of the service lag behind what this controller wrote. */
  stale(serviceKey: string, slices: readonly KubeObject[]): boolean {
    const written = this.byService.get(serviceKey);
    if (!written) return false;
    const seen = new Set<string>();
    for (const s of slices) {
      const uid = s.metadata?.uid ?? '';
      seen.add(uid);
      const g = written.get(uid);
      if (g !== undefined && (g === DELETION_EXPECTED || g > generationOf(s))) return true;
    }
    for (const [uid, g] of written) if (g !== DELETION_EXPECTED && !seen.has(uid)) return true;
    return false;
  }

  written(slice: KubeObject): void { this.of(slice, true)?.set(slice.metadata?.uid ?? '', generationOf(slice)); }
  expectDeletion(slice: KubeObject): void { this.of(slice, true)?.set(slice.metadata?.uid ?? '', DELETION_EXPECTED); }

  /** Forgets a deleted slice; false when the deletion was not this controller's. */
  handleDeletion(slice: KubeObject): boolean {
    const m = this.of(slice), uid = slice.metadata?.uid ?? '';
    const g = m?.get(uid);
    m?.delete(uid);
    return g === undefined || g === DELETION_EXPECTED;
  }

  deleteService(serviceKey: string): void { this.byService.delete(serviceKey); }
}

function time(ts: unknown): number {
  const t = typeof ts === 'string' ? Date.parse(ts) : NaN;
  return Number.isNaN(t) ? 0 : t;
}

export class TriggerTimes {
  private readonly states = new Map<string, { service: number; pods: Map<string, number> }>();

  /** The trigger time (ms since the epoch) to publish for this sync; 0 for none. */
  compute(serviceKey: string, svc: KubeObject, pods: readonly KubeObject[]): number {
    const prev = this.states.get(serviceKey);
    let min = 0;
    const earlier = (t: number): void => { if (min === 0 || t < min) min = t; };
    const podTimes = new Map<string, number>();
    for (const pod of pods) {
      const t = time(readyCondition(pod)?.lastTransitionTime);
      if (!t) continue;
      const name = pod.metadata?.name ?? '';
      podTimes.set(name, t);
      if (t > (prev?.pods.get(name) ?? 0)) earlier(t);
    }
    const svcTime = time(svc.metadata?.creationTimestamp);
    if (svcTime > (prev?.service ?? 0)) earlier(svcTime);
    this.states.set(serviceKey, { service: svcTime, pods: podTimes });
    return prev ? min : svcTime;
  }

  deleteService(serviceKey: string): void { this.states.delete(serviceKey); }
}

/** Go's RFC3339Nano in UTC: fractional seconds without trailing zeros. */
export function formatTriggerTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.?0+Z$/, 'Z');
}
