/**
 * Mirror pods: every static pod (from a file, a URL or the agent's endpoint) is reflected in
 * the API server as a pod of the same namespace and name carrying the annotation
 * kubernetes.io/config.mirror = the static pod's hash, owned by the Node. A mirror pod that is
 * missing, stale (other hash) or being deleted is (re)created; a mirror pod without a static
 * pod is deleted. Status of a static pod is written to its mirror pod.
 * Contract: `reconcile` is idempotent and never throws (failures are logged; the next call
 * retries); calls must not overlap (the caller serializes them).
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { SharedIndexInformer } from '../../client/informer.js';
import type { RestClient } from '../../client/rest-client.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION, isMirrorPod, type Pod } from './pod-types.js';

export interface MirrorPodOptions {
  readonly client: RestClient;
  readonly informer: SharedIndexInformer;
  readonly nodeName: string;
  readonly nodeUid: () => string;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

export function mirrorPodFor(staticPod: Pod, nodeName: string, nodeUid: string): Pod {
  const m = staticPod.metadata ?? {};
  const hash = m.annotations?.[CONFIG_HASH_ANNOTATION] ?? m.uid ?? '';
  const copy = structuredClone(staticPod);
  delete copy.status;
  copy.metadata = {
    name: m.name, namespace: m.namespace, ...(m.labels ? { labels: { ...m.labels } } : {}),
    annotations: { ...(m.annotations ?? {}), [CONFIG_MIRROR_ANNOTATION]: hash },
    ...(nodeUid ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUid, controller: true }] } : {}),
  };
  return copy;
}

export class MirrorPods {
  created = 0;
  constructor(private readonly o: MirrorPodOptions) {}

  private opts(): { signal?: AbortSignal } { return this.o.signal ? { signal: this.o.signal } : {}; }

  private ref(ns: string): { group: string; version: string; resource: string; namespace: string } {
    return { group: '', version: 'v1', resource: 'pods', namespace: ns };
  }

  private cached(ns: string, name: string): Pod | undefined {
    return this.o.informer.indexer.list().find((p) => p.metadata?.namespace === ns && p.metadata?.name === name) as Pod | undefined;
  }

  async reconcile(staticPods: readonly Pod[]): Promise<void> {
    if (!this.o.informer.hasSynced()) return;
    const wanted = new Set<string>();
    for (const sp of staticPods) {
      const ns = sp.metadata?.namespace ?? 'default';
      const name = sp.metadata?.name ?? '';
      wanted.add(`${ns}/${name}`);
      const hash = sp.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
      const cur = this.cached(ns, name);
      try {
        if (cur && isMirrorPod(cur) && cur.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] === hash && !cur.metadata?.deletionTimestamp) continue;
        if (cur && !isMirrorPod(cur)) {
          this.o.log.warn({ pod: `${ns}/${name}` }, 'a regular pod has the name of a static pod; no mirror pod created');
          continue;
        }
        if (cur) {
          await this.o.client.delete(this.ref(ns), name, { gracePeriodSeconds: 0, preconditions: { uid: cur.metadata?.uid ?? '' }, ...this.opts() }).catch((e: unknown) => {
            if (!(isApiError(e) && (e.status.code === 404 || e.status.code === 409))) throw e;
          });
        }
        await this.o.client.create(this.ref(ns), mirrorPodFor(sp, this.o.nodeName, this.o.nodeUid()), this.opts());
        this.created++;
      } catch (e) {
        if (isApiError(e) && e.status.code === 409) continue; // the informer has not seen it yet
        this.o.log.warn({ pod: `${ns}/${name}`, err: (e as Error).message }, 'failed to create mirror pod');
      }
    }
    for (const p of this.o.informer.indexer.list() as Pod[]) {
      if (!isMirrorPod(p)) continue;
      const key = `${p.metadata?.namespace}/${p.metadata?.name}`;
      if (wanted.has(key) || p.metadata?.deletionTimestamp) continue;
      try {
        await this.o.client.delete(this.ref(p.metadata?.namespace ?? 'default'), p.metadata?.name ?? '', { gracePeriodSeconds: 0, preconditions: { uid: p.metadata?.uid ?? '' }, ...this.opts() });
      } catch (e) {
        if (!(isApiError(e) && (e.status.code === 404 || e.status.code === 409))) this.o.log.warn({ pod: key, err: (e as Error).message }, 'failed to delete mirror pod');
      }
    }
  }
}
