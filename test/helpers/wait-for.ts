/**
 * Polls `fn` until it returns something other than undefined/false, with backoff (20 ms doubling
 * to 250 ms); an error thrown by `fn` counts as "not yet" and is named if the deadline passes.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (let wait = 20; ; wait = Math.min(wait * 2, 250)) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, wait));
  }
}
