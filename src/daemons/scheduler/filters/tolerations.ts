/** Toleration matching, shared by the taint, unschedulable and readiness filters. */
import type { Taint, Toleration } from '../types.js';

/**
 * Whether one toleration tolerates one taint: the effects match (an empty toleration effect
 * matches all), the keys match (an empty key matches all; validation only allows it with
 * Exists), and the operator holds (Exists: any value; Equal or empty: same value).
 */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  const op = t.operator || 'Equal';
  if (op === 'Exists') return true;
  if (op === 'Equal') return (t.value ?? '') === (taint.value ?? '');
  return false;
}

export function tolerated(tolerations: readonly Toleration[] | undefined, taint: Taint): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}
