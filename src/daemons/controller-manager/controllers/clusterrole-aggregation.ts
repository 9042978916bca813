/**
 * The ClusterRole aggregation controller: a ClusterRole with an aggregationRule gets as its rules
 * the union of the rules of every other ClusterRole one of its clusterRoleSelectors matches.
 * The order is Kubernetes': selectors in order, the matched roles of each by name, each role's
 * rules in order; a rule equal to one already taken is skipped.
 *
 * Keys are names. Roles depend on each other through labels we cannot index cheaply, so any
 * ClusterRole added, changed or deleted queues every aggregating role (there are few). A sync
 * reads only the cache and writes only when the union differs from the role's rules: an update
 * carrying the cached resourceVersion (a 409 retries the key with backoff, and the change that
 * caused it queues the role again). A selector that does not parse fails the sync (retried with
 * backoff).
 *
 * Decision: Kubernetes writes with a server-side apply (field manager
 * clusterrole-aggregation-controller) and falls back to this update; we always update.
 */
import { labelSelectorFromObject, type LabelSelectorObject } from '../../../api/meta/label-selector.js';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Controller, ControllerContext } from '../controller-registry.js';
import { WorkQueue, type ResourceRef, type RestClient, type SharedIndexInformer } from '../deps.js';

const CLUSTER_ROLES: ResourceRef = { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'clusterroles' };
/** Kubernetes runs five workers. */
const WORKERS = 5;

interface AggregationRule { clusterRoleSelectors?: LabelSelectorObject[] }
type PolicyRule = Record<string, unknown>;

const RULE_FIELDS = ['verbs', 'apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'] as const;

/** A rule's identity: its five lists in order, a missing list the same as an empty one (Kubernetes' semantic equality). */
function ruleKey(rule: PolicyRule): string {
  return JSON.stringify(RULE_FIELDS.map((f) => (Array.isArray(rule[f]) ? rule[f] : [])));
}

function aggregationRuleOf(role: KubeObject): AggregationRule | undefined {
  const r = role.aggregationRule;
  return r && typeof r === 'object' ? (r as AggregationRule) : undefined;
}

function rulesOf(role: KubeObject): PolicyRule[] {
  return Array.isArray(role.rules) ? (role.rules as PolicyRule[]) : [];
}

const byName = (a: KubeObject, b: KubeObject): number => {
  const x = a.metadata?.name ?? ''; const y = b.metadata?.name ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
};

/** The aggregated rules of `role` over `all` roles (throws a 400 ApiError on a bad selector). */
export function aggregatedRules(role: KubeObject, all: readonly KubeObject[]): PolicyRule[] {
  const out: PolicyRule[] = [];
  const seen = new Set<string>();
  for (const sel of aggregationRuleOf(role)?.clusterRoleSelectors ?? []) {
    const selector = labelSelectorFromObject(sel);
    const matched = all.filter((r) => r.metadata?.name !== role.metadata?.name && selector.matches(r.metadata?.labels)).sort(byName);
    for (const r of matched) {
      for (const rule of rulesOf(r)) {
        const key = ruleKey(rule);
        if (seen.has(key)) continue;
        seen.add(key);
        out.push(rule);
      }
    }
  }
  return out;
}

export class ClusterRoleAggregationController implements Controller {
  readonly name = 'clusterrole-aggregation';
  private roles!: SharedIndexInformer;
  private client!: RestClient;
  private queue!: WorkQueue;

  async run(ctx: ControllerContext): Promise<void> {
    this.client = ctx.client;
    this.queue = new WorkQueue({ name: this.name, log: ctx.log });
    this.roles = ctx.informers.informerFor(CLUSTER_ROLES);
    const all = (): void => this.enqueueAggregating();
    this.roles.addEventHandler({ onAdd: all, onUpdate: all, onDelete: all });
    ctx.informers.start(ctx.signal);
    if (!(await this.roles.waitForSync(ctx.signal))) return;
    await this.queue.runWorkers(WORKERS, (key) => this.sync(key), ctx.signal);
  }

  private enqueueAggregating(): void {
    for (const r of this.roles.indexer.list()) if (aggregationRuleOf(r)) this.queue.add(r.metadata?.name ?? '');
  }

  async sync(name: string): Promise<void> {
    const role = this.roles.indexer.getByKey(name);
    if (!role || !aggregationRuleOf(role)) return;
    const rules = aggregatedRules(role, this.roles.indexer.list());
    const current = rulesOf(role);
    if (rules.length === current.length && rules.every((r, i) => ruleKey(r) === ruleKey(current[i] ?? {}))) return;
    try {
      await this.client.update(CLUSTER_ROLES, { ...role, rules: structuredClone(rules) });
    } catch (e) {
      // Deleted meanwhile: nothing left to aggregate into.
      if (isApiError(e) && e.code === 404) return;
      throw e;
    }
  }
}

export function newClusterRoleAggregationController(): Controller {
  return new ClusterRoleAggregationController();
}
