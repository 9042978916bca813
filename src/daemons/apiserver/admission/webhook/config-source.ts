/**
 * The current webhooks of one flavor, compiled from the MutatingWebhookConfiguration or
 * ValidatingWebhookConfiguration objects that the store's mirror keeps (src/storage/store-mirror.ts),
 * so a write never lists them (Kubernetes' plugins read an informer).
 *
 * Contract: `webhooks` is the flattened list Kubernetes calls in order: configurations sorted
 * by name, each one's webhooks in their listed order, compiled once per change. It is replaced
 * (never changed in place) on every change, and `generation` is the mirror's change count, so
 * callers may cache what they derive from one generation. Until the first list has been read
 * `synced` is false and `ready` settles when it is. One source per store and flavor.
 */
import type { Logger } from 'pino';
import { storeMirror, type StoreMirror } from '../../../../storage/store-mirror.js';
import type { ObjectStore } from '../../../../storage/object-store-types.js';
import { compileWebhook, type Webhook, type WebhookFlavor } from './webhook.js';

const GROUP = 'admissionregistration.k8s.io';
const CONFIG_RESOURCE: Readonly<Record<WebhookFlavor, string>> = {
  mutating: 'mutatingwebhookconfigurations',
  validating: 'validatingwebhookconfigurations',
};

export class WebhookConfigSource {
  webhooks: readonly Webhook[] = [];
  private readonly mirror: StoreMirror;

  constructor(store: ObjectStore, readonly flavor: WebhookFlavor, log?: Logger) {
    this.mirror = storeMirror(store, GROUP, CONFIG_RESOURCE[flavor], log);
    this.mirror.onChange(() => this.recompile());
  }

  get synced(): boolean { return this.mirror.synced; }
  get ready(): Promise<void> { return this.mirror.ready; }
  get generation(): number { return this.mirror.generation; }

  /** Whether the configuration `name` is known at `resourceVersion` or later (tests wait on it). */
  has(name: string, resourceVersion?: string): boolean {
    return this.mirror.has(name, resourceVersion);
  }

  private recompile(): void {
    const configs = this.mirror.objects;
    const out: Webhook[] = [];
    for (const name of [...configs.keys()].sort()) {
      const hooks = configs.get(name)!.webhooks;
      if (!Array.isArray(hooks)) continue;
      hooks.forEach((h, i) => {
        if (typeof h === 'object' && h !== null) out.push(compileWebhook(h as Record<string, unknown>, name, i, this.flavor));
      });
    }
    this.webhooks = out;
  }
}

const sources = new WeakMap<ObjectStore, Map<WebhookFlavor, WebhookConfigSource>>();

/** The store's source for one flavor, started on first use. */
export function webhookConfigSource(store: ObjectStore, flavor: WebhookFlavor, log?: Logger): WebhookConfigSource {
  let byFlavor = sources.get(store);
  if (!byFlavor) sources.set(store, byFlavor = new Map());
  let s = byFlavor.get(flavor);
  if (!s) byFlavor.set(flavor, s = new WebhookConfigSource(store, flavor, log));
  return s;
}
