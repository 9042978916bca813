/**
 * The RBAC bootstrap policy reconciled at start, as Kubernetes' rbac/bootstrap-roles post-start
 * hook: every default ClusterRole, ClusterRoleBinding, Role and RoleBinding
 * (src/auth/authorizers/rbac/bootstrap) is created when missing and, unless annotated
 * autoupdate "false", given back what it lacks (reconcile.ts says what that is).
 *
 * Like Kubernetes it runs whenever the rbac.authorization.k8s.io/v1 API is served, whatever
 * --authorization-mode says (the objects are there when someone turns RBAC on later).
 *
 * Several API servers on one store: each write is a create (AlreadyExists: someone else made it)
 * or an update carrying the resourceVersion it was computed from (409: someone else changed it);
 * either way the object is read again and reconciled anew, which finds nothing left to do once
 * the other writer has added the same things. So one writer wins and nobody fights.
 *
 * /healthz and /readyz fail (check "poststarthook/rbac/bootstrap-roles", Kubernetes' name)
 * until a pass has completed. A pass that fails is retried with backoff until the server stops.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../api/meta/status.js';
import { findResource } from '../../api/resources/registry.js';
import type { KubeObject, ResourceDefinition } from '../../api/resources/types.js';
import { bootstrapPolicy } from '../../auth/authorizers/rbac/bootstrap/policy.js';
import { reconcileBinding, reconcileRole, type ReconcileResult } from '../../auth/authorizers/rbac/bootstrap/reconcile.js';
import type { ApiserverConfig } from '../../flags/apiserver.js';
import { cloneJson } from '../../util/json-clone.js';
import type { HealthChecks } from './health.js';
import type { ResourceRegistry } from './registry/resource-registry.js';
import { ApiEnablement } from './rest/enablement.js';

export const RBAC_BOOTSTRAP_CHECK = 'poststarthook/rbac/bootstrap-roles';

const GROUP = 'rbac.authorization.k8s.io';
/** Reads and writes of one object before giving up on it for this pass (each retry follows another writer's change). */
const MAX_OBJECT_ATTEMPTS = 10;
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;

export interface RbacBootstrap {
  /** Resolves when a pass has completed, or when stopped first (never rejects). */
  readonly done: Promise<void>;
  /** Adds the readiness check (nothing when the rbac API is not served). */
  addHealthChecks(health: HealthChecks): void;
  /** Ends retrying; resolves once a pass under way has finished (before the store closes). */
  stop(): Promise<void>;
}

export interface PassCounts { created: number; updated: number; recreated: number; protected: number; unchanged: number }

type Outcome = 'created' | 'updated' | 'recreated' | 'protected' | 'unchanged';

async function reconcileOne(registry: ResourceRegistry, def: ResourceDefinition, expected: KubeObject,
  reconcile: (e: KubeObject, s: KubeObject | undefined) => ReconcileResult): Promise<Outcome> {
  const ns = expected.metadata?.namespace ?? '';
  const name = expected.metadata?.name ?? '';
  for (let attempt = 1; ; attempt++) {
    let stored: KubeObject | undefined;
    try {
      stored = await registry.get(def, ns, name);
    } catch (e) {
      if (!isApiError(e, 'NotFound')) throw e;
    }
    const r = reconcile(expected, stored);
    try {
      switch (r.operation) {
        case 'none':
          return r.protected ? 'protected' : 'unchanged';
        case 'create':
          await registry.create(def, cloneJson(r.object), { internal: true, inputOwned: true });
          return 'created';
        case 'update':
          // r.object carries stored's resourceVersion: a change in between is a 409, read again.
          await registry.update(def, ns, name, () => r.object, { internal: true, allowCreate: false });
          return 'updated';
        case 'recreate': {
          const m = stored?.metadata ?? {};
          await registry.delete(def, ns, name, { internal: true, preconditions: { uid: m.uid ?? '', resourceVersion: m.resourceVersion ?? '' } });
          await registry.create(def, cloneJson(r.object), { internal: true, inputOwned: true });
          return 'recreated';
        }
      }
    } catch (e) {
      // Another writer got there first: reconcile against what it wrote.
      const raced = isApiError(e, 'AlreadyExists') || isApiError(e, 'Conflict') || isApiError(e, 'NotFound');
      if (!raced || attempt >= MAX_OBJECT_ATTEMPTS) throw e;
    }
  }
}

/** One pass over the whole policy; throws when any object could not be reconciled. */
export async function reconcileBootstrapPolicy(registry: ResourceRegistry, log: Logger): Promise<PassCounts> {
  const policy = bootstrapPolicy();
  const counts: PassCounts = { created: 0, updated: 0, recreated: 0, protected: 0, unchanged: 0 };
  const failures: string[] = [];
  const kinds: Array<[string, KubeObject[], typeof reconcileRole]> = [
    ['clusterroles', policy.clusterRoles, reconcileRole],
    ['clusterrolebindings', policy.clusterRoleBindings, reconcileBinding],
    ['roles', policy.roles, reconcileRole],
    ['rolebindings', policy.roleBindings, reconcileBinding],
  ];
  // Kinds in order (roles before the bindings naming them); the objects of one kind at once.
  for (const [plural, objects, reconcile] of kinds) {
    const def = findResource(GROUP, 'v1', plural);
    if (!def) throw new Error(`${plural}.${GROUP} is not a known resource`);
    await Promise.all(objects.map(async (o) => {
      try {
        const outcome = await reconcileOne(registry, def, o, reconcile);
        counts[outcome]++;
        if (outcome === 'protected') log.info({ resource: plural, name: o.metadata?.name }, 'bootstrap object has autoupdate "false": left as it is');
      } catch (e) {
        failures.push(`${plural} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}: ${(e as Error).message}`);
      }
    }));
  }
  if (failures.length) throw new Error(`unable to reconcile ${failures.length} object(s): ${failures.slice(0, 3).join('; ')}`);
  return counts;
}

/** Whether rbac.authorization.k8s.io/v1 is served (--runtime-config). */
export function rbacApiServed(config: Pick<ApiserverConfig, 'runtimeConfig'>): boolean {
  return new ApiEnablement(config.runtimeConfig).versionEnabled(GROUP, 'v1');
}

/** Starts the reconciliation in the background (the store and the REST layer are open). */
export function startRbacBootstrap(config: Pick<ApiserverConfig, 'runtimeConfig'>, registry: ResourceRegistry, log: Logger): RbacBootstrap {
  const served = rbacApiServed(config);
  const abort = new AbortController();
  let finished = !served;
  let lastError = 'not finished yet';
  const blog = log.child({ component: 'rbac-bootstrap' });
  const run = async (): Promise<void> => {
    let delay = FIRST_RETRY_MS;
    while (!abort.signal.aborted) {
      const started = performance.now();
      try {
        const counts = await reconcileBootstrapPolicy(registry, blog);
        finished = true;
        blog.info({ ...counts, ms: Math.round(performance.now() - started) }, 'RBAC bootstrap policy reconciled');
        return;
      } catch (e) {
        if (abort.signal.aborted) return;
        lastError = (e as Error).message;
        blog.warn({ err: lastError, retryInMs: delay }, 'RBAC bootstrap policy: pass failed, retrying');
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        abort.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
      });
      delay = Math.min(delay * 2, MAX_RETRY_MS);
    }
  };
  const done = served ? run() : Promise.resolve();
  return {
    done,
    addHealthChecks(health: HealthChecks): void {
      if (!served) return;
      health.add({ name: RBAC_BOOTSTRAP_CHECK, check: () => { if (!finished) throw new Error(lastError); } }, ['healthz', 'readyz']);
    },
    async stop(): Promise<void> { abort.abort(); await done; },
  };
}
