/**
 * PodNodeSelector: a pod created in a namespace gets the namespace's node selector (annotation
 * scheduler.alpha.kubernetes.io/node-selector, else the configured clusterDefaultNodeSelector)
 * merged into its own; a pod selector that contradicts it, or that strays outside the
 * namespace's configured whitelist, is refused. Configuration (file, Kubernetes' legacy form):
 *   podNodeSelectorPluginConfig: { clusterDefaultNodeSelector: "k=v,...", <namespace>: "k=v,..." }
 */
import { errors } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { isObject } from './config-file.js';
import { withNamespace } from './namespace-object.js';
import { podSpec } from './pod-shape.js';
import { isPod, type AdmissionAttributes, type AdmissionContext, type AdmissionPlugin } from './types.js';

export const NODE_SELECTOR_ANNOTATION = 'scheduler.alpha.kubernetes.io/node-selector';

export type PodNodeSelectorConfig = ReadonlyMap<string, Record<string, string>>;

/** "a=b,c=d" → { a: 'b', c: 'd' } (Kubernetes' ConvertSelectorToLabelsMap). */
export function selectorToMap(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (s.trim() === '') return out;
  for (const part of s.split(',')) {
    const kv = part.trim().split('=');
    if (kv.length !== 2) throw new Error(`invalid selector: ${part.trim()}`);
    out[kv[0]!.trim()] = kv[1]!.trim();
  }
  return out;
}

export function parsePodNodeSelectorConfig(raw: unknown): PodNodeSelectorConfig {
  const out = new Map<string, Record<string, string>>();
  if (raw === undefined) return out;
  const body = isObject(raw) ? raw['podNodeSelectorPluginConfig'] : undefined;
  if (body === undefined || body === null) return out;
  if (!isObject(body)) throw new Error('podNodeSelectorPluginConfig must map namespaces (and clusterDefaultNodeSelector) to selectors');
  for (const [k, v] of Object.entries(body)) {
    if (typeof v !== 'string') throw new Error(`podNodeSelectorPluginConfig.${k} must be a string`);
    out.set(k, selectorToMap(v));
  }
  return out;
}

const conflicts = (a: Record<string, string>, b: Record<string, string>): boolean => Object.keys(a).some((k) => k in b && b[k] !== a[k]);

export function podNodeSelector(ctx: AdmissionContext): AdmissionPlugin {
  const config = (ctx.pluginConfigs?.get('PodNodeSelector') as PodNodeSelectorConfig | undefined) ?? new Map();
  const nsSelector = (ns: KubeObject | undefined, name: string): Record<string, string> => {
    if (!ns) throw errors.notFound({ resource: 'namespaces', name });
    const ann = ns.metadata?.annotations?.[NODE_SELECTOR_ANNOTATION];
    if (ann !== undefined) {
      try { return selectorToMap(ann); } catch (e) { throw errors.internal((e as Error).message); }
    }
    return config.get('clusterDefaultNodeSelector') ?? {};
  };
  const forbid = (a: AdmissionAttributes, why: string): never => {
    throw errors.admissionForbidden({ resource: 'pods', name: a.object?.metadata?.name ?? a.name }, why);
  };
  const check = (a: AdmissionAttributes, mutate: boolean) => (ns: KubeObject | undefined): void => {
    const fromNs = nsSelector(ns, a.namespace);
    const spec = podSpec(a.object);
    const own = spec.nodeSelector ?? {};
    if (conflicts(fromNs, own)) forbid(a, 'pod node label selector conflicts with its namespace node label selector');
    if (mutate) {
      const merged = { ...fromNs, ...own };
      if (Object.keys(merged).length) spec.nodeSelector = merged;
      return;
    }
    const whitelist = config.get(a.namespace) ?? {};
    if (Object.keys(whitelist).length && Object.entries(own).some(([k, v]) => whitelist[k] !== v)) {
      forbid(a, 'pod node label selector labels conflict with its namespace whitelist');
    }
  };
  return {
    name: 'PodNodeSelector',
    handles: (op, def, sub) => op === 'CREATE' && isPod(def) && sub === '',
    admit: (a) => withNamespace(ctx.store, a.namespace, check(a, true)),
    validate: (a) => withNamespace(ctx.store, a.namespace, check(a, false)),
  };
}
