/**
 * Runs `fn` with a signal of its own that aborts when `outer` does. Daemons hand one signal to
 * every request, watch and server they start, so its listener limit is lifted (Node warns past
 * ten listeners otherwise); the link to `outer` is removed when `fn` ends.
 */
import { setMaxListeners } from 'node:events';

export async function withOwnSignal<T>(outer: AbortSignal, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const own = new AbortController();
  setMaxListeners(0, own.signal);
  const onStop = (): void => own.abort(outer.reason);
  if (outer.aborted) onStop(); else outer.addEventListener('abort', onStop, { once: true });
  try {
    return await fn(own.signal);
  } finally {
    outer.removeEventListener('abort', onStop);
  }
}

/**
 * Resolves after `ms`, or as soon as `signal` aborts (at once when it already has); never
 * rejects. The loops' wait between passes: a loop stopped during a pass must not wait a period.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || ms <= 0) { resolve(); return; }
    const t = setTimeout(done, ms);
    function done(): void { clearTimeout(t); signal.removeEventListener('abort', done); resolve(); }
    signal.addEventListener('abort', done, { once: true });
  });
}
