/** Kubernetes' metav1.Time form: RFC 3339 in UTC, whole seconds ("2026-01-02T03:04:05Z"). */
export function metaTime(ms: number = Date.now()): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
