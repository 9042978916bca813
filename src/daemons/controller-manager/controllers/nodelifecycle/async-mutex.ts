/**
 * Runs async sections one at a time, in call order (the evictor lock: the monitor pass and
 * the eviction pass both change the zone queues across awaits).
 */
export class AsyncMutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn, fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
