/**
 * --runtime-config: '<group>/<version>' (core: 'v1' or 'api/v1') toggles a version,
 * '<group>/<version>/<resource>' a resource; 'api/all' sets the default for everything.
 */
import type { ResourceDefinition } from '../../../api/resources/types.js';
import { allResources } from '../../../api/resources/registry.js';

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

/** Kubernetes version priority: GA (v2 > v1) before beta before alpha. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string): [number, number, number] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [-1, 0, 0];
    const stage = m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1;
    return [stage, Number(m[1]), Number(m[3] ?? 0)];
  };
  const pa = parse(a), pb = parse(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pb[i]! - pa[i]!;
  return a < b ? -1 : a > b ? 1 : 0;
}
