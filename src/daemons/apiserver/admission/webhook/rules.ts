/**
 * Which webhooks a request calls by their rules (operation, group, version, resource,
 * subresource, scope), as Kubernetes' rule matcher decides, with matchPolicy Equivalent: a
 * webhook none of whose rules names the requested resource is still called when a rule names an
 * equivalent one (versions.ts), the rules in order and the first match winning.
 *
 * The answer depends only on the webhooks, the definition, the served version, the subresource
 * and the operation (a namespaced resource's requests always have a namespace), so it is worked
 * out once per combination and configuration generation and then found with a few map lookups
 * and no allocation: the write path asks on every write.
 */
import type { ResourceDefinition } from '../../../../api/resources/types.js';
import type { AdmissionOperation } from '../types.js';
import { equivalentTargets, targetOf, type Target } from './versions.js';
import { OP_BIT, type Rule, type Webhook } from './webhook.js';

export interface Invocation {
  readonly webhook: Webhook;
  /** The resource and kind the webhook is called for (the request's own or an equivalent one). */
  readonly target: Target;
}

export const NO_INVOCATIONS: readonly Invocation[] = Object.freeze([]);

const exactOrWildcard = (items: readonly string[], requested: string): boolean => {
  for (const i of items) if (i === '*' || i === requested) return true;
  return false;
};

/** The namespaces resource is cluster-scoped whatever namespace its requests name. */
function clusterScoped(def: ResourceDefinition): boolean {
  return !def.namespaced || (def.group === '' && def.plural === 'namespaces');
}

export function ruleMatches(rule: Rule, op: AdmissionOperation, t: Target, subresource: string): boolean {
  if (rule.scope === 'Namespaced' && clusterScoped(t.def)) return false;
  if (rule.scope === 'Cluster' && !clusterScoped(t.def)) return false;
  if ((rule.ops & OP_BIT[op]) === 0) return false;
  if (!exactOrWildcard(rule.groups, t.resource.group) || !exactOrWildcard(rule.versions, t.resource.version)) return false;
  for (const [res, sub] of rule.resources) {
    if ((res === '*' || res === t.resource.resource) && (sub === '*' || sub === subresource)) return true;
  }
  return false;
}

/** Whether any rule of the webhook matches the target. */
function anyRule(w: Webhook, op: AdmissionOperation, t: Target, subresource: string): boolean {
  for (const r of w.rules) if (ruleMatches(r, op, t, subresource)) return true;
  return false;
}

/** The webhook's invocation for a request, or undefined when no rule (nor an equivalent's) matches. */
export function invocationFor(w: Webhook, op: AdmissionOperation, requested: Target, subresource: string, equivalents: () => readonly Target[]): Invocation | undefined {
  if (anyRule(w, op, requested, subresource)) return { webhook: w, target: requested };
  if (!w.equivalent) return undefined;
  // Earlier rules first, then the equivalents in order, as Kubernetes honours them.
  for (const r of w.rules) {
    for (const t of equivalents()) if (ruleMatches(r, op, t, subresource)) return { webhook: w, target: t };
  }
  return undefined;
}

const OP_INDEX: Readonly<Record<AdmissionOperation, number>> = { CREATE: 0, UPDATE: 1, DELETE: 2, CONNECT: 3 };
type ByOperation = Array<readonly Invocation[] | undefined>;

/** Invocations per (definition, version, subresource, operation) for one generation of webhooks. */
export class RuleIndex {
  private generation = -1;
  private byDef = new WeakMap<ResourceDefinition, Map<string, Map<string, ByOperation>>>();

  constructor(private readonly served: (def: ResourceDefinition, version: string) => boolean) {}

  /**
   * The webhooks to call, in order, by rule; NO_INVOCATIONS when none. Subresources with their
   * own object (binding, eviction) are worked out per call, for the object's kind.
   */
  invocations(webhooks: readonly Webhook[], generation: number, op: AdmissionOperation, def: ResourceDefinition, version: string, subresource: string,
    object: Parameters<typeof targetOf>[3]): readonly Invocation[] {
    if (generation !== this.generation) {
      this.generation = generation;
      this.byDef = new WeakMap();
    }
    let byVersion = this.byDef.get(def);
    if (!byVersion) this.byDef.set(def, byVersion = new Map());
    let bySub = byVersion.get(version);
    if (!bySub) byVersion.set(version, bySub = new Map());
    let byOp = bySub.get(subresource);
    if (!byOp) bySub.set(subresource, byOp = [undefined, undefined, undefined, undefined]);
    const i = OP_INDEX[op];
    const known = byOp[i];
    if (known) return known;
    const requested = targetOf(def, version, subresource, object);
    let equivalents: readonly Target[] | undefined;
    const list: Invocation[] = [];
    for (const w of webhooks) {
      const inv = invocationFor(w, op, requested, subresource, () => (equivalents ??= equivalentTargets(def, version, subresource, this.served, object)));
      if (inv) list.push(inv);
    }
    const found = list.length ? list : NO_INVOCATIONS;
    // The kind of a Binding or an Eviction comes from its object: remembered only for stored-object kinds.
    if (requested.convertsObject || subresource === 'scale') byOp[i] = found;
    return found;
  }
}
