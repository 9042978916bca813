/** Kubernetes' metav1.Time form: RFC 3339 in UTC, whole seconds ("2026-01-02T03:04:05Z"). */
export function metaTime(ms: number = Date.now()): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

let lastMs = -1;
let lastTime = '';
let lastSecond = Number.NaN;
/** `2006-01-02T15:04:05` of lastSecond. */
let secondText = '';
/** `.000000Z` to `.999000Z`: a millisecond's fraction as MicroTime writes it. */
const FRACTIONS = Array.from({ length: 1000 }, (_, i) => `.${String(i).padStart(3, '0')}000Z`);

/**
 * Kubernetes' MicroTime: RFC 3339 with six fraction digits, UTC. The date and time of day are
 * formatted once per second (Date's toISOString is a formatted print, dear per call), the
 * fraction taken from a table; the text of the last millisecond is kept.
 */
export function microTime(at: number = Date.now()): string {
  // Whole milliseconds, as toISOString writes a fractional time.
  const ms = Math.floor(at);
  if (ms !== lastMs) {
    lastMs = ms;
    const second = Math.floor(ms / 1000);
    if (second !== lastSecond) {
      lastSecond = second;
      secondText = new Date(second * 1000).toISOString().slice(0, 19);
    }
    lastTime = secondText + FRACTIONS[ms - second * 1000]!;
  }
  return lastTime;
}
