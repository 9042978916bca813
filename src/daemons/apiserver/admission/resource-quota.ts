/**
 * ResourceQuota admission: a namespaced write that raises what its namespace uses of a quota is
 * refused when the quota's hard limit would be passed, and otherwise charged to the quota.
 *
 * - Creates of every namespaced resource count (`count/<resource>` and the legacy names), updates
 *   of services and claims count their growth (node ports, load balancers, storage); see
 *   src/api/quota/usage.ts for what each object uses and which quotas cover it (scopes).
 * - A quota whose status the resourcequota controller has not filled in yet refuses:
 *   `status unknown for quota: q, resources: pods`.
 * - A pod must state each compute resource a covering quota limits:
 *   `failed quota: q: must specify limits.cpu for: c; requests.memory for: c`.
 * - Over the limit: `exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`.
 * - Otherwise every quota concerned gets its new status.used before the object is stored, by a
 *   compare-and-swap on the quota, so two writes cannot both take the last unit; a lost swap
 *   reads the quotas again (a few times, then 409 Conflict). A dry run charges nothing.
 *
 * As in Kubernetes, a write that fails after this step (e.g. the name exists) leaves the quota
 * charged until the controller next recounts it.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import type { KubeObject, ResourceDefinition } from '../../../api/resources/types.js';
import { amount, formatAmount, quotaCovers, usageOf, type Usage } from '../../../api/quota/usage.js';
import type { AdmissionAttributes, AdmissionContext, AdmissionPlugin } from './types.js';

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_ATTEMPTS = 8;

/** Compute resources a pod's containers must each state when a quota limits them. */
const MUST_SPECIFY: Readonly<Record<string, { field: 'requests' | 'limits'; resource: string }>> = {
  cpu: { field: 'requests', resource: 'cpu' }, memory: { field: 'requests', resource: 'memory' },
  'requests.cpu': { field: 'requests', resource: 'cpu' }, 'requests.memory': { field: 'requests', resource: 'memory' },
  'limits.cpu': { field: 'limits', resource: 'cpu' }, 'limits.memory': { field: 'limits', resource: 'memory' },
};

const counts = (op: string, def: ResourceDefinition): boolean =>
  op === 'CREATE' || (def.group === '' && (def.plural === 'services' || def.plural === 'persistentvolumeclaims'));

/** What the write adds: the new object's usage less the old one's, positive parts only. */
function growth(a: AdmissionAttributes): Usage {
  const now = usageOf(a.def.group, a.def.plural, a.object!);
  if (!a.oldObject) return now;
  const before = usageOf(a.def.group, a.def.plural, a.oldObject);
  const out: Usage = {};
  for (const [k, v] of Object.entries(now)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

function missingSpecs(pod: KubeObject, hard: readonly string[]): string[] {
  const spec = isDict(pod.spec) ? pod.spec : {};
  const containers = [...(Array.isArray(spec.initContainers) ? spec.initContainers : []), ...(Array.isArray(spec.containers) ? spec.containers : [])].filter(isDict);
  const out: string[] = [];
  for (const key of [...hard].sort()) {
    const need = MUST_SPECIFY[key];
    if (!need) continue;
    const lacking = containers.filter((c) => {
      const r = isDict(c.resources) && isDict(c.resources[need.field]) ? c.resources[need.field] as Dict : {};
      return r[need.resource] === undefined;
    }).map((c) => String(c.name));
    if (lacking.length) out.push(`${key} for: ${lacking.join(',')}`);
  }
  return out;
}

interface Charge { quota: KubeObject; used: Record<string, string> }

/** The new status.used of each quota the write concerns; throws the 403 that refuses it. */
function charges(a: AdmissionAttributes, quotas: readonly KubeObject[], add: Usage): Charge[] {
  const forbid = (why: string): ApiError => errors.admissionForbidden({ group: a.def.group, resource: a.def.plural, name: a.name }, why);
  const out: Charge[] = [];
  const isPod = a.def.group === '' && a.def.plural === 'pods';
  for (const q of [...quotas].sort((x, y) => String(x.metadata?.name).localeCompare(String(y.metadata?.name)))) {
    const name = String(q.metadata?.name ?? '');
    if (!quotaCovers(q, a.def.group, a.def.plural, a.object!)) continue;
    const specHard = isDict(q.spec) && isDict(q.spec.hard) ? q.spec.hard : {};
    const status = isDict(q.status) ? q.status : {};
    const hard = isDict(status.hard) ? status.hard : undefined;
    const used = isDict(status.used) ? status.used : {};
    const keys = Object.keys(specHard);
    if (isPod && a.operation === 'CREATE') {
      const missing = missingSpecs(a.object!, keys);
      if (missing.length) throw forbid(`failed quota: ${name}: must specify ${missing.join('; ')}`);
    }
    const touched = keys.filter((k) => (add[k] ?? 0) > 0);
    if (!touched.length) continue;
    const unknown = touched.filter((k) => !hard || hard[k] === undefined);
    if (unknown.length) throw forbid(`status unknown for quota: ${name}, resources: ${unknown.sort().join(', ')}`);
    const over = touched.filter((k) => amount(used[k]) + add[k]! > amount(hard![k]) + 1e-9).sort();
    if (over.length) {
      const list = (f: (k: string) => string): string => over.map((k) => `${k}=${f(k)}`).join(',');
      throw forbid(`exceeded quota: ${name}, requested: ${list((k) => formatAmount(k, add[k]!))}, used: ${list((k) => formatAmount(k, amount(used[k])))}, limited: ${list((k) => String(hard![k]))}`);
    }
    const next: Record<string, string> = {};
    for (const [k, v] of Object.entries(used)) next[k] = String(v);
    for (const k of touched) next[k] = formatAmount(k, amount(used[k]) + add[k]!);
    out.push({ quota: q, used: next });
  }
  return out;
}

export function resourceQuota(ctx: AdmissionContext): AdmissionPlugin {
  const quotasIn = async (namespace: string): Promise<KubeObject[]> =>
    (await ctx.store.list({ resource: 'resourcequotas', group: '', namespace, resourceVersion: '0' })).items;
  return {
    name: 'ResourceQuota',
    handles: (op, def, sub) => sub === '' && def.namespaced && (op === 'CREATE' || op === 'UPDATE') && counts(op, def),
    async validate(a) {
      if (!a.object) return;
      // Most namespaces have no quota: the watch cache says so at once, as the list below
      // (resourceVersion 0, any cached state) would after building an empty page.
      if (ctx.store.peekCount({ group: '', resource: 'resourcequotas', namespace: a.namespace }) === 0) return;
      let quotas = await quotasIn(a.namespace);
      if (!quotas.length) return;
      const add = growth(a);
      if (!Object.keys(add).length) return;
      const charged = new Set<string>();
      for (let attempt = 1; ; attempt++) {
        const todo = charges(a, quotas.filter((q) => !charged.has(String(q.metadata?.name))), add);
        if (a.dryRun || !todo.length || !ctx.chargeQuota) return;
        try {
          for (const c of todo) {
            await ctx.chargeQuota(c.quota, c.used);
            charged.add(String(c.quota.metadata?.name));
          }
          return;
        } catch (e) {
          if (!(e instanceof ApiError && e.code === 409) || attempt >= MAX_ATTEMPTS) throw e;
          // Someone else charged a quota meanwhile: count the rest again from what is stored now.
          quotas = (await ctx.store.list({ resource: 'resourcequotas', group: '', namespace: a.namespace })).items;
        }
      }
    },
  };
}
