/**
 * The scale subresource of any target (Deployments, ReplicaSets, StatefulSets, replication
 * controllers, custom resources with a scale subresource): the target's kind is mapped to its
 * resource by the API server's discovery of its group/version (cached a minute), then
 * `<resource>/<name>/scale` is read and written as autoscaling/v1 Scale.
 */
import type { KubeObject } from '../../../../api/resources/types.js';
import type { RestClient, ResourceRef } from '../../deps.js';

type Obj = Record<string, unknown>;
const CACHE_MS = 60_000;

export interface ScaleTarget { apiVersion: string; kind: string; name: string }

export class ScaleClient {
  private readonly discovery = new Map<string, { at: number; resources: Obj[] }>();

  constructor(private readonly client: RestClient) {}

  /** group/version/plural of `kind` in `apiVersion`, when it has a scale subresource. */
  async resourceFor(namespace: string, target: ScaleTarget): Promise<ResourceRef> {
    const { ref, resources } = await this.mapping(namespace, target.apiVersion, target.kind);
    if (!resources.some((r) => r.name === `${ref.resource}/scale`)) throw new Error(`${ref.resource}.${ref.group} has no scale subresource`);
    return ref;
  }

  /** group/version/plural of `kind` in `apiVersion` (discovery). */
  async mapping(namespace: string, apiVersion: string, kind: string): Promise<{ ref: ResourceRef; resources: Obj[] }> {
    const target = { apiVersion, kind };
    const slash = target.apiVersion.indexOf('/');
    const group = slash < 0 ? '' : target.apiVersion.slice(0, slash);
    const version = slash < 0 ? target.apiVersion : target.apiVersion.slice(slash + 1);
    const key = `${group}/${version}`;
    let cached = this.discovery.get(key);
    if (!cached || Date.now() - cached.at > CACHE_MS || !cached.resources.some((r) => r.kind === target.kind)) {
      const r = await this.client.getPath(group ? `/apis/${group}/${version}` : `/api/${version}`, { accept: 'application/json' });
      if (r.status !== 200) throw new Error(`unable to get the API resources of ${key || 'v1'}: ${r.status}`);
      const list = JSON.parse(r.body.toString('utf8')) as { resources?: Obj[] };
      cached = { at: Date.now(), resources: list.resources ?? [] };
      this.discovery.set(key, cached);
    }
    const main = cached.resources.find((r) => r.kind === target.kind && !String(r.name).includes('/'));
    if (!main) throw new Error(`no matches for kind "${target.kind}" in group "${group}"`);
    return { ref: { group, version, resource: String(main.name), namespace }, resources: cached.resources };
  }

  get(ref: ResourceRef, name: string): Promise<KubeObject> {
    return this.client.get(ref, name, { subresource: 'scale' });
  }

  /** Writes spec.replicas on the scale read before (409 if it changed since). */
  update(ref: ResourceRef, scale: KubeObject, replicas: number): Promise<KubeObject> {
    return this.client.update(ref, { ...scale, spec: { ...(scale.spec as Obj | undefined), replicas } }, { subresource: 'scale' });
  }
}
