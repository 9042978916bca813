/**
 * The in-process load loop the storage benches share: `inFlight` concurrent loops, each starting
 * its next operation as soon as the previous one completes, until `ms` have passed (or `maxOps`
 * operations were started). Latency per operation in milliseconds, in completion order.
 */
export interface LoopResult {
  ops: number;
  seconds: number;
  lat: number[];
}

export async function closedLoop(inFlight: number, op: (i: number) => Promise<unknown>, o: { ms: number; maxOps?: number }): Promise<LoopResult> {
  const lat: number[] = [];
  const max = o.maxOps ?? Number.POSITIVE_INFINITY;
  let next = 0;
  const start = performance.now();
  const deadline = start + o.ms;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    for (let i = next++; i < max && performance.now() < deadline; i = next++) {
      const t0 = performance.now();
      await op(i);
      lat.push(performance.now() - t0);
    }
  }));
  return { ops: lat.length, seconds: (performance.now() - start) / 1000, lat };
}

/**
 * The q-th quantile (0..1) of ascending `sorted` by nearest rank: the smallest sample with at
 * least q of the samples at or below it (the 0.99 quantile of 100 samples is the 99th, not the
 * largest). NaN when empty.
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** The p-th percentile (0–100) of ascending `sorted` (quantile's nearest rank). */
export function pct(sorted: ArrayLike<number>, p: number): number {
  return quantile(sorted, p / 100);
}
