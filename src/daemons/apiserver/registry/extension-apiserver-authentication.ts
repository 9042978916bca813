/**
 * Publishes how this API server authenticates, for extension API servers, as Kubernetes'
 * ClientCARegistrationHook: the ConfigMap kube-system/extension-apiserver-authentication with
 * `client-ca-file` (PEM) when --client-ca-file is set and, with --requestheader-client-ca-file,
 * `requestheader-client-ca-file` (PEM) and `requestheader-username-headers`, `-group-headers`,
 * `-extra-headers-prefix`, `-allowed-names` as JSON arrays (`null` when unset, as Go marshals an
 * unset list). Written at start and kept current: a change or deletion by anyone else is undone
 * (on the watch event, and at every resync as a backstop).
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import { configmaps } from '../../../api/resources/core/configmaps.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { ObjectStore } from '../../../storage/object-store-types.js';
import type { PublishedAuthentication } from '../authn-options.js';
import type { ResourceRegistry } from './resource-registry.js';

export const AUTHENTICATION_CONFIGMAP = 'extension-apiserver-authentication';
const NAMESPACE = 'kube-system';

export interface AuthenticationInfoOptions {
  registry: ResourceRegistry;
  store: ObjectStore;
  published: PublishedAuthentication;
  log: Logger;
  /** Backstop resync period (default 60 s). */
  resyncMs?: number;
}

const jsonList = (l: readonly string[]): string => JSON.stringify(l.length ? l : null);

/** The ConfigMap's data; undefined when there is nothing to publish. */
export function authenticationConfigMapData(p: PublishedAuthentication): Record<string, string> | undefined {
  if (!p.clientCaPem && !p.requestHeader) return undefined;
  const data: Record<string, string> = {};
  if (p.clientCaPem) data['client-ca-file'] = p.clientCaPem;
  const rh = p.requestHeader;
  if (rh) {
    data['requestheader-username-headers'] = jsonList(rh.config.usernameHeaders);
    data['requestheader-group-headers'] = jsonList(rh.config.groupHeaders);
    data['requestheader-extra-headers-prefix'] = jsonList(rh.config.extraHeaderPrefixes);
    data['requestheader-client-ca-file'] = rh.caPem;
    data['requestheader-allowed-names'] = jsonList(rh.config.allowedNames);
  }
  // In key order, as Go writes a map.
  return Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function sameData(a: unknown, b: Record<string, string>): boolean {
  if (typeof a !== 'object' || a === null) return false;
  const x = a as Record<string, unknown>;
  const keys = Object.keys(x);
  return keys.length === Object.keys(b).length && keys.every((k) => x[k] === b[k]);
}

export class AuthenticationInfoPublisher {
  private readonly data: Record<string, string> | undefined;
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly o: AuthenticationInfoOptions) {
    this.data = authenticationConfigMapData(o.published);
  }

  async start(): Promise<void> {
    if (!this.data) return;
    await this.reconcile();
    this.timer = setInterval(() => this.kick(), this.o.resyncMs ?? 60_000);
    this.timer.unref();
    void this.watchLoop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Makes the stored ConfigMap carry our data (created when missing). */
  async reconcile(): Promise<void> {
    const data = this.data;
    if (!data) return;
    let cur: KubeObject | undefined;
    try {
      cur = await this.o.registry.get(configmaps, NAMESPACE, AUTHENTICATION_CONFIGMAP);
    } catch (e) {
      if (!isApiError(e, 'NotFound')) throw e;
    }
    if (!cur) {
      try {
        await this.o.registry.create(configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: AUTHENTICATION_CONFIGMAP, namespace: NAMESPACE }, data: { ...data } }, { internal: true });
        return;
      } catch (e) {
        if (!isApiError(e, 'AlreadyExists')) throw e;
      }
    }
    if (cur && sameData((cur as { data?: unknown }).data, data)) return;
    await this.o.registry.update(configmaps, NAMESPACE, AUTHENTICATION_CONFIGMAP, (c) => ({ ...(c ?? {}), data: { ...data } }) as KubeObject, { internal: true });
    this.o.log.info('extension-apiserver-authentication ConfigMap restored');
  }

  /** Runs a reconcile now, or once more after the running one. */
  private kick(): void {
    if (this.abort.signal.aborted) return;
    if (this.running) { this.again = true; return; }
    this.running = this.reconcile()
      .catch((e: unknown) => this.o.log.warn({ err: (e as Error).message }, 'writing the extension-apiserver-authentication ConfigMap failed'))
      .finally(() => {
        this.running = undefined;
        if (this.again) { this.again = false; this.kick(); }
      });
  }

  private async watchLoop(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        const w = this.o.store.watch({ resource: 'configmaps', group: '', namespace: NAMESPACE, name: AUTHENTICATION_CONFIGMAP, signal });
        for await (const ev of w) {
          if (ev.type === 'DELETED' || (ev.type === 'MODIFIED' && !sameData((ev.object as { data?: unknown }).data, this.data!))) this.kick();
        }
      } catch (e) {
        if (!signal.aborted) this.o.log.debug({ err: (e as Error).message }, 'authentication ConfigMap watch ended');
      }
      if (!signal.aborted) {
        await new Promise((r) => setTimeout(r, 1000).unref());
        this.kick(); // whatever happened while not watching
      }
    }
  }
}
