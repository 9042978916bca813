/**
 * What pod workers read from and write to the API server: config maps and secrets (for env
 * and volumes), service-account tokens (TokenRequest), pod status (merge patch on the status
 * subresource) and the final pod deletion. Without an API server (standalone) every read
 * finds nothing and every write is skipped.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import type { ObjectReader } from './env.js';
import type { Pod } from './pod-types.js';

const core = (resource: string, namespace?: string): { group: string; version: string; resource: string; namespace?: string } =>
  ({ group: '', version: 'v1', resource, ...(namespace ? { namespace } : {}) });

function notFound(e: unknown): boolean {
  return isApiError(e) && e.status.code === 404;
}

export class ApiObjects implements ObjectReader {

  /** `signal` (the agent's lifetime) cancels calls still queued or retrying when the agent stops. */
  constructor(private readonly client: RestClient | undefined, private readonly log: Logger, private readonly signal?: AbortSignal) {}

  private get opts(): { signal?: AbortSignal } { return this.signal ? { signal: this.signal } : {}; }

  async configMap(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    if (!this.client) return undefined;
    try {
      const o = await this.client.get<KubeObject & { data?: Record<string, string>; binaryData?: Record<string, string> }>(core('configmaps', namespace), name, this.opts);
      const out: Record<string, string> = { ...(o.data ?? {}) };
      for (const [k, v] of Object.entries(o.binaryData ?? {})) out[k] = Buffer.from(v, 'base64').toString('latin1');
      return out;
    } catch (e) {
      if (notFound(e)) return undefined;
      throw e;
    }
  }

  async secret(namespace: string, name: string): Promise<Record<string, string> | undefined> {
    if (!this.client) return undefined;
    try {
      const o = await this.client.get<KubeObject & { data?: Record<string, string>; stringData?: Record<string, string> }>(core('secrets', namespace), name, this.opts);
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(o.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
      for (const [k, v] of Object.entries(o.stringData ?? {})) out[k] = v;
      return out;
    } catch (e) {
      if (notFound(e)) return undefined;
      throw e;
    }
  }

  async patchPodStatus(namespace: string, name: string, patch: Record<string, unknown>): Promise<boolean> {
    if (!this.client) return false;
    try {
      await this.client.patch(core('pods', namespace), name, 'merge', patch, { subresource: 'status', ...this.opts });
      return true;
    } catch (e) {
      if (notFound(e)) return false;
      throw e;
    }
  }

  /** DELETE with grace 0 and a uid precondition; a pod already gone is fine. */
  async finalDelete(pod: Pod): Promise<void> {
    if (!this.client) return;
    const ns = pod.metadata?.namespace ?? 'default';
    try {
      await this.client.delete(core('pods', ns), pod.metadata?.name ?? '', { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid ?? '' }, ...this.opts });
    } catch (e) {
      if (notFound(e) || (isApiError(e) && e.status.code === 409)) return;
      throw e;
    }
  }
}
