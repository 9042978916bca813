/**
 * List, then watch from the list's resourceVersion until `signal` aborts: every event but
 * bookmarks goes to `see`; a failed or ERROR-ended watch re-lists (through `relist`, which
 * returns the new resourceVersion) after a backoff of 100 ms doubling to 2 s. The benches use
 * this instead of an informer because they time each event's arrival themselves.
 */
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef, RestClient } from '../../src/client/rest-client.js';

export async function watchLoop(client: RestClient, ref: ResourceRef, relist: () => Promise<string>, see: (type: string, obj: KubeObject) => void, signal: AbortSignal): Promise<{ done: Promise<void> }> {
  let rv = await relist();
  const done = (async () => {
    let backoff = 100;
    while (!signal.aborted) {
      try {
        const events = await client.watch(ref, { resourceVersion: rv, allowWatchBookmarks: true, signal });
        for await (const ev of events) {
          const obj = ev.object as KubeObject;
          if (ev.type === 'ERROR') throw new Error(`watch error: ${JSON.stringify(obj).slice(0, 200)}`);
          if (obj.metadata?.resourceVersion) rv = obj.metadata.resourceVersion;
          if (ev.type !== 'BOOKMARK') see(ev.type, obj);
        }
        backoff = 100;
      } catch {
        if (signal.aborted) return;
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 2000);
        rv = await relist().catch(() => rv);
      }
    }
  })();
  return { done };
}
