/**
 * --runtime-config: '<group>/<version>' (core: 'v1' or 'api/v1') toggles a version,
 * '<group>/<version>/<resource>' a resource; 'api/all' sets the default for everything.
 */
import type { ResourceDefinition } from '../../../api/resources/types.js';
import { allResources } from '../../../api/resources/registry.js';
export { compareVersions } from '../../../api/meta/version-priority.js';

/** Versions Kubernetes stopped serving by default (1.16) but that --runtime-config can still enable. */
const OFF_BY_DEFAULT: ReadonlySet<string> = new Set(['extensions/v1beta1']);

function parseFlag(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  const s = v.trim().toLowerCase();
  if (s === '' || s === 'true' || s === '1' || s === 't') return true;
  if (s === 'false' || s === '0' || s === 'f') return false;
  return undefined;
}

export class ApiEnablement {
  constructor(private readonly runtimeConfig: Readonly<Record<string, string>>) {}

  private lookup(keys: string[]): boolean | undefined {
    for (const k of keys) {
      const v = parseFlag(this.runtimeConfig[k]);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  versionEnabled(group: string, version: string): boolean {
    const keys = group ? [`${group}/${version}`, `apis/${group}/${version}`] : [version, `api/${version}`, `/${version}`];
    return this.lookup(keys) ?? this.lookup(['api/all']) ?? !OFF_BY_DEFAULT.has(`${group}/${version}`);
  }

  /** resourceEnabled's answers per definition and version (--runtime-config does not change). */
  private readonly answers = new WeakMap<ResourceDefinition, Map<string, boolean>>();

  /** Whether `def` is served at `version`; asked on every resource request, so answered once. */
  resourceEnabled(def: ResourceDefinition, version: string): boolean {
    let byVersion = this.answers.get(def);
    if (!byVersion) {
      byVersion = new Map();
      this.answers.set(def, byVersion);
    }
    let on = byVersion.get(version);
    if (on === undefined) {
      on = this.decideResource(def, version);
      byVersion.set(version, on);
    }
    return on;
  }

  private decideResource(def: ResourceDefinition, version: string): boolean {
    const keys = def.group ? [`${def.group}/${version}/${def.plural}`] : [`${version}/${def.plural}`, `api/${version}/${def.plural}`, `/${version}/${def.plural}`];
    const r = this.lookup(keys);
    if (r !== undefined) return r;
    return this.versionEnabled(def.group, version);
  }

  /** Served definitions of one group/version. */
  resourcesOf(group: string, version: string): ResourceDefinition[] {
    return allResources().filter((d) => d.group === group && d.versions.includes(version) && this.resourceEnabled(d, version));
  }
}
