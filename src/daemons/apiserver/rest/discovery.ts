/**
 * Discovery: legacy (/api, /apis, /api/v1, /apis/G, /apis/G/V) and aggregated
 * (APIGroupDiscoveryList v2 / v2beta1, chosen from Accept and echoed in Content-Type).
 */
import type { ResourceDefinition } from '../../../api/resources/types.js';
import { allResources, GROUP_ORDER } from '../../../api/resources/registry.js';
import { ApiEnablement, compareVersions } from './enablement.js';

type Obj = Record<string, unknown>;

export interface GroupInfo { name: string; versions: string[] }

/**
 * A group served elsewhere (an extension API server behind an APIService): its versions,
 * preferred first, each with the APIResourceList `resources` the server's discovery last gave
 * (absent while unknown: aggregated discovery then lists the version as Stale, without resources).
 */
export interface ExternalGroup { name: string; versions: { version: string; resources?: Obj[] }[] }

function subresourceEntries(def: ResourceDefinition, version: string): Array<{ name: string; verbs: string[]; group?: string; version?: string; kind: string }> {
  const out: Array<{ name: string; verbs: string[]; group?: string; version?: string; kind: string }> = [];
  const sub = def.subresources ?? {};
  const extras = [...(sub.extra ?? [])];
  const entries: Array<{ name: string; verbs: string[]; kind?: { group: string; version: string; kind: string } }> = [];
  for (const e of extras) entries.push({ name: e.name, verbs: [...e.verbs], kind: e.kind });
  if (sub.status) entries.push({ name: 'status', verbs: ['get', 'patch', 'update'] });
  if (sub.scale) entries.push({ name: 'scale', verbs: ['get', 'patch', 'update'], kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' } });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const k = e.kind ?? { group: def.group, version, kind: def.kind };
    const item: { name: string; verbs: string[]; group?: string; version?: string; kind: string } = { name: e.name, verbs: e.verbs, kind: k.kind };
    if (k.group !== def.group || k.version !== version) { item.group = k.group; item.version = k.version; }
    out.push(item);
  }
  return out;
}

export class Discovery {
  /** Groups of extension API servers (the aggregator's), listed after the built-in ones. */
  private external: () => readonly ExternalGroup[] = () => [];

  constructor(private readonly enablement: ApiEnablement, private readonly serverAddress: () => string) {}

  setExternal(source: () => readonly ExternalGroup[]): void {
    this.external = source;
  }

  private externalGroups(): readonly ExternalGroup[] {
    const own = new Set(this.groups().map((g) => g.name));
    return this.external().filter((g) => !own.has(g.name) && g.versions.length > 0);
  }

  /** Non-core groups with their enabled versions, preferred first, in discovery order. */
  groups(): GroupInfo[] {
    const byGroup = new Map<string, Set<string>>();
    for (const d of allResources()) for (const v of d.versions) {
      if (!this.enablement.resourceEnabled(d, v)) continue;
      if (!byGroup.has(d.group)) byGroup.set(d.group, new Set());
      byGroup.get(d.group)!.add(v);
    }
    const names = [...byGroup.keys()].sort((a, b) => {
      const ia = GROUP_ORDER.indexOf(a), ib = GROUP_ORDER.indexOf(b);
      if (ia >= 0 && ib >= 0) return ia - ib;
      if (ia >= 0) return -1;
      if (ib >= 0) return 1;
      return a.localeCompare(b);
    });
    return names.map((name) => ({ name, versions: [...byGroup.get(name)!].sort(compareVersions) }));
  }

  coreVersions(): string[] {
    return this.groups().find((g) => g.name === '')?.versions ?? [];
  }

  apiVersions(): Obj {
    return { kind: 'APIVersions', versions: this.coreVersions(), serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: this.serverAddress() }] };
  }

  private apiGroup(g: GroupInfo): Obj {
    const versions = g.versions.map((v) => ({ groupVersion: `${g.name}/${v}`, version: v }));
    return { name: g.name, versions, preferredVersion: versions[0] };
  }

  apiGroupList(): Obj {
    const external = this.externalGroups().map((g) => this.apiGroup({ name: g.name, versions: g.versions.map((v) => v.version) }));
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...this.groups().filter((g) => g.name !== '').map((g) => this.apiGroup(g)), ...external] };
  }

  apiGroupOf(group: string): Obj | undefined {
    const g = this.groups().find((x) => x.name === group && group !== '')
      ?? this.externalGroups().filter((x) => x.name === group).map((x) => ({ name: x.name, versions: x.versions.map((v) => v.version) }))[0];
    return g ? { kind: 'APIGroup', apiVersion: 'v1', ...this.apiGroup(g) } : undefined;
  }

  apiResourceList(group: string, version: string): Obj | undefined {
    const defs = this.enablement.resourcesOf(group, version);
    if (!defs.length) return undefined;
    const resources: Obj[] = [];
    for (const d of [...defs].sort((a, b) => a.plural.localeCompare(b.plural))) {
      const r: Obj = { name: d.plural, singularName: d.singular, namespaced: d.namespaced, kind: d.kind, verbs: [...d.verbs] };
      if (d.shortNames?.length) r.shortNames = [...d.shortNames];
      if (d.categories?.length) r.categories = [...d.categories];
      resources.push(r);
      for (const s of subresourceEntries(d, version)) {
        const sr: Obj = { name: `${d.plural}/${s.name}`, singularName: '', namespaced: d.namespaced };
        if (s.group !== undefined) { sr.group = s.group; sr.version = s.version; }
        sr.kind = s.kind;
        sr.verbs = s.verbs;
        resources.push(sr);
      }
    }
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
  }

  /** Aggregated discovery for /api (core only) or /apis (every other group). */
  aggregated(core: boolean, discoveryVersion: 'v2' | 'v2beta1'): Obj {
    const items: Obj[] = this.groups().filter((g) => (g.name === '') === core).map((g) => ({
      metadata: { name: g.name, creationTimestamp: null },
      versions: g.versions.map((v) => ({
        version: v,
        resources: this.enablement.resourcesOf(g.name, v).sort((a, b) => a.plural.localeCompare(b.plural)).map((d) => {
          const r: Obj = {
            resource: d.plural,
            responseKind: { group: d.group, version: v, kind: d.kind },
            scope: d.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: d.singular,
            verbs: [...d.verbs],
          };
          if (d.shortNames?.length) r.shortNames = [...d.shortNames];
          if (d.categories?.length) r.categories = [...d.categories];
          const subs = subresourceEntries(d, v);
          if (subs.length) r.subresources = subs.map((s) => ({
            subresource: s.name,
            responseKind: { group: s.group ?? d.group, version: s.version ?? v, kind: s.kind },
            verbs: s.verbs,
          }));
          return r;
        }),
        freshness: 'Current',
      })),
    }));
    if (!core) for (const g of this.externalGroups()) items.push(externalDiscovery(g));
    return { kind: 'APIGroupDiscoveryList', apiVersion: `apidiscovery.k8s.io/${discoveryVersion}`, metadata: {}, items };
  }
}

/** An extension server's group in aggregated discovery, from its legacy APIResourceLists. */
function externalDiscovery(g: ExternalGroup): { metadata: Obj; versions: Obj[] } {
  return {
    metadata: { name: g.name, creationTimestamp: null },
    versions: g.versions.map((v) => {
      if (!v.resources) return { version: v.version, freshness: 'Stale' };
      const list = v.resources.filter((r) => typeof r.name === 'string');
      const mains = list.filter((r) => !(r.name as string).includes('/'));
      const resources = mains.map((r) => {
        const name = r.name as string;
        const out: Obj = {
          resource: name,
          responseKind: { group: typeof r.group === 'string' ? r.group : g.name, version: typeof r.version === 'string' ? r.version : v.version, kind: r.kind },
          scope: r.namespaced ? 'Namespaced' : 'Cluster',
          singularResource: r.singularName ?? '',
          verbs: r.verbs ?? [],
        };
        if (Array.isArray(r.shortNames) && r.shortNames.length) out.shortNames = r.shortNames;
        if (Array.isArray(r.categories) && r.categories.length) out.categories = r.categories;
        const subs = list.filter((s) => (s.name as string).startsWith(`${name}/`)).map((s) => ({
          subresource: (s.name as string).slice(name.length + 1),
          responseKind: { group: typeof s.group === 'string' ? s.group : g.name, version: typeof s.version === 'string' ? s.version : v.version, kind: s.kind },
          verbs: s.verbs ?? [],
        }));
        if (subs.length) out.subresources = subs;
        return out;
      });
      return { version: v.version, resources, freshness: 'Current' };
    }),
  };
}
