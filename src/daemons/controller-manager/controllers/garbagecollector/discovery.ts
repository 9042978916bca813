/**
 * Server discovery for the controllers that act on "every resource" (garbage collector,
 * namespace deletion): asks the API server which resources it serves (/api/v1, /apis and each
 * group's preferred version), so disabled groups are skipped and added ones are found.
 */
import type { ResourceRef, RestClient } from '../../deps.js';

export interface ServedResource {
  ref: ResourceRef;
  kind: string;
  namespaced: boolean;
  verbs: readonly string[];
}

export interface ApiResource { name: string; kind: string; namespaced: boolean; verbs?: string[] }

/** GET of a discovery document as JSON, with the client's credentials (rate-limited). */
async function getJson<T>(client: RestClient, path: string, signal?: AbortSignal): Promise<T> {
  const res = await client.getPath(path, { accept: 'application/json', ...(signal ? { signal } : {}) });
  if (res.status >= 300) throw new Error(`discovery ${path}: the server responded with ${res.status}`);
  return JSON.parse(res.body.toString('utf8')) as T;
}

/**
 * The resources served at the preferred version of every group (core v1 included), top-level
 * only (no subresources). Groups whose document fails are reported in `failed`.
 */
export async function discoverResources(client: RestClient, signal?: AbortSignal): Promise<{ resources: ServedResource[]; failed: string[] }> {
  const versions: Array<{ group: string; version: string; path: string }> = [{ group: '', version: 'v1', path: '/api/v1' }];
  const groups = await getJson<{ groups?: Array<{ name: string; preferredVersion?: { version: string }; versions?: Array<{ version: string }> }> }>(client, '/apis', signal);
  for (const g of groups.groups ?? []) {
    const v = g.preferredVersion?.version ?? g.versions?.[0]?.version;
    if (v) versions.push({ group: g.name, version: v, path: `/apis/${g.name}/${v}` });
  }
  const resources: ServedResource[] = [];
  const failed: string[] = [];
  await Promise.all(versions.map(async (gv) => {
    try {
      const list = await getJson<{ resources?: ApiResource[] }>(client, gv.path, signal);
      for (const r of list.resources ?? []) {
        if (r.name.includes('/')) continue;
        resources.push({ ref: { group: gv.group, version: gv.version, resource: r.name }, kind: r.kind, namespaced: r.namespaced, verbs: r.verbs ?? [] });
      }
    } catch {
      failed.push(gv.group ? `${gv.group}/${gv.version}` : gv.version);
    }
  }));
  resources.sort((a, b) => `${a.ref.group}/${a.ref.resource}`.localeCompare(`${b.ref.group}/${b.ref.resource}`));
  return { resources, failed };
}

/** The group of an apiVersion ("apps/v1" → "apps", "v1" → ""). */
export function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

export function hasVerbs(r: ServedResource, ...verbs: string[]): boolean {
  return verbs.every((v) => r.verbs.includes(v));
}

/**
 * Every entry of one group version's discovery document, subresources included (e.g.
 * "replicasets/scale" with kind "Scale"). Throws when the document cannot be read.
 */
export async function groupVersionResources(client: RestClient, group: string, version: string, signal?: AbortSignal): Promise<ApiResource[]> {
  const list = await getJson<{ resources?: ApiResource[] }>(client, group ? `/apis/${group}/${version}` : `/api/${version}`, signal);
  return list.resources ?? [];
}
