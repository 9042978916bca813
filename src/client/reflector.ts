/**
 * Reflector: keeps a sink in step with the server by list + watch.
 *
 *  1. List (first page with resourceVersion=0, served from the server's cache, or on a relist
 *     the last version seen; then `continue` pages), hand the whole set to `sink.replace` with
 *     the list's resourceVersion.
 *  2. Watch from that resourceVersion with bookmarks; each event goes to `sink.apply`, the
 *     last seen resourceVersion advances with events and bookmarks.
 *  3. A watch that ends normally is reopened from the last resourceVersion. A 410 (Gone /
 *     Expired, at open or as an ERROR event) means the version was compacted: relist at once.
 *     Other failures back off (800 ms doubling to 30 s, with jitter; reset after 2 minutes
 *     of health) and relist.
 *
 * Contract: `replace` comes before any `apply`; events are applied in server order; the sink is
 * never called concurrently; after `run` returns (signal aborted) the sink is not called again.
 */
import { pino, type Logger } from 'pino';
import { isApiError, type Status } from '../api/meta/status.js';
import type { KubeObject } from '../api/resources/types.js';
import { findResource } from '../api/resources/registry.js';
import { realClock, type Clock } from './clock.js';
import type { KubeList, ListOptions, ResourceRef, RestClient } from './rest-client.js';
import type { WatchEvent } from './watch-stream.js';

export interface ReflectorSink {
  replace(items: KubeObject[], resourceVersion: string): void;
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): void;
}

/** What a reflector lists and watches; the client is abstract so tests can fake a server. */
export interface ListerWatcher {
  list(opts: ListOptions): Promise<KubeList>;
  watch(opts: ListOptions): Promise<AsyncIterable<WatchEvent>>;
}

export function listerWatcherFor(client: RestClient, ref: ResourceRef, selectors: { labelSelector?: string; fieldSelector?: string } = {}): ListerWatcher {
  return {
    list: (o) => client.list(ref, { ...selectors, ...o }),
    watch: (o) => client.watch(ref, { ...selectors, ...o }),
  };
}

export interface ReflectorOptions {
  lw: ListerWatcher;
  sink: ReflectorSink;
  /** Group/version/resource, to fill apiVersion/kind on list items (the server omits them). */
  ref?: ResourceRef;
  /** @default 500 */
  pageSize?: number;
  clock?: Clock;
  log?: Logger;
  /** Backoff bounds (ms). @default 800 and 30000 */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Server-side watch timeout range (s): each watch asks for a random value in [min, 2*min). @default 300 */
  minWatchTimeoutSeconds?: number;
}

class RelistNeeded extends Error {}
/** An ERROR event other than 410: the server refused the watch; back off and relist. */
class WatchErrorEvent extends Error {}

function isGone(e: unknown): boolean {
  return isApiError(e) && e.code === 410;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

export class Reflector {
  private readonly o: ReflectorOptions;
  private readonly clock: Clock;
  private readonly log: Logger;
  private lastRv = '';
  private backoffMs = 0;
  private healthySince = 0;
  /** Lists done so far (tests observe relists). */
  listCount = 0;

  constructor(o: ReflectorOptions) {
    this.o = o;
    this.clock = o.clock ?? realClock;
    this.log = o.log ?? pino({ level: 'silent' });
  }

  get lastSyncResourceVersion(): string { return this.lastRv; }

  /** Runs until the signal aborts; never throws for server or network failures. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.listAndWatch(signal);
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof RelistNeeded) { this.log.debug({ rv: this.lastRv }, 'resource version expired: relisting'); continue; }
        const wait = this.nextBackoff();
        this.log.warn({ err: (e as Error).message, waitMs: Math.round(wait) }, 'list/watch failed; retrying');
        try { await this.clock.sleep(wait, signal); } catch { break; }
      }
    }
  }

  private nextBackoff(): number {
    const init = this.o.backoffInitialMs ?? 800;
    const max = this.o.backoffMaxMs ?? 30_000;
    if (this.healthySince && this.clock.now() - this.healthySince > 120_000) this.backoffMs = 0;
    this.backoffMs = this.backoffMs ? Math.min(this.backoffMs * 2, max) : init;
    this.healthySince = 0;
    return this.backoffMs * (1 + Math.random());
  }

  private typed(items: KubeObject[], listKind: string | undefined, listApiVersion: string | undefined): KubeObject[] {
    let apiVersion = listApiVersion;
    let kind = listKind?.endsWith('List') ? listKind.slice(0, -4) : undefined;
    const ref = this.o.ref;
    if (ref) {
      apiVersion ??= ref.group ? `${ref.group}/${ref.version}` : ref.version;
      kind ??= findResource(ref.group, ref.version, ref.resource)?.kind;
    }
    if (!apiVersion || !kind) return items;
    return items.map((i) => (i.apiVersion && i.kind ? i : { ...i, apiVersion, kind }));
  }

  private async list(signal: AbortSignal): Promise<void> {
    const limit = this.o.pageSize ?? 500;
    // The first list may be served from the server's cache (rv=0); a relist asks for a state
    // not older than the one we have, so that the cache never goes back in time. If that
    // version is gone too, a consistent (quorum) list.
    let rv: string | undefined = this.lastRv === '' ? '0' : this.lastRv;
    for (;;) {
      const items: KubeObject[] = [];
      let cont: string | undefined;
      let listRv = '';
      try {
        do {
          const page: KubeList = await this.o.lw.list({ limit, ...(cont ? { continue: cont } : { resourceVersion: rv }), signal });
          items.push(...this.typed(page.items ?? [], page.kind, page.apiVersion));
          cont = page.metadata?.continue || undefined;
          listRv = page.metadata?.resourceVersion ?? listRv;
        } while (cont);
      } catch (e) {
        // An expired continue token or a too-old version: list again, consistently.
        if (isGone(e) && rv !== undefined) { rv = undefined; continue; }
        throw e;
      }
      if (signal.aborted) throw abortError(signal);
      this.listCount++;
      this.o.sink.replace(items, listRv);
      this.lastRv = listRv;
      return;
    }
  }

  private async listAndWatch(signal: AbortSignal): Promise<void> {
    await this.list(signal);
    for (;;) {
      if (signal.aborted) return;
      const min = this.o.minWatchTimeoutSeconds ?? 300;
      let stream: AsyncIterable<WatchEvent>;
      try {
        stream = await this.o.lw.watch({ resourceVersion: this.lastRv, allowWatchBookmarks: true, timeoutSeconds: Math.floor(min * (1 + Math.random())), signal });
      } catch (e) {
        if (isGone(e)) throw new RelistNeeded();
        throw e;
      }
      if (!this.healthySince) this.healthySince = this.clock.now();
      try {
        await this.consume(stream, signal);
      } catch (e) {
        if (e instanceof RelistNeeded || signal.aborted || e instanceof WatchErrorEvent) throw e;
        // The connection broke mid-watch (the API server died, or the client moved to another
        // server): resume from the last version seen, on whichever server answers now; the
        // server's watch cache replays what came after it, so nothing is missed or repeated.
        this.log.info({ err: (e as Error).message, rv: this.lastRv }, 'watch broke; resuming from the last resourceVersion');
        await this.clock.sleep(100 + Math.random() * 400, signal);
        continue;
      }
      // The server closed the watch (its timeout): reopen from where we are.
    }
  }

  private async consume(stream: AsyncIterable<WatchEvent>, signal: AbortSignal): Promise<void> {
    for await (const ev of stream) {
      if (signal.aborted) return;
      const rv = ev.object?.metadata?.resourceVersion;
      switch (ev.type) {
        case 'ADDED': case 'MODIFIED': case 'DELETED':
          this.o.sink.apply(ev.type, this.typed([ev.object], undefined, undefined)[0]);
          if (rv) this.lastRv = rv;
          break;
        case 'BOOKMARK':
          if (rv) this.lastRv = rv;
          break;
        case 'ERROR': {
          const st = ev.object as unknown as Status;
          if (st.code === 410) throw new RelistNeeded();
          throw new WatchErrorEvent(`watch error: ${st.message ?? JSON.stringify(st)}`);
        }
        default:
          this.log.warn({ type: ev.type }, 'ignoring a watch event of unknown type');
      }
    }
  }
}
