/**
 * The config maps and secrets behind configMap and secret volumes, read whole: the data as
 * bytes (binaryData and secret values decoded from base64 exactly) and whether the object is
 * immutable — an immutable source is read once and not followed afterwards, as Kubernetes
 * does not watch immutable config maps and secrets.
 */
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { RestClient } from '../../../client/rest-client.js';

export interface SourceObject { readonly data: Record<string, Buffer>; readonly immutable: boolean }

export interface SourceObjects {
  get(kind: 'configMap' | 'secret', namespace: string, name: string): Promise<SourceObject | undefined>;
}

type Raw = KubeObject & { data?: Record<string, string>; binaryData?: Record<string, string>; immutable?: boolean };

export function apiSourceObjects(client: RestClient, signal?: AbortSignal): SourceObjects {
  return {
    async get(kind, namespace, name) {
      let o: Raw;
      try {
        o = await client.get<Raw>({ group: '', version: 'v1', resource: kind === 'configMap' ? 'configmaps' : 'secrets', namespace }, name, signal ? { signal } : {});
      } catch (e) {
        if (isApiError(e) && e.status.code === 404) return undefined;
        throw e;
      }
      const data: Record<string, Buffer> = {};
      if (kind === 'configMap') {
        for (const [k, v] of Object.entries(o.data ?? {})) data[k] = Buffer.from(v, 'utf8');
        for (const [k, v] of Object.entries(o.binaryData ?? {})) data[k] = Buffer.from(v, 'base64');
      } else {
        for (const [k, v] of Object.entries(o.data ?? {})) data[k] = Buffer.from(v, 'base64');
      }
      return { data, immutable: o.immutable === true };
    },
  };
}
