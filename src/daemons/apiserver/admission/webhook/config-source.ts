/**
 * The current webhook configurations (admissionregistration.k8s.io/v1
 * MutatingWebhookConfiguration or ValidatingWebhookConfiguration), kept from a list and a watch
 * on the object store, so a write never lists them (Kubernetes' plugins read an informer).
 *
 * Contract: `webhooks` is the flattened list Kubernetes calls in order: configurations sorted
 * by name, each one's webhooks in their listed order, compiled once per change. It is replaced
 * (never changed in place) on every change, and `generation` counts the changes, so callers may
 * cache what they derive from one generation. Until the first list has been read `synced` is
 * false and `ready` settles when it is. The watch is resumed after an error (backoff 1 s doubling
 * to 30 s) and ends when the store is closed. One source per store and resource.
 */
import type { Logger } from 'pino';
import { pino } from 'pino';
import type { KubeObject } from '../../../../api/resources/types.js';
import { isStorageError } from '../../../../storage/errors.js';
import type { ObjectStore } from '../../../../storage/object-store-types.js';
import { compileWebhook, type Webhook, type WebhookFlavor } from './webhook.js';

const GROUP = 'admissionregistration.k8s.io';
export const CONFIG_RESOURCE: Readonly<Record<WebhookFlavor, string>> = {
  mutating: 'mutatingwebhookconfigurations',
  validating: 'validatingwebhookconfigurations',
};
const MAX_BACKOFF_MS = 30_000;

export class WebhookConfigSource {
  webhooks: readonly Webhook[] = [];
  generation = 0;
  synced = false;
  readonly ready: Promise<void>;
  private readonly configs = new Map<string, KubeObject>();
  private markReady!: () => void;
  private stopped = false;

  constructor(private readonly store: ObjectStore, readonly flavor: WebhookFlavor, private readonly log: Logger) {
    this.ready = new Promise((resolve) => { this.markReady = resolve; });
    void this.run();
  }

  /** Whether the configuration `name` is known at `resourceVersion` or later (tests wait on it). */
  has(name: string, resourceVersion?: string): boolean {
    const c = this.configs.get(name);
    if (!c) return false;
    return resourceVersion === undefined || Number(c.metadata?.resourceVersion ?? 0) >= Number(resourceVersion);
  }

  private get resource(): string {
    return CONFIG_RESOURCE[this.flavor];
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
        // Ended at once (falling behind before anything came, or the store closing): not in a tight loop.
        await new Promise((r) => setTimeout(r, backoff).unref());
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      } catch (e) {
        if (this.storeClosed(e)) return;
        this.log.warn({ err: e, resource: this.resource }, 'watching webhook configurations failed; listing again');
        rv = undefined;
        await new Promise((r) => setTimeout(r, backoff).unref());
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** The store's own "closed" answer ends the source; any other failure is retried. */
  private storeClosed(e: unknown): boolean {
    if (isStorageError(e, 'Unavailable') && /store is closed|cache is closed/.test(e.message)) this.stopped = true;
    return this.stopped;
  }

  /** Lists every configuration and replaces what is known; the list's resourceVersion. */
  private async relist(): Promise<string> {
    const { items, resourceVersion } = await this.store.list({ resource: this.resource, group: GROUP, namespace: '' });
    this.configs.clear();
    for (const c of items) this.configs.set(c.metadata?.name ?? '', c);
    this.recompile();
    if (!this.synced) { this.synced = true; this.markReady(); }
    return resourceVersion;
  }

  /**
   * Follows changes after `rv` until the watch ends: where to resume (undefined: list again, after
   * an ERROR event such as 410 Expired) and how many events came.
   */
  private async watch(rv: string): Promise<{ rv: string | undefined; events: number }> {
    const w = this.store.watch({ resource: this.resource, group: GROUP, namespace: '', resourceVersion: rv });
    let events = 0;
    for await (const ev of w) {
      events++;
      if (ev.type === 'ERROR') return { rv: undefined, events };
      rv = ev.object.metadata?.resourceVersion ?? rv;
      if (ev.type === 'BOOKMARK') continue;
      const name = ev.object.metadata?.name ?? '';
      if (ev.type === 'DELETED') this.configs.delete(name); else this.configs.set(name, ev.object);
      this.recompile();
    }
    return { rv, events };
  }

  private recompile(): void {
    const names = [...this.configs.keys()].sort();
    const out: Webhook[] = [];
    for (const name of names) {
      const hooks = this.configs.get(name)!.webhooks;
      if (!Array.isArray(hooks)) continue;
      hooks.forEach((h, i) => {
        if (typeof h === 'object' && h !== null) out.push(compileWebhook(h as Record<string, unknown>, name, i, this.flavor));
      });
    }
    this.webhooks = out;
    this.generation++;
  }
}

const sources = new WeakMap<ObjectStore, Map<WebhookFlavor, WebhookConfigSource>>();

/** The store's source for one flavor, started on first use. */
export function webhookConfigSource(store: ObjectStore, flavor: WebhookFlavor, log?: Logger): WebhookConfigSource {
  let byFlavor = sources.get(store);
  if (!byFlavor) sources.set(store, byFlavor = new Map());
  let s = byFlavor.get(flavor);
  if (!s) byFlavor.set(flavor, s = new WebhookConfigSource(store, flavor, log ?? pino({ level: 'silent' })));
  return s;
}
