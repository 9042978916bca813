/**
 * PodTolerationRestriction: on create, a pod gets its namespace's default tolerations
 * (annotation scheduler.alpha.kubernetes.io/defaultTolerations, else the configured `default`)
 * merged with its own; non-BestEffort pods also tolerate node memory pressure. On create and
 * update, the pod's tolerations must each fit the namespace's whitelist
 * (scheduler.alpha.kubernetes.io/tolerationsWhitelist, else the configured `whitelist`).
 * Configuration: podtolerationrestriction.admission.k8s.io/v1alpha1 Configuration { default, whitelist }.
 */
import { ApiError, errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { expectKind } from './config-file.js';
import { withNamespace } from './namespace-object.js';
import { podSpec, type PodSpecShape, type TolerationShape } from './pod-shape.js';
import { isPod, type AdmissionAttributes, type AdmissionContext, type AdmissionPlugin } from './types.js';

export const DEFAULT_TOLERATIONS_ANNOTATION = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const TOLERATIONS_WHITELIST_ANNOTATION = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';

export interface PodTolerationRestrictionConfig {
  readonly default: readonly TolerationShape[];
  readonly whitelist: readonly TolerationShape[];
}

export function parsePodTolerationRestrictionConfig(raw: unknown): PodTolerationRestrictionConfig {
  if (raw === undefined) return { default: [], whitelist: [] };
  const doc = expectKind(raw, ['podtolerationrestriction.admission.k8s.io/v1alpha1'], 'Configuration');
  const list = (k: string): TolerationShape[] => {
    const v = doc[k] ?? [];
    if (!Array.isArray(v)) throw new Error(`${k} must be a list of tolerations`);
    return v as TolerationShape[];
  };
  return { default: list('default'), whitelist: list('whitelist') };
}

const keyOf = (t: TolerationShape): string => `${t.key ?? ''}\u0000${t.effect ?? ''}`;

/** Same key and effect but another operator or value (Kubernetes' IsConflict). */
function isConflict(a: readonly TolerationShape[], b: readonly TolerationShape[]): boolean {
  return a.some((x) => b.some((y) => keyOf(x) === keyOf(y) && ((x.operator ?? 'Equal') !== (y.operator ?? 'Equal') || (x.value ?? '') !== (y.value ?? ''))));
}

/** Whether `ss` tolerates everything `t` tolerates. */
function isSuperset(ss: TolerationShape, t: TolerationShape): boolean {
  if ((ss.key ?? '') !== (t.key ?? '') && !((ss.key ?? '') === '' && ss.operator === 'Exists')) return false;
  if ((ss.effect ?? '') !== '' && ss.effect !== t.effect) return false;
  if ((ss.effect ?? '') === 'NoExecute' || (ss.effect ?? '') === '') {
    if (ss.tolerationSeconds !== undefined && (t.tolerationSeconds === undefined || t.tolerationSeconds > ss.tolerationSeconds)) return false;
  }
  if ((ss.operator ?? 'Equal') === 'Exists') return true;
  return (t.operator ?? 'Equal') === 'Equal' && (ss.value ?? '') === (t.value ?? '');
}

/** The union without tolerations another one already covers (Kubernetes' MergeTolerations: of equal ones, the first stays). */
function merge(first: readonly TolerationShape[], second: readonly TolerationShape[]): TolerationShape[] {
  const all = [...first, ...second];
  const merged: TolerationShape[] = [];
  all.forEach((t, i) => {
    if (merged.some((m) => isSuperset(m, t))) return;
    if (all.slice(i + 1).some((o) => JSON.stringify(o) !== JSON.stringify(t) && isSuperset(o, t))) return;
    merged.push(t);
  });
  return merged;
}

/** Kubernetes' Burstable/Guaranteed test: any container with a cpu or memory request or limit. */
function isBestEffort(spec: PodSpecShape): boolean {
  return ![...(spec.initContainers ?? []), ...(spec.containers ?? [])].some((c) =>
    ['cpu', 'memory'].some((r) => c.resources?.requests?.[r] !== undefined || c.resources?.limits?.[r] !== undefined));
}

const MEMORY_PRESSURE: TolerationShape = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

function annotationList(ns: KubeObject, key: string): TolerationShape[] | undefined {
  const v = ns.metadata?.annotations?.[key];
  if (v === undefined || v === '') return undefined;
  let parsed: unknown;
  try { parsed = JSON.parse(v); } catch (e) { throw errors.internal((e as Error).message); }
  if (!Array.isArray(parsed)) throw errors.internal(`json: cannot unmarshal ${typeof parsed} into Go value of type []v1.Toleration`);
  return parsed as TolerationShape[];
}

export function podTolerationRestriction(ctx: AdmissionContext): AdmissionPlugin {
  const config = (ctx.pluginConfigs?.get('PodTolerationRestriction') as PodTolerationRestrictionConfig | undefined) ?? parsePodTolerationRestrictionConfig(undefined);
  const namespace = (a: AdmissionAttributes, ns: KubeObject | undefined): KubeObject => {
    if (!ns) throw errors.notFound({ resource: 'namespaces', name: a.namespace });
    return ns;
  };
  return {
    name: 'PodTolerationRestriction',
    handles: (op, def, sub) => (op === 'CREATE' || op === 'UPDATE') && isPod(def) && sub === '',
    admit: (a) => withNamespace(ctx.store, a.namespace, (found) => {
      const ns = namespace(a, found);
      const spec = podSpec(a.object);
      let final = spec.tolerations ?? [];
      if (a.operation === 'CREATE') {
        const defaults = annotationList(ns, DEFAULT_TOLERATIONS_ANNOTATION) ?? config.default;
        if (defaults.length) {
          // Kubernetes answers this one with its plain error (500, no reason).
          if (final.length && isConflict(defaults, final)) throw new ApiError(500, '', 'namespace tolerations and pod tolerations conflict');
          final = merge(defaults, final);
        }
      }
      if (!isBestEffort(spec)) final = merge(final, [MEMORY_PRESSURE]);
      if (final.length) spec.tolerations = final;
    }),
    validate: (a) => withNamespace(ctx.store, a.namespace, (found) => {
      const ns = namespace(a, found);
      const tolerations = podSpec(a.object).tolerations ?? [];
      if (!tolerations.length) return;
      const own = annotationList(ns, TOLERATIONS_WHITELIST_ANNOTATION);
      const whitelist = own ?? config.whitelist;
      if (whitelist.length && !tolerations.every((t) => whitelist.some((w) => isSuperset(w, t)))) {
        // Kubernetes answers with its plain error too (500, no reason).
        throw new ApiError(500, '', `pod tolerations (possibly merged with namespace default tolerations) conflict with its ${own ? 'namespace' : 'cluster'} whitelist`);
      }
    }),
  };
}
