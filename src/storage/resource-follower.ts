/**
 * Follows one resource of the object store (every namespace, or one) and hands each change to a
 * handler, as an informer's event handlers: `replace` with every object after a (re)list,
 * then `upsert` and `remove` per event. The watch resumes after an error (backoff 1 s doubling
 * to 30 s; a 410 lists again; a watch that ends at once waits too, so no tight loop) and ends
 * when the store is closed or `stop` is called. `ready` settles after the first list has been
 * handed over. The loop under StoreMirror and the node authorizer's graph.
 */
import type { Logger } from 'pino';
import type { KubeObject } from '../api/resources/types.js';
import { isStorageError } from './errors.js';
import type { ObjectStore, ObjectWatch } from './object-store-types.js';

const MAX_BACKOFF_MS = 30_000;

export interface FollowHandler {
  replace(items: readonly KubeObject[]): void;
  upsert(obj: KubeObject, old: KubeObject | undefined): void;
  remove(obj: KubeObject): void;
}

export class ResourceFollower {
  readonly ready: Promise<void>;
  private markReady!: () => void;
  private stopped = false;
  private current: ObjectWatch | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly store: ObjectStore, readonly group: string, readonly resource: string,
    private readonly handler: FollowHandler, private readonly log: Logger, readonly namespace = '') {
    this.ready = new Promise((resolve) => { this.markReady = resolve; });
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.current?.close();
    this.wake?.();
  }

  private async pause(ms: number): Promise<void> {
    await new Promise<void>((r) => { this.wake = r; setTimeout(r, ms).unref(); });
    this.wake = undefined;
  }

  private async run(): Promise<void> {
    let backoff = 1000;
    let rv: string | undefined;
    while (!this.stopped) {
      try {
        rv ??= await this.relist();
        const ended = await this.watch(rv);
        rv = ended.rv;
        if (ended.events > 0) { backoff = 1000; continue; }
        await this.pause(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      } catch (e) {
        if (isStorageError(e, 'Unavailable') && /store is closed|cache is closed/.test(e.message)) return;
        if (this.stopped) return;
        this.log.warn({ err: e, group: this.group, resource: this.resource }, 'watching failed; listing again');
        rv = undefined;
        await this.pause(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  private async relist(): Promise<string> {
    const { items, resourceVersion } = await this.store.list({ resource: this.resource, group: this.group, namespace: this.namespace });
    this.handler.replace(items);
    this.markReady();
    return resourceVersion;
  }

  private async watch(rv: string): Promise<{ rv: string | undefined; events: number }> {
    const w = this.current = this.store.watch({ resource: this.resource, group: this.group, namespace: this.namespace, resourceVersion: rv });
    let events = 0;
    try {
      for await (const ev of w) {
        events++;
        if (ev.type === 'ERROR') return { rv: undefined, events };
        rv = ev.object.metadata?.resourceVersion ?? rv;
        if (ev.type === 'BOOKMARK') continue;
        if (ev.type === 'DELETED') this.handler.remove(ev.object);
        else this.handler.upsert(ev.object, ev.prevObject);
      }
    } finally {
      this.current = undefined;
    }
    return { rv, events };
  }
}
