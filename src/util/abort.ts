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
